package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"shelldon/contracts"
	"shelldon/daemon/approval/approved"
	"shelldon/daemon/mcp"
	"shelldon/daemon/owner"
	"shelldon/policy"
	"shelldon/tools"
)

// mcpTools are the owner's MCP servers as core offers and runs them: the
// servers and their lifecycle are package mcp's; core only routes a
// worker's call to them, fences what comes back and marks the turn.
type mcpTools struct {
	set *mcp.Set // nil: none configured, or no sandbox to run them in
	// unstartable are the servers configured where there is no sandbox
	// to run them in, and why: /tools names them so.
	unstartable []string
	why         string
	log         *slog.Logger
}

// Offered are the MCP tools a turn may offer.
func (m mcpTools) Offered() []contracts.ToolDefinition {
	if m.set == nil {
		return nil
	}
	return m.set.Offered()
}

// report is what /tools says of the MCP servers: each one's state, and
// its tools as last listed, each with whether it runs without asking.
func (m mcpTools) report() []owner.MCPServer {
	var report []owner.MCPServer
	if m.set == nil {
		for _, name := range m.unstartable {
			report = append(report, owner.MCPServer{Name: name, State: "not started: " + m.why})
		}
		return report
	}
	for _, srv := range m.set.Servers() {
		r := owner.MCPServer{Name: srv.Name(), State: string(srv.State())}
		tools, _ := srv.Listed()
		for _, t := range tools {
			how := "read-only, runs without asking"
			if policy.MCPTier(t.ReadOnly) != contracts.TierFree {
				how = "asks you first"
			}
			r.Tools = append(r.Tools, fmt.Sprintf("%s (%s)", t.Name, how))
		}
		report = append(report, r)
	}
	return report
}

// toolbox is reg with the MCP tools a turn may offer.
func (m mcpTools) toolbox(reg *tools.Registry) *tools.Registry {
	return reg.WithMCP(m.Offered())
}

// Call runs a checked MCP call, off the loop: the answer for the model,
// fenced as untrusted data, whether it is one, the mark it sets on the
// turn ("" when nothing came from the server), and what a server that
// may write wrote.
func (m mcpTools) Call(ctx context.Context, call contracts.ToolCall) approved.MCPAnswer {
	if m.set == nil {
		return approved.MCPAnswer{Answer: fmt.Sprintf("there is no MCP tool %q", call.Name)}
	}
	srv, tool, found := m.set.Lookup(call.Name)
	if !found {
		return approved.MCPAnswer{Answer: fmt.Sprintf("there is no MCP tool %q", call.Name)}
	}
	res, err := srv.Call(ctx, tool.Name, json.RawMessage(call.Args))
	if err != nil {
		m.log.Warn("MCP call failed", contracts.AuditEvent, contracts.EventToolCall, "tool", call.Name, "err", err)
		return approved.MCPAnswer{Answer: "error: " + err.Error()}
	}
	source := fmt.Sprintf("the MCP server %s (its tool %s)", srv.Name(), tool.Name)
	status := "the tool answered"
	if res.IsError {
		status = "the tool reported an error"
	}
	return approved.MCPAnswer{Answer: status + ":\n" + approved.FenceUntrusted(source, res.Text), OK: !res.IsError, Outside: source, Changes: res.Changes}
}
