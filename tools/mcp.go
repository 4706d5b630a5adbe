package tools

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

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

// Check reads the call's arguments as a JSON object and keeps them in
// their canonical form (Content): what the owner is shown of an asking
// call, what its digest covers, and what the server is sent.
func (t mcpTool) Check(args string) (Checked, error) {
	args, err := objectArgs(t.def.Name, args)
	if err != nil {
		return Checked{}, err
	}
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber() // numbers as written: a float would round a large one
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return Checked{}, fmt.Errorf("%w: %s takes a JSON object of arguments", ErrBadArgs, t.def.Name)
	}
	canonical, err := json.Marshal(obj) // keys sorted: one form for one object
	if err != nil {
		return Checked{}, fmt.Errorf("%s: arguments: %w", t.def.Name, err)
	}
	c := Checked{Tier: t.def.Tier, MCP: true, Content: string(canonical), Doing: "asking " + t.def.Name}
	if c.Tier == contracts.TierFree {
		c.Sandboxed = true
	} else {
		c.Tier, c.Note = contracts.TierRisky, t.def.Note
	}
	return c, nil
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
