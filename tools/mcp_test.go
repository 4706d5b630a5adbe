package tools

import (
	"strings"
	"testing"

	"shelldon/contracts"
)

// TestAnMCPCallIsCheckedToOneForm: an MCP call's arguments are kept in
// one canonical form (keys sorted, numbers as written), which the card
// shows, the digest covers and the server is sent; a tool the owner did
// not mark read-only asks, with the card's note of its server.
func TestAnMCPCallIsCheckedToOneForm(t *testing.T) {
	reg := (&Registry{}).WithMCP([]contracts.ToolDefinition{
		{Name: "mcp_s_free", Tier: contracts.TierFree},
		{Name: "mcp_s_asks", Tier: contracts.TierRisky, Note: "calls asks of the MCP server s"},
	})
	tests := []struct {
		tool, args string
		tier       contracts.Tier
		content    string
		wantErr    string
	}{
		{"mcp_s_free", `{"b": 1, "a": "x"}`, contracts.TierFree, `{"a":"x","b":1}`, ""},
		{"mcp_s_asks", ` {"n": 12345678901234567890, "a": [1, 2.50]} `, contracts.TierRisky, `{"a":[1,2.50],"n":12345678901234567890}`, ""},
		{"mcp_s_asks", "", contracts.TierRisky, `{}`, ""},
		{"mcp_s_asks", `[1, 2]`, "", "", "JSON object"},
		{"mcp_s_asks", `{"a": 1} {"b": 2}`, "", "", "JSON object"},
	}
	for _, tt := range tests {
		tool, ok := reg.Lookup(tt.tool)
		if !ok {
			t.Fatalf("no %s", tt.tool)
		}
		got, err := tool.Check(tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Check(%s, %q) = %+v, %v; want an error mentioning %q", tt.tool, tt.args, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got.Tier != tt.tier || got.Content != tt.content || !got.MCP {
			t.Errorf("Check(%s, %q) = %+v, %v; want tier %s, content %s", tt.tool, tt.args, got, err, tt.tier, tt.content)
		}
		if tt.tier == contracts.TierRisky && got.Note != "calls asks of the MCP server s" {
			t.Errorf("Check(%s) note = %q, want the server's", tt.tool, got.Note)
		}
	}
}
