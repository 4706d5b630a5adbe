// Package driver drives the turn machine (package turns) for core: it
// starts each turn's worker through a [launch.Launcher] with its input,
// takes the worker's result through the machine's fence, answers first,
// shows the reaction, keeps the turn's requests and applies its ops,
// records how the turn ended, and hands the slot on — to a decision the
// owner took meanwhile, else to the catch-up turn of what arrived. A turn
// that fails or times out still answers, with the cant-think face.
package driver

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"shelldon/clock"
	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/launch"
	"shelldon/daemon/media"
	"shelldon/daemon/mood"
	"shelldon/daemon/owner"
	"shelldon/daemon/progress"
	"shelldon/daemon/state"
	"shelldon/daemon/turns"
	"shelldon/daemon/visible"
	"shelldon/giveback"
	"shelldon/policy"
)

// maxOwnerFix bounds what a degraded answer says of the model's failure.
const maxOwnerFix = 600

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

// run is the worker of the turn in flight, and what it reported.
type run struct {
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
}

// Intake is what the driver asks of the intake of the owner's messages
// ([intake.Intake]).
type Intake interface {
	// Overflow keeps what a turn does not take, and says where.
	Overflow(text string) string
	// Answer sends a turn's reply where its messages came from.
	Answer(ctx context.Context, t *turns.Turn, out contracts.Outbound)
}

// Ops keeps a turn's requests and applies its ops ([ops.Applier]).
type Ops interface {
	Requests(ctx context.Context, t *turns.Turn, payload string, ops []contracts.Op) (reply string, asks []approval.Request, rest []contracts.Op)
	Apply(ctx context.Context, t *turns.Turn, ops []contracts.Op, done func(ctx context.Context, told []string))
}

// Authority asks the owner the requests a turn kept, and holds the
// decisions taken while a turn ran ([approval.Authority]).
type Authority interface {
	Ask(r approval.Request)
	Held(ctx context.Context) (approval.Outcome, bool)
	HeldCount() int
}

// Face is what the panels show of a turn.
type Face struct {
	Thinking, Failed func()
	// Replied shows the reaction the reply picked.
	Replied func(pick, thought string)
	// Refresh redraws the status strip (one more turn today); Settle
	// shows the mood's face once the reaction's dwell is over.
	Refresh, Settle func()
}

// Driver drives one turn at a time. It is used from core's loop only;
// what it waits for off the loop (a worker's end, a batch of writes)
// comes back through OnLoop.
type Driver struct {
	Config     config.Config
	Turns      *turns.Machine
	Slots      *Slots
	Store      *state.Store
	Launcher   launch.Launcher
	WorkerArgv []string
	Clock      clock.Clock
	Log        *slog.Logger
	// Failed notes a failed write to the state for /status and returns
	// its error.
	Failed func(what string, err error) error
	// OnLoop hands work back to core's loop; OffLoop runs work off it,
	// which core waits for before the store closes.
	OnLoop  func(func(context.Context))
	OffLoop func(func())
	// Status tells the service manager what core is doing.
	Status   func(string)
	Progress *progress.Reporter
	Media    *media.Keeper
	Intake   Intake
	Ops      Ops
	Auth     Authority
	Face     Face
	// Activity shows the owner's transports that a turn is busy, or no
	// longer; Tell says one line to the owner.
	Activity func(t *turns.Turn, busy bool)
	Tell     func(to approval.Audience, text string)
	// Mood is the pet's mood, which the worker is told; Feel tells the
	// mood how a turn went.
	Mood func() mood.State
	Feel func(mood.Event)
	// Offer is the tools a turn is offered beyond the built-in ones: the
	// self-coded ones in full, those offered by name only, and the MCP
	// servers'.
	Offer func(ctx context.Context, text string, to approval.Audience) (selfCoded []contracts.ToolDefinition, byName []string, mcp []contracts.ToolDefinition)
	// Untestable takes out of a turn's ops the tools that cannot be
	// tested, with what the owner is told of them.
	Untestable func(ops []contracts.Op) (rest []contracts.Op, told []string)
	// CarryOut carries out a decision held during a turn, and reports
	// whether it holds the slot; StartOwners starts a turn of the owner's
	// messages (the token cap may ask first).
	CarryOut    func(ctx context.Context, out approval.Outcome) bool
	StartOwners func(ctx context.Context, adm turns.Admission)
	// Stopping reports that core is stopping: no turn starts.
	Stopping func() bool

	run *run
	// settle brings the mood's face back a dwell after the last turn
	// ended; each turn's end moves it, so a burst of turns settles once.
	settle clock.Timer
}

// workerTasks bounds a worker's processes and threads where a unit holds
// it: a Go program needs a handful of threads, a runaway many more.
const workerTasks = 64

// Start opens a turn in the slot the caller holds: fence, face,
// worker. Any failure settles the turn and frees the slot, so the next
// message is never stuck behind a turn that never started.
func (d *Driver) Start(ctx context.Context, adm turns.Admission) {
	if adm.Overflow != "" {
		adm.Text += d.Intake.Overflow(adm.Overflow)
	}
	giveback.Busy() // the turn's garbage waits for the giveback at its end
	t := d.Turns.Begin(adm)
	r := &run{turn: t}
	d.run = r
	d.Progress.Begin(t.ID, adm.Origin)
	preview := adm.Text
	if preview == "" {
		preview = adm.Preview
	}
	log := d.Log.With("turn", t.ID)
	log.Info("turn started", contracts.AuditEvent, contracts.EventTurnStart, "kind", adm.Kind(), "chars", len(adm.Text))
	d.Status(fmt.Sprintf("thinking (%s turn %s)", adm.Kind(), t.ID))
	d.Face.Thinking()
	d.Activity(t, true)
	if err := d.Failed("record a turn's start", d.Store.Turns().Start(ctx, state.TurnStart{ID: t.ID, Kind: adm.Kind(), Started: t.Started, Preview: preview})); err != nil {
		log.Error("recording the turn's start failed", "err", err)
	}
	if err := d.Failed("record the messages a turn takes up", d.Store.Intake().TakeUp(ctx, t.ID, adm.Messages)); err != nil {
		log.Error("recording the messages the turn takes up failed", "err", err)
	}

	history, err := d.Store.History().Recent(ctx, d.Config.Turn.HistoryMessages)
	if err != nil {
		log.Error("reading history failed; the turn goes on without it", "err", err)
	}
	selfCoded, byName, mcpDefs := d.Offer(ctx, adm.Text, approval.Audience(adm.Origin))
	feeling := d.Mood()
	slot := d.Slots.open(t.ID, contracts.TurnInput{
		Turn: t.ID, Text: adm.Text, History: history, MaxModelCalls: d.Config.Turn.MaxModelCalls,
		Deadline:   contracts.OnThisClock(t.Started.Add(d.Config.Timeouts.Worker.Duration)),
		Resume:     adm.Resume,
		Approvals:  true,
		Mood:       feeling.Mood,
		MoodWhy:    feeling.Why,
		Scheduled:  adm.Scheduled,
		SelfCoded:  selfCoded,
		ByNameOnly: byName,
		MCP:        mcpDefs,
		Images:     d.Media.Photos(adm.Messages),
	})

	spec := launch.Spec{
		Turn:        t.ID,
		Argv:        append(slices.Clone(d.WorkerArgv), "--turn", t.ID, "--socket", d.Config.Socket, "--state-dir", d.Config.StateDir),
		Env:         workerEnv(os.Environ()),
		Reap:        d.Config.Timeouts.Reap.Duration,
		Description: "shelldon turn: " + owner.Shorten(preview, 40),
		Limits: launch.Limits{
			Data:       int64(d.Config.Worker.MemoryLimit),
			CPUSeconds: d.Config.Worker.CPUSeconds,
			OpenFiles:  d.Config.Worker.OpenFiles,
			// Where a unit holds the worker, its cgroup bounds it too.
			Memory:   int64(d.Config.Worker.MemoryLimit),
			CPUQuota: time.Second,
			Tasks:    workerTasks,
		},
	}
	handle, err := d.Launcher.Start(ctx, spec)
	d.Slots.launched(t.ID, slot, handle, err)
	if err != nil {
		log.Error("starting the worker failed", "launcher", d.Launcher.Name(), "err", err)
		d.Turns.Settle(t, OutcomeSpawnFailed, err.Error())
		d.Turns.Gone(t)
		d.degrade(t)
		d.finish(ctx, d.Turns.Finished())
		return
	}
	r.handle, r.exited = handle, make(chan launch.Exit, 1)
	if err := d.Failed("record a turn's worker", d.Store.Turns().SetWorker(ctx, t.ID, handle.PID())); err != nil {
		log.Error("recording the worker's pid failed", "err", err)
	}
	go func() {
		exit := <-handle.Done()
		r.exited <- exit
		d.OnLoop(func(ctx context.Context) { d.exited(ctx, r, exit) })
	}()
}

// exited takes the launcher's word that a turn's worker is gone.
func (d *Driver) exited(ctx context.Context, r *run, exit launch.Exit) {
	r.exit = exit
	d.Log.Info("worker gone", "turn", r.turn.ID, "result", exit.Result, "code", exit.Code, "ran", exit.Duration.Round(time.Millisecond))
	joined, after := d.Slots.close(r.turn.ID)
	r.joinedAfter = after
	d.Event(ctx, turns.Event{Kind: turns.Exited, Turn: r.turn.ID})
	if !joined {
		// It never joined, so no frame of its can be on the way.
		d.Event(ctx, turns.Event{Kind: turns.Left, Turn: r.turn.ID})
	}
}

// Event does what the turn machine says an event calls for.
func (d *Driver) Event(ctx context.Context, ev turns.Event) {
	step := d.Turns.On(ev)
	if step.Degrade == OutcomeCrashed && d.run != nil {
		// The machine knows that the worker is gone; core knows how.
		d.run.turn.Err = fmt.Sprintf("worker ended without a result (%s %d)", d.run.exit.Result, d.run.exit.Code)
	}
	if step.Degrade != "" {
		d.Log.Warn("turn ended without a result; degrading", "turn", ev.Turn, "why", d.run.turn.Err)
		d.degrade(d.run.turn)
	}
	if step.Kill && d.run != nil && d.run.handle != nil {
		d.run.handle.Kill()
	}
	if ev.Kind == turns.Abandon && step.Finished != nil {
		d.Log.Error("the worker would not die; freeing the turn slot without it", "turn", ev.Turn, "pid", d.run.handle.PID())
	}
	d.finish(ctx, step.Finished)
}

// Result takes a worker's result through the fence.
func (d *Driver) Result(ctx context.Context, env contracts.Envelope) {
	t, err := d.Turns.Accept(env.Turn)
	if err != nil {
		d.Log.Warn("result fenced out", "turn", env.Turn, "why", err)
		return
	}
	r := d.run
	var res contracts.Result
	if err := env.Decode(&res); err != nil {
		t.Outcome, t.Err = OutcomeFailed, err.Error()
		d.degrade(t)
		d.finish(ctx, d.Turns.Finished())
		return
	}
	r.modelTime, r.peakRSS, r.usage = res.ModelTime, res.PeakRSS, res.Usage
	log := d.Log.With("turn", t.ID)
	for _, n := range res.Notes {
		log.Warn("worker note", "note", n)
	}
	if !res.OK {
		log.Warn("worker reported failure", "err", res.Error)
		t.Outcome, t.Err = OutcomeFailed, res.Error
		d.degradeSaying(t, res.OwnerFix)
		d.finish(ctx, d.Turns.Finished())
		return
	}
	// Reply and react first: the owner never waits on a memory write, and
	// a failed write never blocks the reply. A request for the owner is
	// the exception: kept before the reply that asks for it.
	reply, asks, ops := d.Ops.Requests(ctx, t, res.Payload, res.Ops)
	if err := policy.CheckOps(ops); err != nil {
		// The worker checks this too; a worker that did not is not
		// trusted to have.
		log.Warn("refused a turn's ops whole", "ops", len(ops), "err", err)
		reply, ops = contracts.WithRefusedOps(reply, err), nil
	}
	// A tool that cannot be tested is said so before the reply that says
	// it goes through its gate.
	ops, untestable := d.Untestable(ops)
	for _, line := range untestable {
		d.Tell(approval.Audience(t.Admission.Origin), line)
	}
	out := contracts.Outbound{Turn: t.ID}
	if reply != "" {
		out.Text = d.Media.Echo(t.Admission.Messages, reply)
	}
	d.Intake.Answer(ctx, t, out)
	d.Face.Replied(res.Face, res.Thought)
	for _, r := range asks {
		d.Auth.Ask(r)
	}
	d.Feel(mood.TurnOK)
	t.Outcome, t.Err = outcomeOf(res)
	// The turn is over once what it keeps is written, off the loop.
	d.Turns.Keeping(t)
	d.Ops.Apply(ctx, t, ops, func(ctx context.Context, told []string) {
		for _, line := range told {
			d.Tell(approval.Audience(t.Admission.Origin), line)
		}
		// The model reads in the history what became of its ops.
		d.recordExchange(ctx, t, strings.TrimSpace(strings.Join(append(append([]string{reply}, untestable...), told...), "\n\n")))
		d.finish(ctx, d.Turns.Kept(t))
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

// degrade answers a turn that failed: the degrade reply and face.
func (d *Driver) degrade(t *turns.Turn) { d.degradeSaying(t, "") }

// degradeSaying is degrade that tells the owner, besides, what only they
// can fix ("" for nothing): a model that cannot call tools, a key
// refused. Without it the pet would only ever say it cannot think, and
// the owner would not learn why.
func (d *Driver) degradeSaying(t *turns.Turn, ownerFix string) {
	d.Log.Warn("degraded", contracts.AuditEvent, contracts.EventDegrade, "turn", t.ID, "outcome", t.Outcome, "why", t.Err)
	text := DegradeText
	if ownerFix != "" {
		text += "\n\nMy model needs you: " + visible.Text(owner.Shorten(ownerFix, maxOwnerFix))
	}
	d.Intake.Answer(context.Background(), t, contracts.Outbound{Text: d.Media.Echo(t.Admission.Messages, text), Turn: t.ID, Degraded: true})
	d.Face.Failed()
	d.Feel(mood.TurnFailed)
	// The owner's words stay in the history, so the next turn knows what
	// was asked even though this one could not answer.
	if t.Admission.Text != "" {
		if err := d.Failed("record history", d.Store.History().Append(context.Background(), t.ID, contracts.ChatUser, t.Admission.Text, t.Started)); err != nil {
			d.Log.Error("recording history failed", "turn", t.ID, "err", err)
		}
	}
}

// finish records a turn that is over and hands the slot on; nil means
// the turn is not over yet.
func (d *Driver) finish(ctx context.Context, t *turns.Turn) {
	if t == nil {
		return
	}
	r := d.run
	d.run = nil
	d.record(r, t.Outcome, t.Err)
	d.Face.Refresh() // one more turn today
	d.Progress.Settle(t.ID)
	d.Activity(t, false)
	// The reaction holds the screen for its dwell; then the mood's face,
	// once for a burst of turns: an earlier turn's settle would find the
	// newer reaction holding the screen, and still count as a chore
	// (giveback would let go once for each turn of the burst).
	if d.settle != nil {
		d.settle.Stop()
	}
	d.settle = d.Clock.AfterFunc(d.Config.Turn.ReactionDwell.Duration, func() {
		d.OnLoop(func(context.Context) {
			d.Face.Settle()
			if d.Turns.Current() == nil {
				// The mood's face, a minute after the last turn and well
				// after its release: a chore, whose pages go back at once
				// rather than at core's next minute check.
				giveback.AfterChore()
			}
		})
	})
	d.Release(ctx)
	if d.Turns.Current() == nil {
		// Idle until the next message, perhaps for hours: the garbage of
		// the turn goes back to the kernel now rather than at the
		// runtime's own pace, since on a 416 MB board every resident MB
		// counts; off the loop, so that a message arriving meanwhile does
		// not wait for the collection.
		giveback.WhenQuiet()
	}
}

// Release hands the slot on: to a decision held during the turn if one
// is waiting (it came first), else to the catch-up turn of what arrived
// meanwhile, else it is free for the next message.
func (d *Driver) Release(ctx context.Context) {
	if d.Stopping() {
		// What waits is kept: the owner's messages in the state database,
		// their decisions with their requests; the next start has them.
		d.Log.Info("stopping: no turn starts", "pending", d.Turns.Pending(), "held decisions", d.Auth.HeldCount())
		return
	}
	for {
		out, ok := d.Auth.Held(ctx)
		if !ok {
			break
		}
		if d.CarryOut(ctx, out) {
			return // the decision holds the slot until it is done
		}
	}
	if next, ok := d.Turns.Release(); ok {
		d.StartOwners(ctx, next) // a catch-up: the owner's messages, perhaps a due schedule's text
	}
}

// record writes how a turn ended, with its worker's figures.
func (d *Driver) record(r *run, outcome, reason string) {
	end := d.Clock.Now()
	if err := d.Failed("record a turn's end", d.Store.Turns().Finish(context.Background(), state.TurnEnd{
		ID: r.turn.ID, Ended: end, Outcome: outcome, Error: reason, ModelTime: r.modelTime,
		WorkerPeak: max(r.peakRSS, r.exit.MemoryPeak), WorkerCPU: r.exit.CPUTime, WorkerExit: r.exit.Result,
		WorkerJoin: r.joinedAfter, Usage: r.usage,
	})); err != nil {
		d.Log.Error("recording the turn's end failed", "turn", r.turn.ID, "err", err)
	}
	// What the turn wrote moves from the log into state.db, and the
	// high-water mark rises: off the loop, as both flush the disk.
	d.OffLoop(func() {
		if err := d.Failed("checkpoint the state database", d.Store.Checkpoint(context.Background(), end)); err != nil {
			d.Log.Error("checkpointing the state database failed", "err", err)
		}
	})
	tokens := r.usage.Total()
	d.Log.Info("turn finished", contracts.AuditEvent, contracts.EventTurnEnd, "turn", r.turn.ID, "outcome", outcome,
		"took", end.Sub(r.turn.Started).Round(time.Millisecond), "model", r.modelTime.Round(time.Millisecond),
		"prompt_tokens", tokens.PromptTokens, "completion_tokens", tokens.CompletionTokens)
	d.Status(fmt.Sprintf("waiting for a message (turn %s: %s)", r.turn.ID, outcome))
}

func (d *Driver) recordExchange(ctx context.Context, t *turns.Turn, payload string) {
	for _, m := range []struct{ role, text string }{{contracts.ChatUser, t.Admission.Text}, {contracts.ChatAssistant, payload}} {
		if m.text == "" {
			continue // a resumed turn has no words of the owner's
		}
		if err := d.Failed("record history", d.Store.History().Append(ctx, t.ID, m.role, m.text, d.Clock.Now())); err != nil {
			d.Log.Error("recording history failed", "turn", t.ID, "err", err)
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

// InFlight is the id of the turn in flight, or "" between turns.
func (d *Driver) InFlight() string {
	if d.run == nil {
		return ""
	}
	return d.run.turn.ID
}

// Shutdown kills a running worker so that a stopping core leaves nothing
// behind; its result could not be accepted by the next core anyway.
func (d *Driver) Shutdown() {
	r := d.run
	if r == nil || r.handle == nil || r.turn.Exited() {
		return
	}
	d.Log.Info("stopping: killing the running worker", "turn", r.turn.ID)
	r.handle.Kill()
	select {
	case r.exit = <-r.exited:
	case <-time.After(d.Config.Timeouts.Reap.Duration):
		d.Log.Error("the running worker did not end after a kill", "turn", r.turn.ID, "pid", r.handle.PID())
	}
	if d.Turns.Settled(r.turn) {
		d.record(r, r.turn.Outcome, r.turn.Err)
	} else {
		d.record(r, state.OutcomeInterrupted, "core stopped")
	}
}
