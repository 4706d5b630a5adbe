package tools

// python_eval runs every expression in a process of its own, started by
// the worker for that one expression: Starlark's step counter does not see
// the work done inside a builtin (a sort, a comparison, an int parsed from
// a megabyte of digits), so only the kernel can bound it. The evaluator
//
//   - limits itself before it reads the expression: RLIMIT_DATA at
//     evalMemory beyond what the Go runtime holds at start (RLIMIT_AS
//     cannot be used: the runtime reserves over a gigabyte of address
//     space it never touches, and does not start under 128 MiB of it),
//     RLIMIT_CPU, RLIMIT_NOFILE at its three standard descriptors (no
//     file, socket or pipe can be opened, so nothing can be reached: it
//     needs nothing but its stdin and stdout) and no core file; one P, so
//     it takes one of the board's cores at most. Not RLIMIT_NPROC: it
//     counts every process and thread of the user, the worker's among
//     them, and the runtime needs its threads; no Starlark builtin can
//     start a process;
//   - collects garbage hard from three quarters of evalMemory on (the Go
//     memory limit), and stops the evaluation between two steps once the
//     collector cannot keep it there (watchMemory), so that what meets
//     the hard limit is a single builtin's allocation, not a pile of
//     garbage or of values;
//   - keeps no descriptor it inherited but stdin, stdout and stderr, runs
//     in a process group of its own (so it is not taken for the worker on
//     the bus, which trusts the worker's group), and dies with the worker;
//   - is killed at evalTimeout, whatever it is doing, and reaped;
//   - reads one JSON evalRequest on stdin and writes one JSON evalAnswer
//     on stdout, both bounded; what the worker keeps of its stderr says
//     why it died.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.starlark.net/starlark"
	"golang.org/x/sys/unix"

	"shelldon/daemon/procmem"
)

const (
	// maxAnswerBytes bounds what the worker reads of an answer: a repr or
	// an error cut at maxEvalOutput, with JSON's escaping.
	maxAnswerBytes = 8 * maxEvalOutput
	// maxStderrBytes is what the worker keeps of the evaluator's stderr:
	// the Go runtime's fatal error comes first, its stacks after.
	maxStderrBytes = 4 << 10
	// evalWaitDelay is how long the evaluator's output is still read
	// after it exits or is killed. Nothing else can hold its pipes (it
	// starts no process), so in practice this is the time the goroutines
	// copying its output get to run: 100 ms was too little under load
	// (seen in CI: a finished answer lost as "WaitDelay expired").
	evalWaitDelay = time.Second
	// memoryPoll is how often watchMemory looks.
	memoryPoll = 5 * time.Millisecond
)

// evalRequest is what the worker writes to the evaluator's stdin.
type evalRequest struct {
	Expression string `json:"expression"`
}

// evalAnswer is what the evaluator writes to its stdout: the value's repr,
// or why there is none.
type evalAnswer struct {
	Value string `json:"value,omitempty"`
	Error string `json:"error,omitempty"`
}

// runEvaluator evaluates expression in a new evaluator started with argv,
// and says in words which limit stopped it, if one did.
func runEvaluator(ctx context.Context, argv []string, expression string) (evalAnswer, error) {
	request, err := json.Marshal(evalRequest{Expression: expression})
	if err != nil {
		return evalAnswer{}, fmt.Errorf("encode the request: %w", err)
	}
	deadline, cancel := context.WithTimeout(ctx, evalTimeout)
	defer cancel()
	// The default cancel is SIGKILL to the evaluator, which cannot have
	// started another process: Starlark has no builtin that could.
	cmd := exec.CommandContext(deadline, argv[0], argv[1:]...)
	stdout, stderr := &capped{limit: maxAnswerBytes}, &capped{limit: maxStderrBytes}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(request), stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = evalWaitDelay
	err = cmd.Run()
	switch {
	case err == nil:
		var answer evalAnswer
		if stdout.dropped || json.Unmarshal(stdout.buf, &answer) != nil {
			return evalAnswer{}, fmt.Errorf("the evaluator's answer was unreadable (%d bytes)", len(stdout.buf))
		}
		return answer, nil
	case ctx.Err() != nil:
		return evalAnswer{}, errors.New("the turn was cancelled")
	case deadline.Err() != nil:
		return evalAnswer{}, fmt.Errorf("stopped after %d s (the time limit); give it less to do", evalTimeout/time.Second)
	case cmd.ProcessState != nil && outOfMemory(stderr.buf, cmd.ProcessState):
		return evalAnswer{}, outOfMemoryError()
	}
	if why, _, _ := strings.Cut(strings.TrimSpace(string(stderr.buf)), "\n"); why != "" {
		return evalAnswer{}, fmt.Errorf("the evaluator failed (%w): %s", err, why)
	}
	return evalAnswer{}, fmt.Errorf("the evaluator failed: %w", err)
}

// outOfMemory reports whether the evaluator died at its memory limit: its
// stderr says it could not map memory (the Go runtime's "out of memory",
// or in a race-detector build its shadow memory's allocator), or it
// crashed holding most of evalMemory (when a mapping fails in the middle
// of a collection, Go 1.26's collector may fault instead of saying so).
// ru_maxrss also counts the worker's resident size at the fork, since Go
// starts a child with vfork, but a worker holds far less.
func outOfMemory(stderr []byte, state *os.ProcessState) bool {
	for _, said := range []string{"out of memory", "cannot allocate memory", "failed to allocate"} {
		if bytes.Contains(stderr, []byte(said)) {
			return true
		}
	}
	usage, ok := state.SysUsage().(*syscall.Rusage)
	return ok && int64(usage.Maxrss)<<10 >= evalMemory*3/4
}

// capped keeps the first limit bytes written to it and drops the rest,
// still taking them, so a flood costs the worker no memory and the
// evaluator never blocks on a full pipe.
type capped struct {
	buf     []byte
	limit   int
	dropped bool
}

func (c *capped) Write(p []byte) (int, error) {
	keep := min(len(p), c.limit-len(c.buf))
	c.buf = append(c.buf, p[:keep]...)
	c.dropped = c.dropped || keep < len(p)
	return len(p), nil
}

// ServeEval is the evaluator, `shelldon-worker eval`: it bounds this process,
// then reads one request from stdin, evaluates it and writes the answer
// to stdout. The expression is read only once the bounds hold, so nothing
// the model wrote runs without them.
func ServeEval(stdin io.Reader, stdout io.Writer) error {
	if err := limitEvaluator(); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(stdin, maxArgsBytes))
	if err != nil {
		return fmt.Errorf("eval: read the request: %w", err)
	}
	var req evalRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return fmt.Errorf("eval: the request is not JSON: %w", err)
	}
	var answer evalAnswer
	answer.Value, err = evaluate(req.Expression)
	if err != nil {
		answer.Error = err.Error()
		if len(answer.Error) > maxEvalOutput {
			// An error may quote what failed: int() its whole string.
			answer.Error = answer.Error[:maxEvalOutput] + " [cut]"
		}
	}
	if err := json.NewEncoder(stdout).Encode(answer); err != nil {
		return fmt.Errorf("eval: write the answer: %w", err)
	}
	return nil
}

// closeInherited closes the descriptors beyond stdin, stdout and stderr
// that this process was started with: exec passes on whatever the worker
// holds without close-on-exec, as it inherited it (a shell's, a service
// manager's). The Go runtime's own descriptors, opened since, all have it.
func closeInherited() error {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list the inherited descriptors: %w", err)
	}
	for _, entry := range fds {
		fd, err := strconv.Atoi(entry.Name())
		if err != nil || fd <= 2 {
			continue
		}
		// The directory's own descriptor is closed by now: EBADF.
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			if err := unix.Close(fd); err != nil {
				return fmt.Errorf("close inherited descriptor %d: %w", fd, err)
			}
		}
	}
	return nil
}

// watchMemory cancels thread once the Go runtime holds more than 13/16 of
// evalMemory: past the memory limit, so what it holds is live (the
// collector, running without a pause by then, slows the evaluation to a
// crawl), and short of RLIMIT_DATA, where the runtime dies (in Go 1.26 at
// times with a SIGSEGV in the collector rather than its "out of memory").
// The live heap that the last collection found would say it more
// exactly, but too late: it is measured only once a collection ends.
// MemStats rather than runtime/metrics, whose package init alone costs
// every worker a quarter of a millisecond (it builds the table of all
// its metrics) for the few turns that evaluate anything; the pause to
// read them is a few microseconds in a process this small.
// stop ends the watch.
func watchMemory(thread *starlark.Thread) (stop func()) {
	var stats runtime.MemStats
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(memoryPoll)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			runtime.ReadMemStats(&stats)
			if held := stats.Sys - stats.HeapReleased; held > uint64(evalMemory)*13/16 {
				thread.Cancel(outOfMemoryError().Error())
				return
			}
		}
	}()
	return func() { close(done) }
}

func outOfMemoryError() error {
	return fmt.Errorf("ran out of memory (%d MiB); build smaller values", evalMemory>>20)
}

// limitEvaluator puts this process under the evaluator's bounds.
func limitEvaluator() error {
	if err := closeInherited(); err != nil {
		return err
	}
	runtime.GOMAXPROCS(1)
	held, ok := procmem.Self("VmData")
	if !ok {
		return errors.New("cannot read VmData from /proc/self/status to bound memory")
	}
	debug.SetMemoryLimit(evalMemory * 3 / 4)
	limits := []struct {
		resource int
		name     string
		value    uint64
	}{
		{unix.RLIMIT_DATA, "RLIMIT_DATA", uint64(held + evalMemory)},
		{unix.RLIMIT_CPU, "RLIMIT_CPU", evalCPUSeconds},
		{unix.RLIMIT_NOFILE, "RLIMIT_NOFILE", 3},
		{unix.RLIMIT_CORE, "RLIMIT_CORE", 0},
	}
	for _, l := range limits {
		var lim unix.Rlimit
		if err := unix.Getrlimit(l.resource, &lim); err != nil {
			return fmt.Errorf("get %s: %w", l.name, err)
		}
		// Soft and hard alike, so nothing here can raise it again; and
		// never above what the worker had, which may be lower.
		v := min(l.value, lim.Max)
		if err := unix.Setrlimit(l.resource, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("set %s=%d: %w", l.name, v, err)
		}
	}
	return nil
}
