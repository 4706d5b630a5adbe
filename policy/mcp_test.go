package policy

import (
	"strings"
	"testing"

	"shelldon/contracts"
)

// TestMCPTierIsTheOwnersWord: only the owner's read-only mark makes an MCP
// call run without asking.
func TestMCPTierIsTheOwnersWord(t *testing.T) {
	if got := MCPTier(true); got != contracts.TierFree {
		t.Errorf("MCPTier(marked read-only) = %v, want FREE", got)
	}
	if got := MCPTier(false); got != contracts.TierRisky {
		t.Errorf("MCPTier(not marked) = %v, want RISKY", got)
	}
}

// TestAnMCPServersWritesAlwaysNeedTheOwner: a change set an MCP server
// wrote has a risk even when it holds nothing any change set would be
// asked about, and keeps those it does hold.
func TestAnMCPServersWritesAlwaysNeedTheOwner(t *testing.T) {
	plain := []FileChange{{Path: "notes/graph.json", Size: 97}}
	if risks := MCPWriteRisks("mcp_memory_create_entities", plain); len(risks) != 1 || !strings.Contains(risks[0], "mcp_memory_create_entities") {
		t.Errorf("MCPWriteRisks(a plain file) = %q, want the server's writes named as the one risk", risks)
	}
	hook := []FileChange{{Path: ".git/hooks/pre-commit", Size: 10}}
	if got, want := len(MCPWriteRisks("mcp_x_y", hook)), len(ChangeSetRisks(hook))+1; got != want || want < 2 {
		t.Errorf("MCPWriteRisks(a git hook) has %d risks, want the change set's own %d and the server's", got, want-1)
	}
}
