package broker

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"shelldon/bus"
	"shelldon/contracts"
)

// maxConcurrentJobs bounds how many completions the broker runs at once.
// Core runs one turn at a time, so more than one job is a leftover of a
// turn that timed out; the bound keeps such leftovers from piling up.
const maxConcurrentJobs = 4

// Serve joins the bus as the broker and answers every JOB with a
// COMPLETION from chain, until ctx is done. It rejoins by itself when
// core restarts.
func Serve(ctx context.Context, socket string, maxFrame int, chain *Chain, log *slog.Logger) error {
	slots := make(chan struct{}, maxConcurrentJobs)
	client := &bus.Client{
		Socket:   socket,
		MaxFrame: maxFrame,
		Hello:    contracts.Hello{Role: contracts.RoleBroker, Name: "broker", Note: "providers: " + strings.Join(chain.Names(), ", ")},
		Logf:     func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) },
	}
	return client.Run(ctx, func(conn *bus.Conn, env contracts.Envelope) {
		if env.Kind != contracts.KindJob {
			log.Warn("broker got an envelope it does not handle", "kind", env.Kind)
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			answer(conn, env.Turn, contracts.Completion{Error: "broker busy: too many jobs at once"}, log)
			return
		}
		go func() {
			defer func() { <-slots }()
			// The job lasts no longer than the connection it came by: a
			// core that is gone (killed, restarted) never reads the
			// answer, and its jobs must not hold the slots its
			// successor's turns need.
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			go func() {
				select {
				case <-conn.Done():
					cancel()
				case <-ctx.Done():
				}
			}()
			started := time.Now()
			c := runJob(ctx, env, chain)
			log.Info("job done", "turn", env.Turn, "ok", c.OK, "provider", c.Provider, "tries", c.Tries, "took", time.Since(started).Round(time.Millisecond), "err", c.Error)
			answer(conn, env.Turn, c, log)
			if len(slots) == 1 {
				// The last job in flight: the broker idles until the next
				// turn, so the answer's garbage goes back to the kernel now
				// (about 3.5 MB of the broker's idle PSS; see BENCHMARKS.md).
				debug.FreeOSMemory()
			}
		}()
	})
}

func runJob(ctx context.Context, env contracts.Envelope, chain *Chain) contracts.Completion {
	var job contracts.Job
	if err := env.Decode(&job); err != nil {
		return contracts.Completion{Error: err.Error()}
	}
	if !job.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, job.Deadline)
		defer cancel()
	}
	return chain.Complete(ctx, job.Messages, job.Tools)
}

func answer(conn *bus.Conn, turn string, c contracts.Completion, log *slog.Logger) {
	env, err := contracts.NewEnvelope(contracts.KindCompletion, turn, c)
	if err == nil {
		err = conn.Send(env)
	}
	if err != nil {
		log.Warn("sending a completion failed", "turn", turn, "err", err)
	}
}
