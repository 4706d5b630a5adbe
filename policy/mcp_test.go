package policy

import (
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
