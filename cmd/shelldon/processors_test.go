package main

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"testing"
	"time"

	"shelldon/demomodel"
	"shelldon/testhost"
)

// schedLine is the Go runtime's own account of its processors, printed
// every interval under GODEBUG=schedtrace.
var schedLine = regexp.MustCompile(`^SCHED .* gomaxprocs=(\d+)`)

// TestLongLivedCommandsRunOnOneProcessor: `shelldon daemon` runs its
// goroutines on one processor, as the runtime itself reports it once main
// has begun, unless GOMAXPROCS asks for more.
func TestLongLivedCommandsRunOnOneProcessor(t *testing.T) {
	if runtime.NumCPU() < 2 {
		testhost.Missing(t, "a second CPU", "run on a machine with two or more")
	}
	path := writeConfig(t, &pet{cfg: testConfig(t, serve(t, demomodel.New()))})
	for _, tc := range []struct {
		env  string
		want string
	}{{"", "1"}, {"GOMAXPROCS=2", "2"}} {
		t.Run("env="+tc.env, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "daemon", "--config", path)
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
						t.Fatalf("the daemon ended after %v", got)
					}
					got = append(got, n)
				case <-deadline:
					t.Fatalf("no schedtrace lines from the daemon: %v", got)
				}
			}
			if got[2] != tc.want {
				t.Errorf("the daemon runs on %s processors (schedtrace: %v), want %s", got[2], got, tc.want)
			}
		})
	}
}
