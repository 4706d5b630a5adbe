package main

import (
	"encoding/json"
	"strings"
	"testing"

	"shelldon/policy"
)

func TestPolicyCheck(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"policy", "check", "python -m pytest -q 2>&1 | tail -20"}, []string{"safe: runs without asking"}},
		{[]string{"policy", "check", "cd /tmp && rm -f todos.json"}, []string{"asks: look closely", "todos.json", "/tmp"}},
		{[]string{"policy", "check", "curl http://example.com"}, []string{"asks: look closely", "network"}},
		{[]string{"policy", "check", "echo 'unterminated"}, []string{"asks:"}},
	} {
		out, _, err := runCLI(t, tc.args...)
		if err != nil {
			t.Errorf("shelldon %q = %v", tc.args, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("shelldon %q printed %q, want it to mention %q", tc.args, out, w)
			}
		}
	}

	out, _, err := runCLI(t, "policy", "check", "--json", "rm -rf build")
	var v policy.Verdict
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Safe || v.Note == "" {
		t.Errorf("policy check --json = %q, %v; want a JSON verdict that asks, with a note", out, err)
	}
	for _, bad := range [][]string{{"policy"}, {"policy", "check"}, {"policy", "check", "ls", "extra"}, {"policy", "judge", "ls"}} {
		if _, _, err := runCLI(t, bad...); err == nil {
			t.Errorf("shelldon %q = nil, want a usage error", bad)
		}
	}
}
