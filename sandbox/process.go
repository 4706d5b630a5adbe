package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"shelldon/contracts"
)

// Process is a command that stays up in its container and is spoken to
// over its stdin and stdout, as an MCP server is: the same container as
// [Sandbox.Run]'s (read-only image, the spec's view of the workspace, its
// credentials masked, its own scratch, limits, no network but the
// proxy's), kept until the command ends, [Process.Stop] or the spec's wall
// time. The view must not be Captured: nothing a process writes comes
// back as a change set.
type Process struct {
	// Stdin is the command's stdin; closing it tells the command that
	// nothing more comes.
	Stdin io.WriteCloser
	// Stdout is the command's stdout. It ends once the command has. The
	// caller closes both when done with them.
	Stdout io.ReadCloser

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	res    Result
	err    error
}

// Start starts spec's command in a fresh container and returns while it
// runs. An error means it could not start (one wrapping [ErrBadSpec] for
// a Captured view); nothing of the run is left then. ctx bounds the
// start alone: the process runs until it ends or is stopped.
func (s *Sandbox) Start(ctx context.Context, spec Spec) (*Process, error) {
	if spec.View == Captured {
		return nil, badSpec("a process cannot have a captured view: its writes would never be shown to the owner")
	}
	r, lim, err := s.prepare(ctx, spec)
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		r.close()
		return nil, fmt.Errorf("sandbox process %s: %w", r.id, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		r.close()
		return nil, fmt.Errorf("sandbox process %s: %w", r.id, err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	p := &Process{Stdin: inW, Stdout: outR, cancel: cancel, done: make(chan struct{})}
	log := s.log.With("run", r.id)
	log.Info("sandboxed process started", contracts.AuditEvent, contracts.EventSandboxRun, "view", spec.View.String(),
		"command", quoteArgv(spec.Argv), "network", spec.Network)
	go func() {
		defer close(p.done)
		res, err := s.execute(runCtx, r.id, spec, lim, r.c, stdio{in: inR, out: outW})
		// The command is gone: its stdout ends for the reader, and a
		// write to its stdin fails rather than wait.
		outW.Close()
		inR.Close()
		if errors.Is(err, context.Canceled) {
			err = nil // stopped, as asked
		}
		if err != nil {
			err = fmt.Errorf("sandbox process %s: %w", r.id, err)
		}
		if cErr := r.close(); cErr != nil && err == nil {
			err = cErr
		}
		p.res, p.err = res, err
		log.Info("sandboxed process ended", contracts.AuditEvent, contracts.EventSandboxRun, "exit", res.ExitCode,
			"took", res.Duration.Round(time.Millisecond), "timed_out", res.TimedOut, "oom", res.OutOfMemory, "memory_peak", res.MemoryPeak)
	}()
	return p, nil
}

// Done is closed once the process has ended and its container is gone.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop kills the process, if it still runs, and waits until its container
// is gone.
func (p *Process) Stop() (Result, error) {
	p.once.Do(p.cancel)
	return p.Wait()
}

// Wait waits for the process to end and says how it did: its exit, its
// limits, and the tail of its stderr in Output.
func (p *Process) Wait() (Result, error) {
	<-p.done
	return p.res, p.err
}
