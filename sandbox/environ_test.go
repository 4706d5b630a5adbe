package sandbox_test

import (
	"slices"
	"strings"
	"testing"

	"shelldon/sandbox"
)

// sandboxEnvironment are the variables a command may find in its
// environment: the sandbox's base, and what nspawn sets (container_host_*
// are the host's OS id and version, by prefix since systemd adds more).
// The shell policy lets every way of printing the environment run on the
// strength of this list (policy's shellEnvironment).
var sandboxEnvironment = []string{"PATH", "HOME", "LANG", "PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS",
	"container", "container_uuid", "USER", "LOGNAME", "PWD", "NOTIFY_SOCKET"}

// TestACommandSeesNoneOfShelldonsEnvironment: shelldon's own environment
// may hold a provider's key; a command in the sandbox, printing its
// environment every way the shell policy lets run without asking (and
// through /proc, as a program could), finds none of it, and nothing but
// the variables the sandbox and nspawn set.
func TestACommandSeesNoneOfShelldonsEnvironment(t *testing.T) {
	const key = "sk-shelldon-test-5d2f81"
	t.Setenv("OPENAI_API_KEY", key)
	t.Setenv("SHELLDON_PROVIDER_KEY", key)
	sb := newSandbox(t)
	ws := workspace(t, 0, map[string]string{"README.md": "plain readme\n"})
	for _, view := range []sandbox.View{sandbox.ReadOnly, sandbox.Captured} {
		res := run(t, sb, sandbox.Spec{View: view, Workspace: ws, Argv: sh(
			`env; echo ---; printenv; echo ---; awk 'BEGIN { for (k in ENVIRON) print k "=" ENVIRON[k] }'; echo ---; for f in /proc/[0-9]*/environ; do tr '\0' '\n' < "$f"; done`)})
		discard(res.Changes)
		out := res.Text()
		if strings.Contains(out, key) || strings.Contains(out, "OPENAI_API_KEY") {
			t.Errorf("the %v view shows shelldon's environment to the command: %s", view, out)
		}
		printed, _, _ := strings.Cut(out, "---")
		if !strings.Contains(printed, "HOME=/tmp") {
			t.Fatalf("the %v view printed no environment: %s", view, out)
		}
		for line := range strings.Lines(printed) {
			name, _, ok := strings.Cut(strings.TrimSpace(line), "=")
			if ok && !strings.HasPrefix(name, "container_host_") && !slices.Contains(sandboxEnvironment, name) {
				t.Errorf("the %v view sets %s, which the shell policy does not expect a command to see: %s", view, name, strings.TrimSpace(line))
			}
		}
	}
}
