package launch_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shelldon/daemon/launch"
	"shelldon/daemon/launch/launchtest"
)

// What every launcher does is launchtest's (conformance_test.go); these
// are what only the child-process launcher does.

// waitLimit is a reap deadline no test here reaches.
const waitLimit = 20 * time.Second

// lockedBuffer is a worker's output, safe to read while the copier writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startChild starts spec under c as turn t-child.
func startChild(t *testing.T, c launch.Child, spec launch.Spec) *launchtest.Worker {
	t.Helper()
	spec.Turn = "t-child"
	return launchtest.Start(t, c, spec)
}

func TestChildSendsTheWorkersOutputToOutput(t *testing.T) {
	out := &lockedBuffer{}
	h := startChild(t, launch.Child{Output: out}, launch.Spec{Argv: []string{"/bin/sh", "-c", "echo said; echo complained >&2"}, Reap: waitLimit})
	if got := h.Wait(t); got.Result != launch.ResultSuccess {
		t.Fatalf("Exit = %+v, want success", got)
	}
	if !strings.Contains(out.String(), "said") || !strings.Contains(out.String(), "complained") {
		t.Errorf("Output = %q, want the worker's stdout and stderr", out.String())
	}
}

// A worker can leave its process group with setsid(2), and then the group
// kill does not reach it. This is a known limit of the child-process
// launcher (the systemd launcher's cgroup holds every descendant); what
// must hold is that the escaped process is not taken for the worker, and
// that it cannot keep Done from reporting.
func TestChildSetsidEscapesTheGroupButIsNotOwned(t *testing.T) {
	fifo := launchtest.FIFO(t, t.TempDir())
	h := startChild(t, launch.Child{Output: &lockedBuffer{}}, launch.Spec{
		Argv: []string{"/bin/sh", "-c", `setsid sh -c 'echo $$ > "$FIFO"; exec sleep 60' & wait`},
		Env:  []string{"FIFO=" + fifo},
		Reap: 300 * time.Millisecond,
	})
	escaped := launchtest.ReadPID(t, fifo)
	launchtest.KillOnCleanup(t, escaped)
	if h.Owns(escaped) {
		t.Errorf("Owns(%d) = true for a process that left the worker's group", escaped)
	}
	if got := h.Wait(t); got.Result != launch.ResultTimeout {
		t.Errorf("Exit = %+v, want %s", got, launch.ResultTimeout)
	}
	if launchtest.Doomed(t, escaped) {
		t.Logf("process %d that called setsid died with the group: the known limit is closed; update this test", escaped)
	}
}

// A systemd unit starts with systemd's own rlimits; a child starts with
// core's, which a zero limit leaves as they are.
func TestChildZeroLimitsAreLeftAlone(t *testing.T) {
	h := startChild(t, launch.Child{}, launch.Spec{Argv: []string{"sleep", "30"}, Reap: waitLimit})
	var own, got unix.Rlimit
	if err := unix.Prlimit(0, unix.RLIMIT_NOFILE, nil, &own); err != nil {
		t.Fatal(err)
	}
	if err := unix.Prlimit(h.PID(), unix.RLIMIT_NOFILE, nil, &got); err != nil {
		t.Fatal(err)
	}
	if got != own {
		t.Errorf("RLIMIT_NOFILE of a worker with no limits = %+v, want core's %+v", got, own)
	}
}

// The child applies its limits itself, after the exec: one the kernel
// refuses fails the start, and the worker it had started is gone (systemd
// clamps such a limit instead).
func TestChildRefusesAnImpossibleLimit(t *testing.T) {
	sleep := []string{"sleep", "31.4159"}
	spec := launch.Spec{Turn: "t-bad", Argv: sleep, Reap: time.Second, Limits: launch.Limits{OpenFiles: 1 << 30}}
	h, err := launch.Child{}.Start(context.Background(), spec)
	if err == nil {
		h.Kill()
		<-h.Done()
		t.Fatalf("Start(%+v) = nil error, want one", spec)
	}
	if h != nil || !strings.Contains(err.Error(), "t-bad") || !strings.Contains(err.Error(), "RLIMIT_NOFILE") {
		t.Errorf("Start(%+v) = %v, %q; want no handle and an error naming the turn and RLIMIT_NOFILE", spec, h, err)
	}
	if left := launchtest.RunningWith(t, sleep); len(left) > 0 {
		t.Errorf("a failed Start left %q running as %v", sleep, left)
	}
}
