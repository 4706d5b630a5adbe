package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"shelldon/testhost"
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

// schedLine is the Go runtime's own account of its processors, printed
// every interval under GODEBUG=schedtrace.
var schedLine = regexp.MustCompile(`^SCHED .* gomaxprocs=(\d+)`)

// TestWorkerRunsOnOneProcessor: a worker runs its goroutines on one
// processor, as the runtime itself reports it once main has begun, unless
// GOMAXPROCS asks for more. The worker waits here on a bus that takes its
// connection and never answers.
func TestWorkerRunsOnOneProcessor(t *testing.T) {
	if runtime.NumCPU() < 2 {
		testhost.Missing(t, "a second CPU", "run on a machine with two or more")
	}
	sock := filepath.Join(testhost.ShortDir(t), "bus.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	for _, tc := range []struct{ env, want string }{{"", "1"}, {"GOMAXPROCS=2", "2"}} {
		t.Run("env="+tc.env, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "--turn", "t-1", "--socket", sock, "--state-dir", t.TempDir())
			cmd.Env = append(os.Environ(), "GODEBUG=schedtrace=50")
			if tc.env != "" {
				cmd.Env = append(cmd.Env, tc.env)
			}
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			lines := make(chan string)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					if m := schedLine.FindStringSubmatch(sc.Text()); m != nil {
						lines <- m[1]
					}
				}
			}()
			// The first line comes from the runtime's start, before main;
			// the third is well after.
			var got []string
			deadline := time.After(20 * time.Second)
			for len(got) < 3 {
				select {
				case n, ok := <-lines:
					if !ok {
						t.Fatalf("the worker ended after %v", got)
					}
					got = append(got, n)
				case <-deadline:
					t.Fatalf("no schedtrace lines from the worker: %v", got)
				}
			}
			if got[2] != tc.want {
				t.Errorf("the worker runs on %s processors (schedtrace: %v), want %s", got[2], got, tc.want)
			}
		})
	}
}
