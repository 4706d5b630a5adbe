package daemon

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"shelldon/beneath"
	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/launch"
	"shelldon/daemon/mood"
	"shelldon/daemon/owner"
	"shelldon/daemon/state"
	"shelldon/daemon/turns"
	"shelldon/giveback"
	"shelldon/policy"
)

// DegradeText is the answer of a turn that failed or timed out.
const DegradeText = "…can't think right now…"

// Turn outcomes core decides, beside the turn machine's own.
const (
	OutcomeOK          = "ok"
	OutcomeFailed      = "failed" // the worker reported a failure
	OutcomeTimeout     = turns.OutcomeTimeout
	OutcomeCrashed     = turns.OutcomeCrashed
	OutcomeSpawnFailed = "spawn-failed" // no worker could be started
	// OutcomeCapped: a bound of the agent loop, not the model, ended the
	// turn, and the owner was told so; why says which.
	OutcomeCapped = "capped"
)

// turnRun is the worker of the turn in flight, and what it reported.
type turnRun struct {
	turn   *turns.Turn
	handle launch.Handle
	exited chan launch.Exit // the launcher's word that the worker is gone
	exit   launch.Exit
	// modelTime, peakRSS and usage are the worker's own figures;
	// joinedAfter is how long it took from launch to joining the bus.
	modelTime   time.Duration
	peakRSS     int64
	usage       contracts.UsageByProvider
	joinedAfter time.Duration
	// steps counts the tool steps shown to the owner (progress.go).
	steps int
}

// workerTasks bounds a worker's processes and threads where a unit holds
// it: a Go program needs a handful of threads, a runaway many more.
const workerTasks = 64

func (c *Core) turnID() string {
	if t := c.turns.Current(); t != nil {
		return t.ID
	}
	return ""
}

// startTurn opens a turn in the slot the caller holds: fence, face,
// worker. Any failure settles the turn and frees the slot, so the next
// message is never stuck behind a turn that never started.
func (c *Core) startTurn(ctx context.Context, adm turns.Admission) {
	if adm.Overflow != "" {
		adm.Text += c.keepOverflow(adm.Overflow)
	}
	giveback.Busy() // the turn's garbage waits for the giveback at its end
	t := c.turns.Begin(adm)
	r := &turnRun{turn: t}
	c.run = r
	preview := adm.Text
	if preview == "" {
		preview = adm.Preview
	}
	log := c.log.With("turn", t.ID)
	log.Info("turn started", contracts.AuditEvent, contracts.EventTurnStart, "kind", adm.Kind(), "chars", len(adm.Text))
	c.opts.Notify.Status(fmt.Sprintf("thinking (%s turn %s)", adm.Kind(), t.ID))
	c.face.thinking()
	c.say.activity(t, true)
	if err := c.writes.note("record a turn's start", c.store.StartTurn(ctx, state.TurnStart{ID: t.ID, Kind: adm.Kind(), Started: t.Started, Preview: preview})); err != nil {
		log.Error("recording the turn's start failed", "err", err)
	}
	if err := c.writes.note("record the messages a turn takes up", c.store.TakeUp(ctx, t.ID, adm.Messages)); err != nil {
		log.Error("recording the messages the turn takes up failed", "err", err)
	}

	history, err := c.store.RecentHistory(ctx, c.cfg.Turn.HistoryMessages)
	if err != nil {
		log.Error("reading history failed; the turn goes on without it", "err", err)
	}
	selfCoded, byName := c.keeper.offer(ctx, adm.Text, approval.Audience(adm.Origin))
	mcpDefs := c.mcp.Offered()
	byName = append(byName, mcpByName(selfCoded, byName, mcpDefs, adm.Text)...)
	slot := c.slots.open(t.ID, contracts.TurnInput{
		Turn: t.ID, Text: adm.Text, History: history, MaxModelCalls: c.cfg.Turn.MaxModelCalls,
		Deadline:   contracts.OnThisClock(t.Started.Add(c.cfg.Timeouts.Worker.Duration)),
		Resume:     adm.Resume,
		Approvals:  true,
		Mood:       c.brain.mood.Mood,
		MoodWhy:    c.brain.mood.Why,
		Scheduled:  adm.Scheduled,
		SelfCoded:  selfCoded,
		ByNameOnly: byName,
		MCP:        mcpDefs,
		Images:     c.media.Photos(adm.Messages),
	})

	spec := launch.Spec{
		Turn:        t.ID,
		Argv:        append(slices.Clone(c.opts.WorkerArgv), "--turn", t.ID, "--socket", c.cfg.Socket, "--state-dir", c.cfg.StateDir),
		Env:         workerEnv(os.Environ()),
		Reap:        c.cfg.Timeouts.Reap.Duration,
		Description: "shelldon turn: " + owner.Shorten(preview, 40),
		Limits: launch.Limits{
			Data:       int64(c.cfg.Worker.MemoryLimit),
			CPUSeconds: c.cfg.Worker.CPUSeconds,
			OpenFiles:  c.cfg.Worker.OpenFiles,
			// Where a unit holds the worker, its cgroup bounds it too.
			Memory:   int64(c.cfg.Worker.MemoryLimit),
			CPUQuota: time.Second,
			Tasks:    workerTasks,
		},
	}
	handle, err := c.opts.Launcher.Start(ctx, spec)
	c.slots.launched(t.ID, slot, handle, err)
	if err != nil {
		log.Error("starting the worker failed", "launcher", c.opts.Launcher.Name(), "err", err)
		c.turns.Settle(t, OutcomeSpawnFailed, err.Error())
		c.turns.Gone(t)
		c.answerDegraded(t)
		c.finish(ctx, c.turns.Finished())
		return
	}
	r.handle, r.exited = handle, make(chan launch.Exit, 1)
	if err := c.writes.note("record a turn's worker", c.store.SetTurnWorker(ctx, t.ID, handle.PID())); err != nil {
		log.Error("recording the worker's pid failed", "err", err)
	}
	go func() {
		exit := <-handle.Done()
		r.exited <- exit
		c.onLoop(func(ctx context.Context) { c.workerExited(ctx, r, exit) })
	}()
}

// keepOverflow keeps what the owner wrote during a turn beyond what one
// turn takes as a file in the workspace, beneath it without following a
// link, and says where, for the model.
func (c *Core) keepOverflow(text string) string {
	name := fmt.Sprintf("inbox/while-busy-%s.txt", c.clock.Now().UTC().Format("20060102T150405.000Z"))
	err := func() error {
		ws, err := beneath.Open(c.layout.Workspace())
		if err != nil {
			return err
		}
		defer ws.Close()
		if err := ws.MkdirAll("inbox", 0o755); err != nil {
			return err
		}
		return ws.WriteFile(name, []byte(text), 0o644)
	}()
	if err != nil {
		c.log.Error("keeping what the owner wrote beyond a turn's size", "err", err, "bytes", len(text))
		return fmt.Sprintf("\n\n[The owner wrote %d KiB more while I was busy, which I could not keep (%v).]", len(text)>>10, err)
	}
	return fmt.Sprintf("\n\n[The owner wrote %d KiB more while I was busy: it is in my workspace at %s; read it with read_file.]", len(text)>>10, name)
}

// workerExited takes the launcher's word that a turn's worker is gone.
func (c *Core) workerExited(ctx context.Context, r *turnRun, exit launch.Exit) {
	r.exit = exit
	c.log.Info("worker gone", "turn", r.turn.ID, "result", exit.Result, "code", exit.Code, "ran", exit.Duration.Round(time.Millisecond))
	joined, after := c.slots.close(r.turn.ID)
	r.joinedAfter = after
	c.turnEvent(ctx, turns.Event{Kind: turns.Exited, Turn: r.turn.ID})
	if !joined {
		// It never joined, so no frame of its can be on the way.
		c.turnEvent(ctx, turns.Event{Kind: turns.Left, Turn: r.turn.ID})
	}
}

// turnEvent does what the turn machine says an event calls for.
func (c *Core) turnEvent(ctx context.Context, ev turns.Event) {
	step := c.turns.On(ev)
	if step.Degrade == OutcomeCrashed && c.run != nil {
		// The machine knows that the worker is gone; core knows how.
		c.run.turn.Err = fmt.Sprintf("worker ended without a result (%s %d)", c.run.exit.Result, c.run.exit.Code)
	}
	if step.Degrade != "" {
		c.log.Warn("turn ended without a result; degrading", "turn", ev.Turn, "why", c.run.turn.Err)
		c.answerDegraded(c.run.turn)
	}
	if step.Kill && c.run != nil && c.run.handle != nil {
		c.run.handle.Kill()
	}
	if ev.Kind == turns.Abandon && step.Finished != nil {
		c.log.Error("the worker would not die; freeing the turn slot without it", "turn", ev.Turn, "pid", c.run.handle.PID())
	}
	c.finish(ctx, step.Finished)
}

// handleResult takes a worker's result through the fence.
func (c *Core) handleResult(ctx context.Context, env contracts.Envelope) {
	t, err := c.turns.Accept(env.Turn)
	if err != nil {
		c.log.Warn("result fenced out", "turn", env.Turn, "why", err)
		return
	}
	r := c.run
	var res contracts.Result
	if err := env.Decode(&res); err != nil {
		t.Outcome, t.Err = OutcomeFailed, err.Error()
		c.answerDegraded(t)
		c.finish(ctx, c.turns.Finished())
		return
	}
	r.modelTime, r.peakRSS, r.usage = res.ModelTime, res.PeakRSS, res.Usage
	log := c.log.With("turn", t.ID)
	for _, n := range res.Notes {
		log.Warn("worker note", "note", n)
	}
	if !res.OK {
		log.Warn("worker reported failure", "err", res.Error)
		t.Outcome, t.Err = OutcomeFailed, res.Error
		c.answerDegraded(t)
		c.finish(ctx, c.turns.Finished())
		return
	}
	// Reply and react first: the owner never waits on a memory write, and
	// a failed write never blocks the reply. A request for the owner is
	// the exception: kept before the reply that asks for it.
	reply, asks, ops := c.keepRequests(ctx, t, res.Payload, res.Ops)
	if err := policy.CheckOps(ops); err != nil {
		// The worker checks this too; a worker that did not is not
		// trusted to have.
		log.Warn("refused a turn's ops whole", "ops", len(ops), "err", err)
		reply, ops = contracts.WithRefusedOps(reply, err), nil
	}
	// A tool that cannot be tested is said so before the reply that says
	// it goes through its gate.
	ops, untestable := c.keeper.untestable(ops)
	for _, line := range untestable {
		c.say.Tell(approval.Audience(t.Admission.Origin), line)
	}
	out := contracts.Outbound{Turn: t.ID}
	if reply != "" {
		out.Text = c.media.Echo(t.Admission.Messages, reply)
	}
	c.answer(ctx, t, out)
	c.face.replied(res.Face, res.Thought)
	for _, r := range asks {
		c.auth.Ask(r)
	}
	c.brain.feel(mood.TurnOK)
	t.Outcome, t.Err = outcomeOf(res)
	// The turn is over once what it keeps is written, off the loop.
	c.turns.Keeping(t)
	c.applyOps(ctx, t, ops, func(ctx context.Context, told []string) {
		for _, line := range told {
			c.say.Tell(approval.Audience(t.Admission.Origin), line)
		}
		// The model reads in the history what became of its ops.
		c.recordExchange(ctx, t, strings.TrimSpace(strings.Join(append(append([]string{reply}, untestable...), told...), "\n\n")))
		c.finish(ctx, c.turns.Kept(t))
	})
}

// outcomeOf is the outcome of a turn that answered: ok when the model
// ended it, capped when a bound of the loop did (with which one).
func outcomeOf(res contracts.Result) (outcome, why string) {
	switch res.Stop {
	case contracts.StopModelCallCap, contracts.StopRepeatedFailure, contracts.StopDeadline:
		return OutcomeCapped, res.Stop
	}
	return OutcomeOK, ""
}

// answerDegraded answers a turn that failed: the degrade reply and face.
func (c *Core) answerDegraded(t *turns.Turn) {
	c.log.Warn("degraded", contracts.AuditEvent, contracts.EventDegrade, "turn", t.ID, "outcome", t.Outcome, "why", t.Err)
	c.answer(context.Background(), t, contracts.Outbound{Text: c.media.Echo(t.Admission.Messages, DegradeText), Turn: t.ID, Degraded: true})
	c.face.failed()
	c.brain.feel(mood.TurnFailed)
	// The owner's words stay in the history, so the next turn knows what
	// was asked even though this one could not answer.
	if t.Admission.Text != "" {
		if err := c.writes.note("record history", c.store.AppendHistory(context.Background(), t.ID, contracts.ChatUser, t.Admission.Text, t.Started)); err != nil {
			c.log.Error("recording history failed", "turn", t.ID, "err", err)
		}
	}
}

// finish records a turn that is over and hands the slot on; nil means
// the turn is not over yet.
func (c *Core) finish(ctx context.Context, t *turns.Turn) {
	if t == nil {
		return
	}
	r := c.run
	c.run = nil
	c.recordTurn(r, t.Outcome, t.Err)
	c.face.refresh() // one more turn today
	c.settleProgress(r)
	c.say.activity(t, false)
	// The reaction holds the screen for its dwell; then the mood's face.
	c.clock.AfterFunc(c.cfg.Turn.ReactionDwell.Duration, func() { c.onLoop(func(context.Context) { c.brain.show() }) })
	c.release(ctx)
	if c.turns.Current() == nil {
		// Idle until the next message, perhaps for hours: the garbage of
		// the turn goes back to the kernel now rather than at the
		// runtime's own pace, since on a 416 MB board every resident MB
		// counts; off the loop, so that a message arriving meanwhile does
		// not wait for the collection.
		giveback.WhenQuiet()
	}
}

// release hands the slot on: to a decision held during the turn if one
// is waiting (it came first), else to the catch-up turn of what arrived
// meanwhile, else it is free for the next message.
func (c *Core) release(ctx context.Context) {
	if c.draining {
		// What waits is kept: the owner's messages in the state database,
		// their decisions with their requests; the next start has them.
		c.log.Info("stopping: no turn starts", "pending", c.turns.Pending(), "held decisions", c.auth.HeldCount())
		return
	}
	for {
		out, ok := c.auth.Held(ctx)
		if !ok {
			break
		}
		if c.auth.CarryOut(ctx, out) {
			return // the decision holds the slot until it is done
		}
	}
	if next, ok := c.turns.Release(); ok {
		c.startOwnersTurn(ctx, next) // a catch-up: the owner's messages, perhaps a due schedule's text
	}
}

// recordTurn writes how a turn ended, with its worker's figures.
func (c *Core) recordTurn(r *turnRun, outcome, reason string) {
	end := c.clock.Now()
	if err := c.writes.note("record a turn's end", c.store.FinishTurn(context.Background(), state.TurnEnd{
		ID: r.turn.ID, Ended: end, Outcome: outcome, Error: reason, ModelTime: r.modelTime,
		WorkerPeak: max(r.peakRSS, r.exit.MemoryPeak), WorkerCPU: r.exit.CPUTime, WorkerExit: r.exit.Result,
		WorkerJoin: r.joinedAfter, Usage: r.usage,
	})); err != nil {
		c.log.Error("recording the turn's end failed", "turn", r.turn.ID, "err", err)
	}
	// What the turn wrote moves from the log into state.db, and the
	// high-water mark rises: off the loop, as both flush the disk.
	c.offLoop.Go(func() {
		if err := c.writes.note("checkpoint the state database", c.store.Checkpoint(context.Background(), end)); err != nil {
			c.log.Error("checkpointing the state database failed", "err", err)
		}
	})
	tokens := r.usage.Total()
	c.log.Info("turn finished", contracts.AuditEvent, contracts.EventTurnEnd, "turn", r.turn.ID, "outcome", outcome,
		"took", end.Sub(r.turn.Started).Round(time.Millisecond), "model", r.modelTime.Round(time.Millisecond),
		"prompt_tokens", tokens.PromptTokens, "completion_tokens", tokens.CompletionTokens)
	c.opts.Notify.Status(fmt.Sprintf("waiting for a message (turn %s: %s)", r.turn.ID, outcome))
}

func (c *Core) recordExchange(ctx context.Context, t *turns.Turn, payload string) {
	for _, m := range []struct{ role, text string }{{contracts.ChatUser, t.Admission.Text}, {contracts.ChatAssistant, payload}} {
		if m.text == "" {
			continue // a resumed turn has no words of the owner's
		}
		if err := c.writes.note("record history", c.store.AppendHistory(ctx, t.ID, m.role, m.text, c.clock.Now())); err != nil {
			c.log.Error("recording history failed", "turn", t.ID, "err", err)
		}
	}
}

// workerEnvKeep are the variables a worker inherits from core. Everything
// else stays behind: the worker holds nothing but what core sends it, and
// core's environment may carry a provider key in development
// (SHELLDON_PROVIDER_KEY) or a credentials directory.
var workerEnvKeep = []string{"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "GODEBUG", "GOMAXPROCS", "GOMEMLIMIT", "GOGC"}

// workerEnvTestPrefix lets the tests' re-executed test binary know it is
// to act as shelldon; it carries no secret.
const workerEnvTestPrefix = "SHELLDON_TEST_"

// workerProcessors is the worker's GOMAXPROCS when core's environment
// sets none: a worker waits on core and the broker, and a second
// processor only costs the runtime threads to wake and pages to fault
// (0.3 MB of a worker's peak; BENCHMARKS.md). Given in the environment,
// the runtime starts with it rather than shrinking to it.
const workerProcessors = "GOMAXPROCS=1"

func workerEnv(environ []string) []string {
	var out []string
	processors := false
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(workerEnvKeep, name) || strings.HasPrefix(name, "LC_") || strings.HasPrefix(name, workerEnvTestPrefix) {
			out = append(out, kv)
			processors = processors || name == "GOMAXPROCS"
		}
	}
	if !processors {
		out = append(out, workerProcessors)
	}
	return out
}
