package daemon

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/state"
	"shelldon/daemon/toolstore"
)

// The bounds of the self-coded tools one turn is offered in full: every
// definition goes with every request of the turn, and is billed as
// prompt, so a pet's cost per turn would otherwise grow with every tool
// it ever kept.
const (
	maxToolsInFull = 12
	// maxInFullBytes bounds the offered definitions, as JSON.
	maxInFullBytes = 8 << 10
)

// byNameOnly chooses the live tools a turn is told of by name alone.
// Offered in full are, first, the tools the owner's text names, then
// those called or kept most lately, then those called most often, each
// while it fits within maxToolsInFull and maxInFullBytes; the rest are
// named in the prompt, and calling one by name works as for the others.
func byNameOnly(live []toolstore.Manifest, text string, uses map[string]state.ToolUse) []string {
	text = strings.ToLower(text)
	type candidate struct {
		name   string
		named  bool
		lately time.Time
		uses   int
		bytes  int
	}
	candidates := make([]candidate, 0, len(live))
	for _, t := range live {
		c := candidate{name: t.Name, named: names(text, t.Name), uses: uses[t.Name].Uses, lately: uses[t.Name].LastUsed}
		if kept, err := time.Parse(time.RFC3339, t.PromotedAt); err == nil && kept.After(c.lately) {
			c.lately = kept // a tool just kept is likely the next one wanted
		}
		if def, err := json.Marshal(t.Definition()); err == nil {
			c.bytes = len(def)
		} else {
			c.bytes = maxInFullBytes + 1 // a definition that does not encode is never offered in full
		}
		candidates = append(candidates, c)
	}
	slices.SortFunc(candidates, func(a, b candidate) int {
		switch {
		case a.named != b.named:
			if a.named {
				return -1
			}
			return 1
		case !a.lately.Equal(b.lately):
			return b.lately.Compare(a.lately)
		case a.uses != b.uses:
			return cmp.Compare(b.uses, a.uses)
		}
		return strings.Compare(a.name, b.name)
	})
	var out []string
	inFull, bytes := 0, 0
	for _, c := range candidates {
		if inFull < maxToolsInFull && bytes+c.bytes <= maxInFullBytes {
			inFull, bytes = inFull+1, bytes+c.bytes
			continue
		}
		out = append(out, c.name)
	}
	slices.Sort(out)
	return out
}

// names reports whether the lower-cased text names the tool: its name as
// a word of its own, or with spaces for its underscores ("word count"
// for word_count).
func names(text, tool string) bool {
	for _, form := range []string{tool, strings.ReplaceAll(tool, "_", " ")} {
		for rest, at := text, 0; ; {
			i := strings.Index(rest, form)
			if i < 0 {
				break
			}
			start, end := at+i, at+i+len(form)
			if !wordByte(text, start-1) && !wordByte(text, end) {
				return true
			}
			rest, at = text[end:], end
		}
	}
	return false
}

// wordByte reports whether text[i] is part of a tool's name; a position
// outside the text is not.
func wordByte(text string, i int) bool {
	if i < 0 || i >= len(text) {
		return false
	}
	c := text[i]
	return c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

// offer is the self-coded tools of a turn whose owner wrote text: the
// definitions of the live tools that pass their check, and the names of
// those told of by name alone.
func (k *keeper) offer(ctx context.Context, text string, to approval.Audience) (defs []contracts.ToolDefinition, byName []string) {
	live := k.liveTools(to)
	uses, err := k.state.Tools().Uses(ctx)
	if err != nil {
		k.log.Error("reading the tools' uses failed; the turn's tools are chosen without them", "err", err)
	}
	return definitions(live), byNameOnly(live, text, uses)
}

// mcpByName chooses the MCP tools a turn is told of by name alone: they
// share the budget of the self-coded tools offered in full
// (maxToolsInFull, maxInFullBytes), after them; those the owner's text
// names first, then in the configuration's order, each while it fits.
// selfCoded are the self-coded definitions, heldBack those of them told
// of by name.
func mcpByName(selfCoded []contracts.ToolDefinition, heldBack []string, mcp []contracts.ToolDefinition, text string) []string {
	size := func(d contracts.ToolDefinition) int {
		def, err := json.Marshal(d)
		if err != nil {
			return maxInFullBytes + 1
		}
		return len(def)
	}
	inFull, bytes := 0, 0
	for _, d := range selfCoded {
		if !slices.Contains(heldBack, d.Name) {
			inFull, bytes = inFull+1, bytes+size(d)
		}
	}
	text = strings.ToLower(text)
	ordered := slices.Clone(mcp)
	slices.SortStableFunc(ordered, func(a, b contracts.ToolDefinition) int {
		an, bn := names(text, strings.ToLower(a.Name)), names(text, strings.ToLower(b.Name))
		switch {
		case an && !bn:
			return -1
		case bn && !an:
			return 1
		}
		return 0
	})
	var out []string
	for _, d := range ordered {
		if n := size(d); inFull < maxToolsInFull && bytes+n <= maxInFullBytes {
			inFull, bytes = inFull+1, bytes+n
			continue
		}
		out = append(out, d.Name)
	}
	slices.Sort(out)
	return out
}
