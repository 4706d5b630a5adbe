package worker

import (
	"strings"
	"unicode"

	"shelldon/contracts"
)

// DraftOf is what the owner may see of a reply the model is still
// writing, partial: what [ParseReply] would make the payload of it, and
// never more. No reasoning (a <think> block, closed or not, or the start
// of its tag at the end), no THOUGHT: or FACE: line, nothing of an ops
// block (closed or still open, decodable or not), and a last line still
// being written held back while it could become one of those: while it
// is the start of "THOUGHT:", "FACE:" or a fence, or a fence whose info
// string may not be complete. Empty when nothing may be seen yet.
func DraftOf(partial string) string {
	text := contracts.WithoutThinking(strings.ReplaceAll(partial, "\r\n", "\n"))
	text = contracts.WithoutTagStart(text, contracts.ThinkOpen)
	lines := strings.Split(text, "\n")
	if mayBecomeHidden(lines[len(lines)-1]) {
		lines = lines[:len(lines)-1]
	}
	p := replyParser{lines: lines, draft: true}
	p.scan()
	return p.joined()
}

// mayBecomeHidden reports whether a line still being written may yet
// turn out a control line or an ops block's fence.
func mayBecomeHidden(line string) bool {
	started := strings.TrimLeftFunc(line, unicode.IsSpace)
	if countLeadingBackticks(started) >= minFenceLength {
		return true // its info string may go on to say "ops"
	}
	for _, hidden := range []string{thoughtPrefix, facePrefix, strings.Repeat(string(fenceBacktick), minFenceLength)} {
		if len(started) < len(hidden) && contracts.HasPrefixFoldASCII(hidden, started) {
			return true
		}
	}
	return false
}
