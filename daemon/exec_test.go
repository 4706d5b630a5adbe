package daemon

import (
	"strings"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/tools"
)

// TestCoreRunsOnlyWhatItsOwnCheckAllows: whatever a worker asks, core
// runs a command only when its own check finds it read-only, and runs
// the argv its check made.
func TestCoreRunsOnlyWhatItsOwnCheckAllows(t *testing.T) {
	reg := tools.Builtins(tools.Env{Workspace: t.TempDir(), Clock: clock.NewFake(time.Now())})
	cases := []struct {
		name string
		call contracts.ToolCall
		argv []string
		err  string
	}{
		{"read-only command", contracts.ToolCall{Name: "run_shell", Args: `{"command":"ls -la"}`}, []string{"/bin/sh", "-c", "ls -la"}, ""},
		{"a deletion", contracts.ToolCall{Name: "run_shell", Args: `{"command":"rm -rf ."}`}, nil, "not a read-only command"},
		{"leaving the workspace", contracts.ToolCall{Name: "run_shell", Args: `{"command":"cat /etc/shadow"}`}, nil, "not a read-only command"},
		{"a write", contracts.ToolCall{Name: "write_file", Args: `{"path":"a","content":"b"}`}, nil, "not a read-only command"},
		{"an in-worker tool", contracts.ToolCall{Name: "get_time", Args: `{}`}, nil, "not a read-only command"},
		{"no such tool", contracts.ToolCall{Name: "format_disk", Args: `{}`}, nil, "no tool"},
		{"bad arguments", contracts.ToolCall{Name: "run_shell", Args: `{"command": 1}`}, nil, "bad arguments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checked, err := checkFree(reg, tc.call)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("checkFree(%s %s) = %v, want an error saying %q", tc.call.Name, tc.call.Args, err, tc.err)
				}
				return
			}
			if err != nil || strings.Join(checked.Argv, "\x00") != strings.Join(tc.argv, "\x00") {
				t.Errorf("checkFree(%s %s) = %q, %v; want %q", tc.call.Name, tc.call.Args, checked.Argv, err, tc.argv)
			}
		})
	}
}
