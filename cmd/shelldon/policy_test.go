package main

import (
	"errors"
	"strings"
	"testing"
)

func TestPolicyCheck(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
		err  error // a command that asks is a "no": exit 1, already printed
	}{
		{[]string{"policy", "check", "python -m pytest -q 2>&1 | tail -20"}, []string{"safe: runs without asking"}, nil},
		{[]string{"policy", "check", "cd /tmp && rm -f todos.json"}, []string{"asks: look closely", "todos.json", "/tmp"}, errQuiet},
		{[]string{"policy", "check", "curl http://example.com"}, []string{"asks: look closely", "network"}, errQuiet},
		{[]string{"policy", "check", "echo 'unterminated"}, []string{"asks:"}, errQuiet},
	} {
		out, _, err := runCLI(t, tc.args...)
		if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("shelldon %q = %v, want %v", tc.args, err, tc.err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("shelldon %q printed %q, want it to mention %q", tc.args, out, w)
			}
		}
	}
	for _, bad := range [][]string{{"policy"}, {"policy", "check"}, {"policy", "check", "ls", "extra"}, {"policy", "judge", "ls"}} {
		if _, _, err := runCLI(t, bad...); exitCode(err) != exitUsage {
			t.Errorf("shelldon %q = %v, want a usage error", bad, err)
		}
	}
}

// TestPolicyCheckJudgesTheConfiguredWorkspace: --state-dir is honoured,
// so a path is judged against the pet's own workspace, as the pet judges
// it: inside it, a routine question; anywhere else, one to look at closely.
func TestPolicyCheckJudgesTheConfiguredWorkspace(t *testing.T) {
	state := t.TempDir()
	command := "cat " + state + "/workspace/notes.md"
	for _, tc := range []struct {
		stateDir, want string
	}{
		{state, "asks: routine: names a workspace path by its absolute path"},
		{t.TempDir(), "asks: look closely: leaves the workspace"},
	} {
		out, _, err := runCLI(t, "policy", "check", "--state-dir", tc.stateDir, command)
		if !errors.Is(err, errQuiet) || !strings.HasPrefix(out, tc.want) {
			t.Errorf("shelldon policy check --state-dir %s %q = %v\n%s\nwant %q", tc.stateDir, command, err, out, tc.want)
		}
	}
}
