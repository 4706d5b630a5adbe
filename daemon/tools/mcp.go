package tools

import (
	"fmt"
	"slices"

	"shelldon/contracts"
)

// mcpTool is a tool of one of the owner's MCP servers, as core listed it:
// core runs each call (EXEC), in the server's container, after checking
// it against its own list; its answer is outside text.
type mcpTool struct{ def contracts.ToolDefinition }

func (t mcpTool) Definition() contracts.ToolDefinition {
	d := t.def
	if d.ParamsSchema == nil {
		d.ParamsSchema = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return d
}

func (t mcpTool) Check(args string) (Checked, error) {
	if _, err := objectArgs(t.def.Name, args); err != nil {
		return Checked{}, err
	}
	if t.def.Tier != contracts.TierFree {
		// Core offers only the tools the owner marked read-only until
		// an MCP call can be asked for.
		return Checked{}, fmt.Errorf("%s needs the owner's approval, which MCP calls cannot ask for yet", t.def.Name)
	}
	return Checked{Tier: contracts.TierFree, Sandboxed: true, MCP: true, Doing: "asking " + t.def.Name}, nil
}

// WithMCP adds the MCP servers' tools core offers, as defined; a
// definition whose name another tool has is left out.
func (r *Registry) WithMCP(defs []contracts.ToolDefinition) *Registry {
	out := &Registry{tools: slices.Clip(r.tools), builtin: r.builtin}
	for _, d := range defs {
		if _, taken := out.Lookup(d.Name); d.Name != "" && !taken {
			out.tools = append(out.tools, mcpTool{def: d})
		}
	}
	return out
}
