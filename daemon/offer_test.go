package daemon

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/state"
	"shelldon/daemon/toolstore"
)

func TestNames(t *testing.T) {
	for _, c := range []struct {
		text, tool string
		want       bool
	}{
		{"please run word_count on notes.txt", "word_count", true},
		{"count the words (word count) in notes", "word_count", true},
		{"word_count2 is not it", "word_count", false},
		{"my_word_count neither", "word_count", false},
		{"greet", "greet", true},
		{"greeting cards", "greet", false},
		{"say hi, then greet. then greet_all", "greet_all", true},
		{"nothing here", "greet", false},
	} {
		if got := names(c.text, c.tool); got != c.want {
			t.Errorf("names(%q, %q) = %v, want %v", c.text, c.tool, got, c.want)
		}
	}
}

// liveToolsForTest are n kept tools, tool_0 … tool_<n-1>, kept a minute
// apart, the later ones later.
func liveToolsForTest(n int, kept time.Time) []toolstore.Manifest {
	var out []toolstore.Manifest
	for i := range n {
		out = append(out, toolstore.Manifest{
			Name: fmt.Sprintf("tool_%d", i), Description: "Does thing " + fmt.Sprint(i) + ".",
			Schema:     map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string"}}},
			PromotedAt: kept.Add(time.Duration(i) * time.Minute).Format(time.RFC3339),
		})
	}
	return out
}

func TestByNameOnly(t *testing.T) {
	kept := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lately := kept.Add(24 * time.Hour)
	inFull := func(live []toolstore.Manifest, byName []string) []string {
		var out []string
		for _, tl := range live {
			if !slices.Contains(byName, tl.Name) {
				out = append(out, tl.Name)
			}
		}
		return out
	}
	huge := liveToolsForTest(3, kept)
	huge[1].Description = strings.Repeat("long ", maxInFullBytes/5)
	for _, c := range []struct {
		about  string
		live   []toolstore.Manifest
		text   string
		uses   map[string]state.ToolUse
		inFull []string // sorted by name
	}{
		{"a few tools are all offered in full", liveToolsForTest(3, kept), "hi", nil, []string{"tool_0", "tool_1", "tool_2"}},
		{"past the bound, the ones kept last", liveToolsForTest(14, kept), "hi", nil,
			[]string{"tool_10", "tool_11", "tool_12", "tool_13", "tool_2", "tool_3", "tool_4", "tool_5", "tool_6", "tool_7", "tool_8", "tool_9"}},
		{"the tools the text names come first", liveToolsForTest(100, kept), "use tool_3 and tool 4", nil,
			[]string{"tool_3", "tool_4", "tool_90", "tool_91", "tool_92", "tool_93", "tool_94", "tool_95", "tool_96", "tool_97", "tool_98", "tool_99"}},
		{"then the ones called lately, then the most called", liveToolsForTest(100, kept), "tool_50",
			map[string]state.ToolUse{"tool_1": {Uses: 1, LastUsed: lately}, "tool_2": {Uses: 9, LastUsed: lately.Add(-time.Hour)}, "tool_7": {Uses: 2, LastUsed: lately}},
			[]string{"tool_1", "tool_2", "tool_50", "tool_7", "tool_92", "tool_93", "tool_94", "tool_95", "tool_96", "tool_97", "tool_98", "tool_99"}},
		{"a definition over the byte budget is offered by name", huge, "tool_1", nil, []string{"tool_0", "tool_2"}},
	} {
		byName := byNameOnly(c.live, c.text, c.uses)
		got := inFull(c.live, byName)
		slices.Sort(got)
		if !slices.Equal(got, c.inFull) {
			t.Errorf("%s: byNameOnly(%d tools, %q) offers in full %q, want %q", c.about, len(c.live), c.text, got, c.inFull)
		}
		if !slices.IsSorted(byName) {
			t.Errorf("%s: byNameOnly(%d tools, %q) = %q, want them sorted", c.about, len(c.live), c.text, byName)
		}
	}
}

// TestMCPToolsShareTheSelfCodedBudget: the MCP tools are offered in full
// within what the self-coded tools leave of the budget, those the owner
// names first; the rest by name.
func TestMCPToolsShareTheSelfCodedBudget(t *testing.T) {
	defs := func(prefix string, n int) []contracts.ToolDefinition {
		var out []contracts.ToolDefinition
		for i := range n {
			out = append(out, contracts.ToolDefinition{Name: fmt.Sprintf("%s_%d", prefix, i), Description: "Does a thing.", Tier: contracts.TierFree})
		}
		return out
	}
	selfCoded, mcp := defs("mine", maxToolsInFull-2), defs("mcp_srv_tool", 4)
	if got := mcpByName(selfCoded, nil, mcp, "hello"); !slices.Equal(got, []string{"mcp_srv_tool_2", "mcp_srv_tool_3"}) {
		t.Errorf("with %d self-coded tools in full, the MCP tools by name = %v; want the two past the budget", len(selfCoded), got)
	}
	if got := mcpByName(selfCoded, nil, mcp, "use mcp_srv_tool_3 please"); !slices.Equal(got, []string{"mcp_srv_tool_1", "mcp_srv_tool_2"}) {
		t.Errorf("the owner naming mcp_srv_tool_3, by name = %v; want it in full", got)
	}
	if got := mcpByName(selfCoded, []string{"mine_0", "mine_1"}, mcp, ""); len(got) != 0 {
		t.Errorf("with room left by self-coded tools held back, by name = %v; want none", got)
	}
	big := contracts.ToolDefinition{Name: "mcp_srv_big", Description: strings.Repeat("x", maxInFullBytes)}
	if got := mcpByName(nil, nil, []contracts.ToolDefinition{big}, ""); !slices.Equal(got, []string{"mcp_srv_big"}) {
		t.Errorf("a definition past the bytes' budget in full: by name = %v", got)
	}
}
