package testhost

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMissingFailsUnderRequireAll runs a test that lacks a capability in a
// child process, with and without SHELLDON_REQUIRE_ALL, and reads the verdict.
func TestMissingFailsUnderRequireAll(t *testing.T) {
	if os.Getenv("SHELLDON_TEST_TESTHOST_CHILD") == "1" {
		return
	}
	for _, tc := range []struct {
		requireAll string
		want       string
	}{
		{"", "--- SKIP: TestLacksSomething"},
		{"1", "--- FAIL: TestLacksSomething"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLacksSomething$", "-test.v")
		cmd.Env = append(os.Environ(), "SHELLDON_TEST_TESTHOST_CHILD=1", RequireAllEnv+"="+tc.requireAll)
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "needs no-such-unicorn-tool (apt-get install unicorn") {
			t.Errorf("%s=%q: output %q, want %q and the reason", RequireAllEnv, tc.requireAll, out, tc.want)
		}
	}
}

func TestLacksSomething(t *testing.T) {
	if os.Getenv("SHELLDON_TEST_TESTHOST_CHILD") != "1" {
		t.Skip("only runs as the child of TestMissingFailsUnderRequireAll")
	}
	Tool(t, "no-such-unicorn-tool", "unicorn")
}
