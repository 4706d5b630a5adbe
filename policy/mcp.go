package policy

import (
	"fmt"

	"shelldon/contracts"
)

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

// MCPWriteRisks are the risks of what a call of the MCP tool tool wrote
// to the workspace (a server the owner gave it read-write): those of any
// change set, and always one more, so that the owner looks at every
// such change set before it lands. The owner approved the call on its
// arguments; what the server would write, no card could show.
func MCPWriteRisks(tool string, changes []FileChange) []string {
	return append(ChangeSetRisks(changes), fmt.Sprintf("written by the MCP tool %s, whose card showed its arguments, not what it would write", tool))
}
