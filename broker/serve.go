package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"shelldon/bus"
	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/giveback"
)

// maxConcurrentJobs bounds how many completions the broker runs at once.
// Core runs one turn at a time, so more than one job is a leftover of a
// turn that timed out; the bound keeps such leftovers from piling up.
const maxConcurrentJobs = 4

// Serve joins the bus as the broker and answers every JOB with a
// COMPLETION from chain, and every TRANSCRIBE with a TRANSCRIPT, until ctx
// is done. It rejoins by itself when core restarts.
func Serve(ctx context.Context, socket string, maxFrame int, chain *Chain, log *slog.Logger) error {
	slots := make(chan struct{}, maxConcurrentJobs)
	var running turnJobs
	client := &bus.Client{
		Socket:   socket,
		MaxFrame: maxFrame,
		Hello:    contracts.Hello{Role: contracts.RoleBroker, Name: "broker", Note: "providers: " + strings.Join(chain.Names(), ", ")},
		Logf:     func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) },
	}
	return client.Run(ctx, func(conn *bus.Conn, env contracts.Envelope) {
		var work func(context.Context) contracts.Envelope
		switch env.Kind {
		case contracts.KindJob:
			work = func(ctx context.Context) contracts.Envelope {
				return runJob(ctx, env, chain, log, func(text string) { stream(conn, env.Turn, text, log) })
			}
		case contracts.KindTranscribe:
			work = func(ctx context.Context) contracts.Envelope { return runTranscribe(ctx, env, chain, log) }
		case contracts.KindJobCancel:
			if n := running.cancel(env.Turn); n > 0 {
				log.Info("cancelled a job whose worker is gone", "turn", env.Turn, "jobs", n)
			}
			return
		default:
			log.Warn("broker got an envelope it does not handle", "kind", env.Kind)
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			answer(conn, busy(env), log)
			return
		}
		go func() {
			defer func() { <-slots }()
			giveback.Busy() // the job's garbage waits for the giveback after it
			// The work lasts no longer than the connection it came by: a
			// core that is gone (killed, restarted) never reads the
			// answer, and its jobs must not hold the slots its
			// successor's turns need.
			ctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			go func() {
				select {
				case <-conn.Done():
					cancel(nil)
				case <-ctx.Done():
				}
			}()
			if env.Kind == contracts.KindJob {
				defer running.add(env.Turn, cancel)()
			}
			done := work(ctx)
			if context.Cause(ctx) != errWorkerGone { // nobody to read it
				answer(conn, done, log)
			}
			if len(slots) == 1 {
				// The last job in flight: the broker idles until the next
				// turn, so the answer's garbage goes back to the kernel now
				// (about 3.5 MB of the broker's idle PSS; see BENCHMARKS.md).
				giveback.WhenQuiet()
			}
		}()
	})
}

// errWorkerGone is why a job is cancelled when core says its worker is
// gone.
var errWorkerGone = errors.New("its worker is gone")

// turnJobs are the jobs running, by turn, for core's word that a turn's
// worker is gone. It is safe for concurrent use.
type turnJobs struct {
	mu     sync.Mutex
	next   int
	byTurn map[string]map[int]context.CancelCauseFunc
}

// add counts a job of turn, cancelled by cancel; remove forgets it.
func (j *turnJobs) add(turn string, cancel context.CancelCauseFunc) (remove func()) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.byTurn == nil {
		j.byTurn = map[string]map[int]context.CancelCauseFunc{}
	}
	if j.byTurn[turn] == nil {
		j.byTurn[turn] = map[int]context.CancelCauseFunc{}
	}
	j.next++
	id := j.next
	j.byTurn[turn][id] = cancel
	return func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		delete(j.byTurn[turn], id)
		if len(j.byTurn[turn]) == 0 {
			delete(j.byTurn, turn)
		}
	}
}

// cancel cancels the jobs of turn, and says how many there were.
func (j *turnJobs) cancel(turn string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, cancel := range j.byTurn[turn] {
		cancel(errWorkerGone)
	}
	return len(j.byTurn[turn])
}

// busyReason is the answer to work beyond maxConcurrentJobs.
const busyReason = "broker busy: too many jobs at once"

// busy is the answer to env when every slot is taken.
func busy(env contracts.Envelope) contracts.Envelope {
	if env.Kind == contracts.KindTranscribe {
		var req contracts.Transcribe
		_ = env.Decode(&req) // an unreadable request is answered without its id
		return transcriptEnvelope(env, contracts.Transcript{ID: req.ID, Error: busyReason})
	}
	return completionEnvelope(env.Turn, contracts.Completion{Error: busyReason})
}

// runJob answers a job; while a provider streams the answer, the text so
// far goes to draft, coalesced (drafts), and never after the answer.
func runJob(ctx context.Context, env contracts.Envelope, chain *Chain, log *slog.Logger, draft func(text string)) contracts.Envelope {
	var job contracts.Job
	if err := env.Decode(&job); err != nil {
		return completionEnvelope(env.Turn, contracts.Completion{Error: err.Error()})
	}
	ctx, cancel := withDeadline(ctx, job.Deadline)
	defer cancel()
	started := time.Now()
	coalesced := newDrafts(clock.Real{}, draft)
	c := chain.Complete(WithDrafts(ctx, coalesced.offer), job.Messages, job.Tools)
	coalesced.stop()
	log.Info("job done", "turn", env.Turn, "ok", c.OK, "provider", c.Provider, "tries", c.Tries, "took", time.Since(started).Round(time.Millisecond), "err", c.Error)
	return completionEnvelope(env.Turn, c)
}

func runTranscribe(ctx context.Context, env contracts.Envelope, chain *Chain, log *slog.Logger) contracts.Envelope {
	var req contracts.Transcribe
	if err := env.Decode(&req); err != nil {
		return transcriptEnvelope(env, contracts.Transcript{Error: err.Error()})
	}
	ctx, cancel := withDeadline(ctx, req.Deadline)
	defer cancel()
	started := time.Now()
	t := chain.Transcribe(ctx, req.FileName, req.Audio)
	t.ID = req.ID
	log.Info("transcription done", "for", env.Sender, "bytes", len(req.Audio), "ok", t.OK, "provider", t.Provider, "took", time.Since(started).Round(time.Millisecond), "err", t.Error)
	return transcriptEnvelope(env, t)
}

// withDeadline bounds ctx by deadline, when there is one.
func withDeadline(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if deadline.IsZero() {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, contracts.OnThisClock(deadline))
}

func completionEnvelope(turn string, c contracts.Completion) contracts.Envelope {
	env, err := contracts.NewEnvelope(contracts.KindCompletion, turn, c)
	if err != nil {
		env, _ = contracts.NewEnvelope(contracts.KindCompletion, turn, contracts.Completion{Error: err.Error()})
	}
	return env
}

// transcriptEnvelope addresses t to the transport that asked.
func transcriptEnvelope(asked contracts.Envelope, t contracts.Transcript) contracts.Envelope {
	env, err := contracts.NewEnvelope(contracts.KindTranscript, "", t)
	if err != nil {
		env, _ = contracts.NewEnvelope(contracts.KindTranscript, "", contracts.Transcript{ID: t.ID, Error: err.Error()})
	}
	env.To = asked.Sender
	return env
}

// stream tells the worker of turn what its model has written so far. A
// draft that does not get through costs the owner a glimpse, nothing more.
func stream(conn *bus.Conn, turn, text string, log *slog.Logger) {
	env, err := contracts.NewEnvelope(contracts.KindStream, turn, contracts.Stream{Text: text})
	if err == nil {
		err = conn.Send(env)
	}
	if err != nil {
		log.Info("a draft of an answer did not reach its worker", "turn", turn, "err", err)
	}
}

func answer(conn *bus.Conn, env contracts.Envelope, log *slog.Logger) {
	if err := conn.Send(env); err != nil {
		log.Warn("sending an answer failed", "kind", env.Kind, "turn", env.Turn, "err", err)
	}
}
