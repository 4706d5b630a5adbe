package config

import (
	"strings"
	"testing"
)

// exampleMCP is the example's [[mcp]] table with its "# " removed, as the
// comment there tells the owner to do.
func exampleMCP(t *testing.T) string {
	t.Helper()
	var table []string
	for _, line := range strings.Split(Example, "\n") {
		if line == "# [[mcp]]" || len(table) > 0 && strings.HasPrefix(line, "# ") && strings.Contains(line, " = ") {
			table = append(table, strings.TrimPrefix(line, "# "))
		}
	}
	if len(table) == 0 {
		t.Fatal("the example has no [[mcp]] table")
	}
	return strings.Join(table, "\n") + "\n"
}

// TestExampleMCPLoads: the example's server, uncommented, loads as
// written, and what it left out takes the defaults.
func TestExampleMCPLoads(t *testing.T) {
	got, err := Load(writeConfig(t, exampleMCP(t)), nil)
	if err != nil || len(got.MCP) != 1 {
		t.Fatalf("the example's [[mcp]], uncommented: %+v, %v", got.MCP, err)
	}
	m := got.MCP[0]
	if m.Name != "everything" || m.Command != MCPDirectory+"/everything" || !m.IsReadOnly("greet") || m.IsReadOnly("ping") ||
		m.Workspace != MCPWorkspaceNone || m.Egress || m.Memory != DefaultMCP.Memory || m.IdleStop != DefaultMCP.IdleStop {
		t.Errorf("the example's [[mcp]] loads as %+v", m)
	}
	if got := m.ToolName("greet"); got != "mcp_everything_greet" {
		t.Errorf("ToolName(greet) = %q", got)
	}
	// A table that leaves every bound out takes the defaults.
	got, err = Load(writeConfig(t, "[[mcp]]\nname = \"a-b\"\ncommand = \"/usr/bin/python3\"\ntools = [\"t\"]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := got.MCP[0]; m.CPU != DefaultMCP.CPU || m.Tasks != DefaultMCP.Tasks || m.CallTimeout != DefaultMCP.CallTimeout || m.ToolName("t") != "mcp_a_b_t" {
		t.Errorf("defaults not filled: %+v", m)
	}
}

// TestMCPMistakesNameTheFix: each mistake in an [[mcp]] table is refused
// at start, naming the key and what to write instead.
func TestMCPMistakesNameTheFix(t *testing.T) {
	const valid = "name = \"srv\"\ncommand = \"/run/shelldon/mcp/srv\"\ndirectory = \"/opt/srv\"\ntools = [\"a\", \"b\"]\n"
	for _, tc := range []struct {
		name, table string
		want        []string
	}{
		{"no name", strings.Replace(valid, `name = "srv"`, `name = ""`, 1), []string{"mcp[0].name: is empty"}},
		{"bad name", strings.Replace(valid, `"srv"`, `"My Server"`, 1), []string{"mcp[0].name", "lower-case"}},
		{"no command", strings.Replace(valid, `command = "/run/shelldon/mcp/srv"`, `command = ""`, 1), []string{"mcp[0].command: is empty"}},
		{"relative command", strings.Replace(valid, `"/run/shelldon/mcp/srv"`, `"srv"`, 1), []string{"mcp[0].command", "absolute"}},
		{"command without its directory", strings.Replace(valid, "directory = \"/opt/srv\"\n", "", 1), []string{"mcp[0].command", "directory is not set"}},
		{"relative directory", strings.Replace(valid, `"/opt/srv"`, `"opt/srv"`, 1), []string{"mcp[0].directory", "absolute"}},
		{"no tools", strings.Replace(valid, `tools = ["a", "b"]`, `tools = []`, 1), []string{"mcp[0].tools", "shelldon doctor"}},
		{"a tool named twice", strings.Replace(valid, `["a", "b"]`, `["a", "a"]`, 1), []string{"mcp[0].tools", "twice"}},
		{"a tool's name the model cannot take", strings.Replace(valid, `"b"]`, `"b c"]`, 1), []string{"mcp[0].tools", `"b c"`}},
		{"read-only beyond the tools", valid + "read_only = [\"c\"]\n", []string{"mcp[0].read_only", `"c" is not among tools`}},
		{"a read-only tool of a server that may write", valid + "workspace = \"read-write\"\nread_only = [\"a\"]\n", []string{"mcp[0].read_only", "may write the workspace", `workspace = "read-only"`}},
		{"unknown workspace", valid + "workspace = \"all\"\n", []string{"mcp[0].workspace", `"none"`}},
		{"env not KEY=VALUE", valid + "env = [\"LOUD\"]\n", []string{"mcp[0].env", "NAME=value"}},
		{"too little memory", valid + "memory = \"1MiB\"\n", []string{"mcp[0].memory", "out of range"}},
		{"CPU out of range", valid + "cpu = 9.0\n", []string{"mcp[0].cpu", "0.01 to 4"}},
		{"tasks out of range", valid + "tasks = 1\n", []string{"mcp[0].tasks"}},
		{"idle_stop too short", valid + "idle_stop = \"1s\"\n", []string{"mcp[0].idle_stop"}},
		{"a call past the worker's budget", valid + "call_timeout = \"1m\"\n", []string{"mcp[0].call_timeout", "timeouts.worker"}},
		{"an unknown key", valid + "tool = [\"a\"]\n", []string{"mcp.tool", "unknown key", `did you mean "mcp.tools"`}},
		{"a mistyped value", valid + "egress = \"yes\"\n", []string{"mcp.egress", "true or false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, "[[mcp]]\n"+tc.table), nil)
			wantError(t, err, tc.want...)
		})
	}
	_, err := Load(writeConfig(t, "[[mcp]]\n"+valid+"[[mcp]]\n"+valid), nil)
	wantError(t, err, "mcp[1].name", "same tools as mcp[0]")
	_, err = Load(writeConfig(t, strings.Repeat("[[mcp]]\n"+valid, maxMCPServers+1)), nil)
	wantError(t, err, "mcp:", "keep at most 8")
	if _, err := Load(writeConfig(t, "[[mcp]]\n"+valid), nil); err != nil {
		t.Errorf("the valid table is refused: %v", err)
	}
}
