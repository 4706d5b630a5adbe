package config

import (
	"cmp"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// MCP is one MCP server the owner lets the pet use: an [[mcp]] table. Core
// starts it in a sandbox container of its own on first use and speaks to
// it over the container's stdin and stdout; the pet offers the model the
// tools named in Tools, and asks the owner before every call of one not
// named in ReadOnly.
type MCP struct {
	// Name names the server on the owner's cards and in the tools' names
	// the model sees (mcp_<name>_<tool>): lower-case letters, digits and
	// dashes.
	Name string `toml:"name"`
	// Command is the server's program, a path inside its container: under
	// /run/shelldon/mcp when Directory brings it, else in the sandbox
	// image. Args are its arguments.
	Command string   `toml:"command"`
	Args    []string `toml:"args"`
	// Directory is a host directory shown read-only to the server at
	// /run/shelldon/mcp (its credential-shaped files hidden, as in every
	// view): where a server's own program lives. Empty, the server runs
	// from the image alone.
	Directory string `toml:"directory"`
	// Env is the server's environment beyond the sandbox's small base, as
	// KEY=VALUE.
	Env []string `toml:"env"`
	// Tools are the server's tools the model is offered; a tool the
	// server has and this list does not name is never offered.
	Tools []string `toml:"tools"`
	// ReadOnly are those of Tools the owner vouches change nothing: they
	// run without asking. Every other call asks, whatever the server's
	// own annotations claim.
	ReadOnly []string `toml:"read_only"`
	// Workspace is what the server sees of the workspace: "none" (an
	// empty directory), "read-only" (the workspace, its credentials
	// hidden), or "read-write" (the same, writable: each call then runs
	// in a container of its own, and what it wrote comes back as a
	// change set, as an approved command's does; every call asks).
	Workspace string `toml:"workspace"`
	// Egress lets the server reach the network, and then only public
	// addresses, by http_get's rules, through the sandbox's proxy.
	Egress bool `toml:"egress"`
	// Memory, CPU and Tasks cap the server's container: bytes of memory,
	// CPUs of time per second, processes and threads.
	Memory Size    `toml:"memory"`
	CPU    float64 `toml:"cpu"`
	Tasks  int     `toml:"tasks"`
	// IdleStop stops a server no call used for this long; the next call
	// starts it again.
	IdleStop Duration `toml:"idle_stop"`
	// CallTimeout bounds one call, its start included: a server that has
	// not answered by then is killed and the call fails.
	CallTimeout Duration `toml:"call_timeout"`
}

// The values of [MCP.Workspace].
const (
	MCPWorkspaceNone     = "none"
	MCPWorkspaceReadOnly = "read-only"
	// MCPWorkspaceReadWrite: the server's writes come back as a change
	// set; none of its tools runs without asking.
	MCPWorkspaceReadWrite = "read-write"
)

// MCPDirectory is where an [MCP.Directory] appears inside the server's
// container.
const MCPDirectory = "/run/shelldon/mcp"

// DefaultMCP holds the values an [[mcp]] table leaves out.
var DefaultMCP = MCP{
	Workspace:   MCPWorkspaceNone,
	Memory:      64 << 20,
	CPU:         0.5,
	Tasks:       32,
	IdleStop:    Duration{5 * time.Minute},
	CallTimeout: Duration{20 * time.Second},
}

// The bounds of an MCP server: the board has 416 MB, a server needs at
// least what the container's own init and a small runtime take, and a
// quiet period is long enough to serve a conversation and short enough
// that an idle server gives its memory back the same hour.
const (
	maxMCPServers    = 8
	maxMCPTools      = 32
	maxMCPNameLength = 32
	maxMCPEnv        = 32
	minMCPMemory     = 32 << 20
	maxMCPMemory     = 256 << 20
	minMCPTasks      = 8
	maxMCPTasks      = 256
	minMCPIdleStop   = 10 * time.Second
	maxMCPIdleStop   = 24 * time.Hour
	minMCPCall       = time.Second
)

// ToolName is the tool's name as the model sees it: mcp_<server>_<tool>,
// dashes of the server's name as underscores.
func (m MCP) ToolName(tool string) string {
	return "mcp_" + strings.ReplaceAll(m.Name, "-", "_") + "_" + tool
}

// IsReadOnly reports whether the owner marked tool read-only.
func (m MCP) IsReadOnly(tool string) bool { return slices.Contains(m.ReadOnly, tool) }

// WithDefaults fills what the table left out, as Load does.
func (m MCP) WithDefaults() MCP {
	d := DefaultMCP
	m.Workspace = cmp.Or(m.Workspace, d.Workspace)
	m.Memory = cmp.Or(m.Memory, d.Memory)
	m.CPU = cmp.Or(m.CPU, d.CPU)
	m.Tasks = cmp.Or(m.Tasks, d.Tasks)
	m.IdleStop = cmp.Or(m.IdleStop, d.IdleStop)
	m.CallTimeout = cmp.Or(m.CallTimeout, d.CallTimeout)
	return m
}

// mcpToolName is what a tool's name may be: what the model's function
// names allow, less the room mcp_<server>_ takes.
func mcpToolName(name string) bool {
	if name == "" || len(name) > 64-len("mcp__")-maxMCPNameLength {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func (c Config) validateMCP(add func(key, what, remedy string, about ...string)) {
	if len(c.MCP) > maxMCPServers {
		add("mcp", fmt.Sprintf("%d servers, over the %d a board has room for", len(c.MCP), maxMCPServers),
			fmt.Sprintf("keep at most %d [[mcp]] tables", maxMCPServers))
	}
	for i, m := range c.MCP {
		c.validateMCPServer(i, m, add)
	}
}

func (c Config) validateMCPServer(i int, m MCP, add func(key, what, remedy string, about ...string)) {
	key := func(field string) string { return fmt.Sprintf("mcp[%d].%s", i, field) }
	def := DefaultMCP
	switch {
	case m.Name == "":
		add(key("name"), "is empty", `name every MCP server, with lower-case letters, digits and dashes, like "everything"`)
	case !providerName().MatchString(m.Name) || len(m.Name) > maxMCPNameLength:
		add(key("name"), fmt.Sprintf("%q is not lower-case letters, digits and dashes, at most %d", m.Name, maxMCPNameLength), `use a short name like "everything"`)
	default:
		for j, earlier := range c.MCP[:i] {
			if strings.ReplaceAll(earlier.Name, "-", "_") == strings.ReplaceAll(m.Name, "-", "_") {
				add(key("name"), fmt.Sprintf("%q names the same tools as mcp[%d] (%q)", m.Name, j, earlier.Name), "give each MCP server its own name")
				break
			}
		}
	}
	switch {
	case m.Command == "":
		add(key("command"), "is empty", fmt.Sprintf(`name the server's program as its container sees it: under %s when directory brings it, like "%s/server", or in the sandbox image, like "/usr/bin/python3"`, MCPDirectory, MCPDirectory))
	case !path.IsAbs(m.Command) || path.Clean(m.Command) != m.Command:
		add(key("command"), fmt.Sprintf("%q is not a clean absolute path", m.Command), fmt.Sprintf(`write the program's full path inside the container, like "%s/server"`, MCPDirectory))
	case m.Directory == "" && strings.HasPrefix(m.Command, MCPDirectory+"/"):
		add(key("command"), fmt.Sprintf("%q lies under %s, but directory is not set", m.Command, MCPDirectory), "set directory to the host directory that holds the program", key("directory"))
	}
	if m.Directory != "" && (!filepath.IsAbs(m.Directory) || strings.ContainsAny(m.Directory, ":,")) {
		add(key("directory"), fmt.Sprintf("%q is not an absolute path without ':' or ','", m.Directory), `write the host directory that holds the server, like "/opt/mcp/everything"; or leave it out to run from the image`)
	}
	if len(m.Env) > maxMCPEnv {
		add(key("env"), fmt.Sprintf("%d entries, over %d", len(m.Env), maxMCPEnv), fmt.Sprintf("keep at most %d", maxMCPEnv))
	}
	for j, kv := range m.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || strings.ContainsAny(kv, "\x00\n") {
			add(key("env"), fmt.Sprintf("element %d is not KEY=VALUE on one line", j), `write each as "NAME=value", like "LOG_LEVEL=info"`)
		}
	}
	switch {
	case len(m.Tools) == 0:
		add(key("tools"), "is empty: the model would be offered none of the server's tools", `name the tools to offer, like ["greet"]; `+"`shelldon doctor`"+` lists what the server has`)
	case len(m.Tools) > maxMCPTools:
		add(key("tools"), fmt.Sprintf("%d tools, over %d", len(m.Tools), maxMCPTools), fmt.Sprintf("offer at most %d; each takes room in every turn's prompt", maxMCPTools))
	}
	for j, t := range m.Tools {
		switch {
		case !mcpToolName(t):
			add(key("tools"), fmt.Sprintf("element %d, %q, is not a tool name the model can be given", j, t), "use the tool's name as the server lists it: letters, digits, _ and -, at most 27")
		case slices.Contains(m.Tools[:j], t):
			add(key("tools"), fmt.Sprintf("%q is named twice", t), "name each tool once")
		}
	}
	for _, t := range m.ReadOnly {
		if !slices.Contains(m.Tools, t) {
			add(key("read_only"), fmt.Sprintf("%q is not among tools", t), "mark read-only only tools the model is offered: add it to tools, or remove it here", key("tools"))
		}
	}
	switch m.Workspace {
	case MCPWorkspaceNone, MCPWorkspaceReadOnly:
	case MCPWorkspaceReadWrite:
		if len(m.ReadOnly) > 0 {
			add(key("read_only"), fmt.Sprintf("marks %s, but the server may write the workspace: every call of a server that may write asks", strings.Join(m.ReadOnly, ", ")),
				`remove read_only, or give the server workspace = "read-only"`, key("workspace"))
		}
	default:
		add(key("workspace"), fmt.Sprintf("%q is not a way to see the workspace", m.Workspace), `use "none" (the default), "read-only" or "read-write"`)
	}
	inRange(add, key("memory"), m.Memory, minMCPMemory, maxMCPMemory, def.Memory)
	if !(m.CPU >= 0.01 && m.CPU <= 4) { // NaN fails both
		add(key("cpu"), fmt.Sprintf("%v is out of range", m.CPU), fmt.Sprintf("use 0.01 to 4 CPUs (default %v)", def.CPU))
	}
	inRange(add, key("tasks"), m.Tasks, minMCPTasks, maxMCPTasks, def.Tasks)
	inRange(add, key("idle_stop"), m.IdleStop.Duration, minMCPIdleStop, maxMCPIdleStop, def.IdleStop.Duration)
	if w := c.Timeouts.Worker.Duration; m.CallTimeout.Duration < minMCPCall || m.CallTimeout.Duration >= w {
		add(key("call_timeout"), fmt.Sprintf("%v is outside %v..timeouts.worker (%v)", m.CallTimeout, Duration{minMCPCall}, c.Timeouts.Worker),
			"make it shorter than timeouts.worker, by which the turn has given up on the call", "timeouts.worker")
	}
}
