package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// The test binary doubles as shelldon-worker: run again with mainEnv set,
// it is main.
const mainEnv = "SHELLDON_WORKER_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		main()
		return
	}
	os.Setenv(mainEnv, "1")
	os.Exit(m.Run())
}

// runWorker runs this test binary as shelldon-worker with args and
// stdin; stderr is kept only when it fails.
func runWorker(t *testing.T, stdin []byte, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return string(out), string(ee.Stderr), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("run shelldon-worker %q: %v", args, err)
	}
	return string(out), "", 0
}

// TestEval runs `shelldon-worker eval` as a worker does for python_eval:
// the request on stdin, the answer on stdout.
func TestEval(t *testing.T) {
	for _, tt := range []struct{ expression, want string }{
		{"6 * 7", `{"value":"42"}`},
		{`int("9" * 1048576)`, `{"error":"int: 1048576 digits are more than an int of at most 65536 bits has"}`},
		{"1 +", `not a Starlark expression`},
	} {
		request, _ := json.Marshal(map[string]string{"expression": tt.expression})
		out, errOut, status := runWorker(t, request, "eval")
		if status != 0 || !strings.Contains(out, tt.want) {
			t.Errorf("shelldon-worker eval of %q = %s (status %d, %s); want %s", tt.expression, out, status, errOut, tt.want)
		}
	}
}

// TestCommandLine: a command line the worker cannot take is refused with
// status 2, the reason and the usage; one that names no reachable core
// fails with status 1.
func TestCommandLine(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		status int
		want   []string
	}{
		{nil, exitUsage, []string{"--turn, --socket and --state-dir are required", "usage: shelldon-worker"}},
		{[]string{"--turn", "t-1"}, exitUsage, []string{"required"}},
		{[]string{"--bogus"}, exitUsage, []string{"flag provided but not defined: -bogus", "usage: shelldon-worker"}},
		{[]string{"--turn", "t-1", "--socket", "s", "--state-dir", "d", "extra"}, exitUsage, []string{`unexpected argument "extra"`}},
		{[]string{"eval", "extra"}, exitUsage, []string{`eval takes no arguments, got "extra"`}},
		{[]string{"--turn", "t-1", "--socket", "/nonexistent/bus.sock", "--state-dir", t.TempDir()}, exitFailed, []string{"shelldon-worker: ", "/nonexistent/bus.sock"}},
	} {
		_, errOut, status := runWorker(t, nil, tt.args...)
		if status != tt.status {
			t.Errorf("shelldon-worker %q exited %d, want %d:\n%s", tt.args, status, tt.status, errOut)
		}
		for _, w := range tt.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("shelldon-worker %q said %q, want %q in it", tt.args, errOut, w)
			}
		}
	}
}

// TestHelp: --help, -h and -help print the usage on stdout and exit 0, as
// every shelldon command's help does.
func TestHelp(t *testing.T) {
	for _, flag := range []string{"--help", "-h", "-help"} {
		out, errOut, status := runWorker(t, nil, flag)
		if status != 0 || !strings.Contains(out, "usage: shelldon-worker") || !strings.Contains(out, "--turn ID") || errOut != "" {
			t.Errorf("shelldon-worker %s = status %d, stdout %q, stderr %q; want the usage on stdout and status 0", flag, status, out, errOut)
		}
	}
}

// policyInit is the line GODEBUG=inittrace=1 writes for the policy
// package's init, with the bytes it allocated.
var policyInit = regexp.MustCompile(`(?m)^init shelldon/policy @.* ([0-9]+) bytes, ([0-9]+) allocs$`)

// TestPolicyBuildsNothingAtStart: a worker starts for every turn and
// every python_eval, and most judge no command, address or name, so the
// policy package builds its tables at their first use, not at start. The
// inittrace of an eval shows what the package's init allocated (its line
// is absent when it runs no code at all).
func TestPolicyBuildsNothingAtStart(t *testing.T) {
	cmd := exec.Command(os.Args[0], evalCommand)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	cmd.Stdin = strings.NewReader(`{"expression": "6 * 7"}`)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run shelldon-worker eval with GODEBUG=inittrace=1: %v\n%s", err, stderr.Bytes())
	}
	if !strings.Contains(stderr.String(), "init runtime @") {
		t.Fatalf("shelldon-worker eval wrote no init trace:\n%s", stderr.Bytes())
	}
	if m := policyInit.FindStringSubmatch(stderr.String()); m != nil && (m[1] != "0" || m[2] != "0") {
		t.Errorf("the policy package's init allocated %s bytes in %s allocations at start, want none:\n%s", m[1], m[2], m[0])
	}
}
