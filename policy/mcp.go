package policy

import "shelldon/contracts"

// MCPTier is the tier of a call of an MCP server's tool: FREE only when
// the owner marked the tool read-only in the configuration, RISKY
// otherwise. What the server says of its own tool (its readOnlyHint) is
// never asked: a server is code from outside, and its word about itself
// is part of what it could lie about.
func MCPTier(ownerMarkedReadOnly bool) contracts.Tier {
	if ownerMarkedReadOnly {
		return contracts.TierFree
	}
	return contracts.TierRisky
}
