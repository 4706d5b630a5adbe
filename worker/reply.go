package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"shelldon/contracts"
	"shelldon/policy"
)

// FaceSet is what the parser needs of the face registry.
type FaceSet interface {
	// Resolve maps a model's pick to a face; an unknown or empty pick gets
	// the default reply face with known false.
	Resolve(pick string) (name, glyphs string, known bool)
}

// MaxThoughtRunes caps the THOUGHT: caption, which has one strip of the panel.
const MaxThoughtRunes = 120

// emptyPayload stands in for a reply that had nothing left for the owner,
// so a turn always answers with something visible.
const emptyPayload = "…"

const (
	thoughtPrefix  = "THOUGHT:"
	facePrefix     = "FACE:"
	opsInfo        = "ops"
	fenceBacktick  = '`'
	minFenceLength = 3
)

// ParseReply turns a model's final text into a turn result: the payload
// for the owner, the ops of its ```ops blocks, the THOUGHT: caption and
// the FACE: pick resolved through faces (which must not be nil).
//
// Reasoning in <think> blocks is removed before anything else is looked
// at, so nothing the model thought privately can become an op, a caption
// or part of the reply. An ops block that does not decode is rejected
// whole and left in the payload as written, with a note saying why, so a
// malformed proposal is seen rather than silently lost. Lines inside any
// fenced block are never taken as THOUGHT: or FACE: lines.
func ParseReply(raw string, faces FaceSet) contracts.Result {
	text := contracts.WithoutThinking(strings.ReplaceAll(raw, "\r\n", "\n"))
	p := replyParser{lines: strings.Split(text, "\n")}
	p.scan()

	name, _, known := faces.Resolve(p.facePick)
	if p.facePick != "" && !known {
		p.notes = append(p.notes, fmt.Sprintf("unknown face %q; using %s", p.facePick, name))
	}
	payload := p.payload()
	if err := policy.CheckOps(p.ops); err != nil {
		// Refused whole, and said where the owner reads it and the
		// model will, in the history.
		p.ops = nil
		p.notes = append(p.notes, err.Error())
		payload = contracts.WithRefusedOps(payload, err)
	}
	return contracts.Result{
		OK:      true,
		Payload: payload,
		Ops:     p.ops,
		Thought: capRunes(p.thought, MaxThoughtRunes),
		Face:    name,
		Notes:   p.notes,
	}
}

// payloadLine is a line that stays in the payload. Verbatim lines belong
// to a fenced block and are kept exactly, blank runs included.
type payloadLine struct {
	text     string
	verbatim bool
}

// replyParser walks the lines of a reply once its thinking is gone.
type replyParser struct {
	lines []string
	// draft reads a reply still being written (DraftOf): every ops
	// block is left out, decoded or not, closed or not.
	draft    bool
	kept     []payloadLine
	ops      []contracts.Op
	notes    []string
	thought  string
	facePick string
}

func (p *replyParser) scan() {
	for i := 0; i < len(p.lines); {
		line := p.lines[i]
		if ticks, info, ok := fenceOpener(line); ok {
			i = p.fencedBlock(i, ticks, info)
			continue
		}
		if value, ok := controlValue(line, thoughtPrefix); ok {
			p.thought = value
		} else if value, ok := controlValue(line, facePrefix); ok {
			p.facePick = value
		} else {
			p.kept = append(p.kept, payloadLine{text: line})
		}
		i++
	}
}

// fencedBlock handles the block whose opening fence is at line start and
// returns the index of the first line after it. A block with no closing
// fence runs to the end of the reply, as in Markdown.
func (p *replyParser) fencedBlock(start, ticks int, info string) (next int) {
	end := len(p.lines)
	closed := false
	for j := start + 1; j < len(p.lines); j++ {
		if isFenceCloser(p.lines[j], ticks) {
			end, closed = j, true
			break
		}
	}
	next = end
	if closed {
		next = end + 1
	}
	if isOpsInfo(info) && p.draft {
		return next
	}
	if isOpsInfo(info) {
		ops, err := decodeOpsBlock(p.lines[start+1:end], closed)
		if err == nil {
			p.ops = append(p.ops, ops...)
			return next
		}
		p.notes = append(p.notes, "ops block rejected: "+err.Error())
	}
	for _, line := range p.lines[start:next] {
		p.kept = append(p.kept, payloadLine{text: line, verbatim: true})
	}
	return next
}

// fenceOpener reports whether line opens a fenced block, with the length
// of its backtick run and its info string ("ops", "python").
func fenceOpener(line string) (ticks int, info string, ok bool) {
	trimmed := strings.TrimLeftFunc(line, unicode.IsSpace)
	ticks = countLeadingBackticks(trimmed)
	if ticks < minFenceLength {
		return 0, "", false
	}
	return ticks, strings.TrimSpace(trimmed[ticks:]), true
}

// isFenceCloser reports whether line closes a block opened with ticks
// backticks: nothing but a backtick run at least as long.
func isFenceCloser(line string, ticks int) bool {
	trimmed := strings.TrimSpace(line)
	n := countLeadingBackticks(trimmed)
	return n >= ticks && n == len(trimmed)
}

func countLeadingBackticks(s string) int {
	n := 0
	for n < len(s) && s[n] == fenceBacktick {
		n++
	}
	return n
}

// isOpsInfo reports whether a fence's info string marks an ops block:
// "ops", or "ops" followed by more words such as "ops json".
func isOpsInfo(info string) bool {
	fields := strings.Fields(info)
	return len(fields) > 0 && strings.EqualFold(fields[0], opsInfo)
}

// controlValue reports whether line is a control line with prefix (any
// case, leading blanks allowed) and returns its trimmed value.
func controlValue(line, prefix string) (string, bool) {
	trimmed := strings.TrimLeftFunc(line, unicode.IsSpace)
	if !contracts.HasPrefixFoldASCII(trimmed, prefix) {
		return "", false
	}
	return strings.TrimSpace(trimmed[len(prefix):]), true
}

// errUnterminatedOps is why an ops fence that never closes is rejected:
// where the JSON was meant to end cannot be known.
var errUnterminatedOps = errors.New("unterminated fence")

// decodeOpsBlock decodes the lines between an ops block's fences: a JSON
// array of ops or a single op. Any one bad op rejects the whole block,
// because taking part of a proposal the model got wrong could apply half
// of a change. An empty block proposes nothing and is not an error.
func decodeOpsBlock(content []string, closed bool) ([]contracts.Op, error) {
	if !closed {
		return nil, errUnterminatedOps
	}
	body := strings.TrimSpace(strings.Join(content, "\n"))
	var raws []json.RawMessage
	switch {
	case body == "":
		return nil, nil
	case body[0] == '[':
		if err := json.Unmarshal([]byte(body), &raws); err != nil {
			return nil, fmt.Errorf("not a JSON array of ops: %w", err)
		}
	case body[0] == '{':
		raws = []json.RawMessage{json.RawMessage(body)}
	default:
		return nil, errors.New("not a JSON array or object")
	}
	ops := make([]contracts.Op, 0, len(raws))
	for i, raw := range raws {
		var op contracts.Op
		if err := op.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("op %d: %w", i+1, err)
		}
		if name := op.Body.OpName(); !slices.Contains(contracts.ModelOps, name) {
			return nil, fmt.Errorf("op %d: %q is not an op the model may propose", i+1, name)
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// payload is the kept lines joined ([replyParser.joined]), or a stand-in
// when nothing is left of them.
func (p *replyParser) payload() string {
	if out := p.joined(); out != "" {
		return out
	}
	return emptyPayload
}

// joined joins the kept lines, collapsing each run of blank lines outside
// fenced blocks (where removed lines leave gaps) into one blank line.
func (p *replyParser) joined() string {
	var b strings.Builder
	blankRun := 0
	for i, line := range p.kept {
		if !line.verbatim && strings.TrimSpace(line.text) == "" {
			blankRun++
			if blankRun > 1 {
				continue
			}
		} else {
			blankRun = 0
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line.text)
	}
	return strings.TrimSpace(b.String())
}

// capRunes cuts s to at most limit runes.
func capRunes(s string, limit int) string {
	count := 0
	for i := range s {
		if count == limit {
			return s[:i]
		}
		count++
	}
	return s
}
