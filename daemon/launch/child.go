package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Child starts each worker as a child process of core, in a process group
// of its own, under rlimits, and kills the whole group at the reap
// deadline and again once the worker's main process has exited (so a
// grandchild it left behind cannot outlive the turn).
type Child struct {
	// Output receives the workers' stdout and stderr (their logs); nil
	// means core's own stderr.
	Output io.Writer
}

// Name implements [Launcher].
func (Child) Name() string { return "child-process" }

// outputDrain is how long the worker's output is still read after it
// exits while something else holds the pipe open.
const outputDrain = 200 * time.Millisecond

type childHandle struct {
	pid  int
	done chan Exit
	kill chan struct{}
	once sync.Once
}

// Start implements [Launcher].
func (c Child) Start(ctx context.Context, spec Spec) (Handle, error) {
	if len(spec.Argv) == 0 {
		return nil, fmt.Errorf("start worker for turn %s: empty command", spec.Turn)
	}
	if spec.Reap <= 0 {
		return nil, fmt.Errorf("start worker for turn %s: no reap deadline", spec.Turn)
	}
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Env = spec.Env
	cmd.Stdout, cmd.Stderr = c.Output, c.Output
	if c.Output == nil {
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// When Output is not a file the worker writes into a pipe, and Wait
	// would read it until every holder closes it: a grandchild (killed
	// only after Wait) or a process that left the group with setsid
	// (never killed) would hold up Done.
	cmd.WaitDelay = outputDrain
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start worker for turn %s: %w", spec.Turn, err)
	}
	h := &childHandle{pid: cmd.Process.Pid, done: make(chan Exit, 1), kill: make(chan struct{})}
	// The limits are applied from outside, right after the exec: the
	// worker has run nothing the model chose by then, and a limit set
	// here cannot be skipped by the worker's own code.
	if err := applyLimits(h.pid, spec.Limits); err != nil {
		h.killGroup()
		cmd.Wait()
		return nil, fmt.Errorf("limit worker for turn %s: %w", spec.Turn, err)
	}
	go h.watch(cmd, started, spec.Reap)
	return h, nil
}

func applyLimits(pid int, l Limits) error {
	set := func(resource int, v uint64, name string) error {
		if v == 0 {
			return nil
		}
		lim := unix.Rlimit{Cur: v, Max: v}
		if err := unix.Prlimit(pid, resource, &lim, nil); err != nil {
			return fmt.Errorf("%s=%d: %w", name, v, err)
		}
		return nil
	}
	return errors.Join(
		set(unix.RLIMIT_DATA, uint64(l.Data), "RLIMIT_DATA"),
		set(unix.RLIMIT_CPU, uint64(l.CPUSeconds), "RLIMIT_CPU"),
		set(unix.RLIMIT_NOFILE, uint64(l.OpenFiles), "RLIMIT_NOFILE"),
	)
}

func (h *childHandle) watch(cmd *exec.Cmd, started time.Time, reap time.Duration) {
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	timedOut := false
	var err error
	select {
	case err = <-waited:
	case <-time.After(reap):
		timedOut = true
		h.killGroup()
		err = <-waited
	case <-h.kill:
		h.killGroup()
		err = <-waited
	}
	// Whatever the worker left in its group goes with it.
	h.killGroup()
	exit := Exit{Result: ResultSuccess, Duration: time.Since(started)}
	// Only the main process and the children it waited for are counted:
	// a process group has no totals of its own. The memory peak is left
	// to the worker's own report: Go starts a child with vfork, so the
	// kernel's ru_maxrss carries the parent's resident size from before
	// the exec, and would put core's memory on every turn.
	if ps := cmd.ProcessState; ps != nil {
		exit.CPUTime = ps.UserTime() + ps.SystemTime()
	}
	var ee *exec.ExitError
	switch {
	case timedOut:
		exit.Result = ResultTimeout
	case errors.Is(err, exec.ErrWaitDelay):
		// The worker exited 0; only the output of what it left behind
		// was cut off.
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			exit.Result, exit.Code = ResultSignal, int(ws.Signal())
		} else {
			exit.Result, exit.Code = ResultExitCode, ee.ExitCode()
		}
	case err != nil:
		exit.Result, exit.Code = ResultExitCode, -1
	}
	h.done <- exit
}

func (h *childHandle) killGroup() { syscall.Kill(-h.pid, syscall.SIGKILL) }

// PID implements [Handle].
func (h *childHandle) PID() int { return h.pid }

// Owns implements [Handle]: the worker's group is its own, so any process
// in it is the worker's.
func (h *childHandle) Owns(pid int) bool {
	if pid == h.pid {
		return true
	}
	pgid, err := unix.Getpgid(pid)
	return err == nil && pgid == h.pid
}

// Done implements [Handle].
func (h *childHandle) Done() <-chan Exit { return h.done }

// Kill implements [Handle].
func (h *childHandle) Kill() { h.once.Do(func() { close(h.kill) }) }
