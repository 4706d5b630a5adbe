package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"shelldon/clock"
	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/hub"
	"shelldon/daemon/launch"
	"shelldon/daemon/mood"
	"shelldon/daemon/sdnotify"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/daemon/tools"
	"shelldon/panel/faces"
)

// DegradeText is the answer of a turn that failed or timed out.
const DegradeText = "…can't think right now…"

// Turn outcomes, as the turns table records them.
const (
	OutcomeOK          = "ok"
	OutcomeFailed      = "failed"       // the worker reported a failure
	OutcomeTimeout     = "timeout"      // no result within T
	OutcomeCrashed     = "crashed"      // the worker ended without a result
	OutcomeSpawnFailed = "spawn-failed" // no worker could be started
)

// Options configure a core.
type Options struct {
	Config   config.Config
	Store    *state.Store
	Launcher launch.Launcher
	// WorkerArgv starts a worker; core appends the turn's own flags.
	WorkerArgv []string
	Clock      clock.Clock
	Log        *slog.Logger
	// Notify tells systemd that core is ready, what it is doing, and that
	// its loop still answers (the watchdog); nil outside a service.
	Notify *sdnotify.Notifier
	// Sandbox runs the read-only shell commands of turns; nil when the
	// host has none, and NoSandbox says why (for the model and the owner).
	Sandbox   Sandbox
	NoSandbox error
	// WedgeHook, for the tests of a service's watchdog only, makes the
	// message [WedgeMessage] block the turn loop until core stops, as a
	// bug would. `shelldon daemon` sets it when SHELLDON_TEST_HOOKS=1.
	WedgeHook bool
}

// WedgeMessage blocks the turn loop when [Options.WedgeHook] is set.
const WedgeMessage = "/test-wedge-the-loop"

// Core runs turns.
type Core struct {
	opts   Options
	cfg    config.Config
	layout statedir.Layout
	store  *state.Store
	log    *slog.Logger
	clock  clock.Clock

	inbox   chan contracts.Envelope
	events  chan event
	probes  chan chan struct{} // the watchdog's: answered by the loop
	stopped chan struct{}      // closed when the loop ends; late events are dropped
	hub     *hub.Hub
	// returning is set while an idle core gives memory back to the kernel.
	returning atomic.Bool
	face      *presence

	// Owned by the loop goroutine.
	faces faces.Registry
	// tools are the built-in tools, which check the calls workers ask
	// core to run; toolbox adds the self-coded ones of the moment.
	tools *tools.Registry
	arb   arbiter
	fence fence
	turn  *activeTurn
	// held are decisions that came during a turn, in arrival order.
	held []heldDecision
	// mood is how the pet feels; feelings brings it events from any
	// goroutine.
	mood     mood.State
	moodCfg  mood.Config
	feelings chan mood.Event
	// dueTimer fires at the next scheduled turn; skipped says what the
	// budget last held back, for /status.
	dueTimer clock.Timer
	skipped  string
	// started is when Run began, for the owner's /status.
	started time.Time

	// Shared with the hub's goroutines, which authorise workers and hand
	// them their input.
	mu       sync.Mutex
	starting map[string]*workerSlot
}

// workerSlot is what the hub needs to admit one turn's worker.
type workerSlot struct {
	ready  chan struct{} // closed once handle is set (or the start failed)
	handle launch.Handle
	input  contracts.TurnInput
	sent   bool
	// launched is when core asked the launcher; joinedAfter is how long
	// the worker then took to join the bus (a unit's start job included).
	launched    time.Time
	joinedAfter time.Duration
}

// activeTurn is the turn in flight.
type activeTurn struct {
	id        string
	admission Admission
	started   time.Time
	handle    launch.Handle
	timer     clock.Timer
	fenced    bool // the fence is closed: result handled, or degraded
	exited    bool // the worker's processes are gone
	exit      launch.Exit
	left      bool // the worker's bus connection is gone (or never was)
	outcome   string
	err       string
	modelTime time.Duration
	peakRSS   int64
	// joinedAfter is how long the worker took from launch to joining.
	joinedAfter time.Duration
}

type eventKind int

const (
	evTimeout  eventKind = iota // T passed without a result
	evExit                      // the worker is gone
	evAbandon                   // the worker outlived T and a kill by another R
	evResume                    // an owner's decision was carried out: resume its turn
	evExpire                    // time to drop parked calls nobody decided on
	evMoodTick                  // the reflex: the mood drifts
	evShowMood                  // a reaction's dwell is over: the mood's face again
	evDue                       // a scheduled turn is due
)

// expiryCheck is how often parked calls are checked for expiry.
const expiryCheck = time.Minute

type event struct {
	kind eventKind
	turn string
	exit launch.Exit
	// For evResume: the parked call, its answer, and what the owner said.
	parked   state.PendingApproval
	answer   string
	decision string
}

// New makes a core; [Core.Run] starts it.
func New(opts Options) (*Core, error) {
	if opts.Store == nil || opts.Launcher == nil || len(opts.WorkerArgv) == 0 {
		return nil, errors.New("new core: a store, a launcher and a worker command are required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	c := &Core{
		opts:     opts,
		cfg:      opts.Config,
		layout:   statedir.Layout{Root: opts.Config.StateDir},
		store:    opts.Store,
		log:      opts.Log,
		clock:    opts.Clock,
		inbox:    make(chan contracts.Envelope, 1024),
		events:   make(chan event, 16),
		probes:   make(chan chan struct{}),
		stopped:  make(chan struct{}),
		starting: map[string]*workerSlot{},
		feelings: make(chan mood.Event, feelingsQueue),
	}
	night, err := mood.ParseWindow(opts.Config.Mood.Night)
	if err != nil {
		return nil, fmt.Errorf("new core: mood.night: %w", err)
	}
	c.moodCfg = mood.Config{Night: night, Lonely: opts.Config.Mood.Lonely.Duration}
	c.face = &presence{clock: c.clock, dwell: c.cfg.Turn.ReactionDwell.Duration, push: c.pushSnapshot, status: c.panelStatus}
	c.tools = tools.Builtins(tools.Env{Workspace: c.layout.Workspace(), Vault: c.layout.Vault(), Clock: c.clock})
	return c, nil
}

// Run listens on the bus and runs turns until ctx is done. Ready, when
// not nil, is called once the bus accepts connections.
func (c *Core) Run(ctx context.Context, ready func()) error {
	logf := func(format string, args ...any) { c.log.Info(fmt.Sprintf(format, args...)) }
	h, err := hub.Listen(c.cfg.Socket, hub.Config{
		QueueLength: c.cfg.Bus.QueueLength,
		MaxFrame:    int(c.cfg.Bus.MaxFrame),
		Access: hub.Access{
			Connect:    c.cfg.Bus.AllowedUIDs,
			Brokers:    hub.LookupUIDs("bus.broker_users", c.cfg.Bus.BrokerUsers, logf),
			Transports: hub.LookupUIDs("bus.transport_users", c.cfg.Bus.TransportUsers, logf),
		},
		VerifyWorker: c.verifyWorker,
		Core:         c.inbox,
		OnJoin:       c.onJoin,
		OnLeave:      c.onLeave,
		Logf:         logf,
		// A worker's job outlives no broker restart longer than the
		// worker waits for it.
		HoldFor: c.cfg.Timeouts.Worker.Duration,
		Clock:   c.clock,
	})
	if err != nil {
		return fmt.Errorf("start core: %w", err)
	}
	c.hub = h
	c.started = c.clock.Now()
	if n := c.store.Recovered(); n > 0 {
		c.log.Warn("turns left running by an earlier core were marked interrupted", "count", n)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- h.Serve(ctx) }()
	c.loadFaces()
	c.log.Info("core ready", "socket", c.cfg.Socket, "launcher", c.opts.Launcher.Name(), "state", c.cfg.StateDir)
	c.loadMood(ctx)
	c.showMood()
	if ready != nil {
		ready()
	}
	c.opts.Notify.Ready("waiting for a message")
	// The first check waits too, so that the transports have rejoined a
	// restarted core before it tells the owner of what expired.
	c.clock.AfterFunc(expiryCheck, func() { c.post(event{kind: evExpire}) })
	c.clock.AfterFunc(c.cfg.Mood.Tick.Duration, func() { c.post(event{kind: evMoodTick}) })
	c.armScheduler(ctx)
	go c.opts.Notify.Watchdog(ctx, c.alive)
	c.loop(ctx)
	c.opts.Notify.Stopping()
	c.shutdown()
	close(c.stopped)
	return <-served
}

// loop is the one goroutine that owns the arbiter, the fence and the
// turn: turn admission is serial, so none of them needs a lock.
func (c *Core) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case env := <-c.inbox:
			c.handleEnvelope(ctx, env)
		case ev := <-c.events:
			c.handleEvent(ctx, ev)
		case ev := <-c.feelings:
			c.moodTo(ctx, c.mood.On(ev, c.clock.Now(), c.moodCfg))
		case reply := <-c.probes:
			close(reply)
		}
	}
}

// alive reports whether the loop answers before ctx ends: a loop stuck
// in a call that never returns stops the watchdog's pings, and systemd
// restarts core.
func (c *Core) alive(ctx context.Context) bool {
	reply := make(chan struct{})
	select {
	case c.probes <- reply:
	case <-ctx.Done():
		return false
	}
	select {
	case <-reply:
		return true
	case <-ctx.Done():
		return false
	}
}

// shutdown kills a running worker so that a stopping core leaves nothing
// behind; its result could not be accepted by the next core anyway.
func (c *Core) shutdown() {
	if t := c.turn; t != nil && t.handle != nil && !t.exited {
		c.log.Info("stopping: killing the running worker", "turn", t.id)
		t.handle.Kill()
		deadline := time.After(c.cfg.Timeouts.Reap.Duration)
		for gone := false; !gone; {
			select {
			case ev := <-c.events:
				gone = ev.kind == evExit && ev.turn == t.id
			case <-deadline:
				c.log.Error("the running worker did not end after a kill", "turn", t.id, "pid", t.handle.PID())
				gone = true
			}
		}
		if t.fenced {
			c.finishTurnRecord(t, t.outcome, t.err)
		} else {
			c.finishTurnRecord(t, state.OutcomeInterrupted, "core stopped")
		}
	}
}

func (c *Core) handleEnvelope(ctx context.Context, env contracts.Envelope) {
	switch env.Kind {
	case contracts.KindInbound:
		var in contracts.Inbound
		if err := env.Decode(&in); err != nil || in.Text == "" {
			c.log.Warn("dropped an unreadable inbound message", "from", env.Sender, "err", err)
			return
		}
		if c.opts.WedgeHook && in.Text == WedgeMessage {
			c.log.Warn("test hook: the turn loop blocks until core stops")
			<-ctx.Done()
			return
		}
		// An owner's command is not a message for the model: it needs
		// no turn and does not wait for one.
		if c.ownerCommand(ctx, Origin{Transport: env.Sender, Chat: in.Chat}, in.Text) {
			return
		}
		c.feel(mood.OwnerMessage)
		adm, now := c.arb.submit(in.Text, Origin{Transport: env.Sender, Chat: in.Chat})
		if !now {
			c.log.Info("message joined the pending slot", "turn", c.turnID(), "pending", c.arb.pendingCount())
			return
		}
		c.startTurn(ctx, adm)
	case contracts.KindResult:
		c.handleResult(ctx, env)
	case contracts.KindExec:
		c.handleExec(ctx, env)
	case contracts.KindDecision:
		c.handleDecision(ctx, env)
	case kindWorkerLeft:
		if t := c.turn; t != nil && t.id == env.Turn {
			t.left = true
			c.settle(ctx, t)
		}
	default:
		c.log.Warn("core got an envelope it does not handle", "kind", env.Kind)
	}
}

func (c *Core) turnID() string {
	if c.turn == nil {
		return ""
	}
	return c.turn.id
}

func newTurnID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// startTurn opens a turn: fence, face, worker. Any failure closes the
// fence and frees the arbiter, so the next message is never stuck behind
// a turn that never started.
func (c *Core) startTurn(ctx context.Context, adm Admission) {
	id := newTurnID()
	now := c.clock.Now()
	t := &activeTurn{id: id, admission: adm, started: now}
	c.turn = t
	c.fence.open(id)
	kind := "chat"
	switch {
	case adm.CatchUp:
		kind = "catch-up"
	case adm.Resume != nil:
		kind = "resume"
	case adm.Scheduled:
		kind = KindScheduled
	}
	preview := adm.Text
	if preview == "" {
		preview = adm.Preview
	}
	log := c.log.With("turn", id)
	log.Info("turn started", contracts.AuditEvent, contracts.EventTurnStart, "kind", kind, "chars", len(adm.Text))
	c.opts.Notify.Status(fmt.Sprintf("thinking (%s turn %s)", kind, id))
	name, glyphs := c.glyphs(faces.Thinking)
	c.face.show(name, glyphs, "…")
	c.announceActivity(t, true)
	if err := c.store.StartTurn(ctx, state.TurnStart{ID: id, Kind: kind, Started: now, Preview: preview}); err != nil {
		log.Error("recording the turn's start failed", "err", err)
	}

	history, err := c.store.RecentHistory(ctx, c.cfg.Turn.HistoryMessages)
	if err != nil {
		log.Error("reading history failed; the turn goes on without it", "err", err)
	}
	slot := &workerSlot{ready: make(chan struct{}), input: contracts.TurnInput{
		Turn: id, Text: adm.Text, History: history,
		Deadline:  now.Add(c.cfg.Timeouts.Worker.Duration),
		Resume:    adm.Resume,
		Approvals: true,
		Mood:      c.mood.Mood,
		MoodWhy:   c.mood.Why,
		Scheduled: adm.Scheduled,
	}}
	c.mu.Lock()
	c.starting[id] = slot
	c.mu.Unlock()

	spec := launch.Spec{
		Turn:        id,
		Argv:        append(slices.Clone(c.opts.WorkerArgv), "--turn", id, "--socket", c.cfg.Socket, "--state-dir", c.cfg.StateDir),
		Env:         workerEnv(os.Environ()),
		Reap:        c.cfg.Timeouts.Reap.Duration,
		Description: "shelldon turn: " + shorten(preview, 40),
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
	c.mu.Lock()
	slot.launched = c.clock.Now()
	c.mu.Unlock()
	handle, err := c.opts.Launcher.Start(ctx, spec)
	c.mu.Lock()
	slot.handle = handle
	close(slot.ready)
	if err != nil {
		delete(c.starting, id)
	}
	c.mu.Unlock()
	if err != nil {
		log.Error("starting the worker failed", "launcher", c.opts.Launcher.Name(), "err", err)
		t.exited, t.left = true, true
		c.degrade(t, OutcomeSpawnFailed, err.Error())
		c.maybeFinish(ctx)
		return
	}
	t.handle = handle
	if err := c.store.SetTurnWorker(ctx, id, handle.PID()); err != nil {
		log.Error("recording the worker's pid failed", "err", err)
	}
	go func() { c.post(event{kind: evExit, turn: id, exit: <-handle.Done()}) }()
	// T runs whatever happens to the result, so a worker that has
	// answered but will not exit is still dealt with.
	t.timer = c.clock.AfterFunc(c.cfg.Timeouts.Turn.Duration, func() {
		c.post(event{kind: evTimeout, turn: id})
	})
}

// post hands an event to the loop, or drops it once the loop has ended.
func (c *Core) post(ev event) {
	select {
	case c.events <- ev:
	case <-c.stopped:
	}
}

func (c *Core) handleEvent(ctx context.Context, ev event) {
	switch ev.kind {
	case evResume:
		c.resume(ctx, ev)
		return
	case evExpire:
		c.expireApprovals(ctx)
		c.face.refresh() // the status strip's memory figure moves between turns
		c.clock.AfterFunc(expiryCheck, func() { c.post(event{kind: evExpire}) })
		return
	case evMoodTick:
		c.moodTo(ctx, c.mood.Tick(c.clock.Now(), c.moodCfg))
		c.clock.AfterFunc(c.cfg.Mood.Tick.Duration, func() { c.post(event{kind: evMoodTick}) })
		return
	case evShowMood:
		c.showMood()
		return
	case evDue:
		c.runDue(ctx)
		return
	}
	t := c.turn
	if t == nil || t.id != ev.turn {
		return // a timer or exit of a turn already finished
	}
	switch ev.kind {
	case evTimeout:
		if !t.fenced {
			c.log.Warn("turn timed out; degrading", "turn", t.id, "after", c.cfg.Timeouts.Turn.Duration)
			c.degrade(t, OutcomeTimeout, fmt.Sprintf("no result within %v", c.cfg.Timeouts.Turn.Duration))
		}
		if !t.exited {
			// The launcher should have killed it at R < T. Kill it again,
			// and if even that does not end it, let the slot go rather
			// than wedge the pet behind a process that will not die.
			t.handle.Kill()
			c.clock.AfterFunc(c.cfg.Timeouts.Reap.Duration, func() { c.post(event{kind: evAbandon, turn: t.id}) })
		}
	case evAbandon:
		if !t.exited {
			c.log.Error("the worker would not die; freeing the turn slot without it", "turn", t.id, "pid", t.handle.PID())
			t.exited, t.left = true, true
		}
	case evExit:
		t.exited, t.exit = true, ev.exit
		c.log.Info("worker gone", "turn", t.id, "result", ev.exit.Result, "code", ev.exit.Code, "ran", ev.exit.Duration.Round(time.Millisecond))
		c.mu.Lock()
		if slot := c.starting[t.id]; slot != nil {
			if !slot.sent {
				t.left = true // it never joined, so no frame of its can be on the way
			}
			t.joinedAfter = slot.joinedAfter
		}
		delete(c.starting, t.id)
		c.mu.Unlock()
	}
	c.settle(ctx, t)
}

// settle degrades a turn whose worker is gone without a result, then
// finishes it if it can. Both the process's end and its connection's end
// are needed first: the process may be reaped before the hub has read
// the result it sent just before exiting, and that result must win.
func (c *Core) settle(ctx context.Context, t *activeTurn) {
	if t.exited && t.left && !t.fenced {
		c.degrade(t, OutcomeCrashed, fmt.Sprintf("worker ended without a result (%s %d)", t.exit.Result, t.exit.Code))
	}
	c.maybeFinish(ctx)
}

// kindWorkerLeft is core's own note, queued behind a worker's frames in
// the inbox, that the worker's connection has ended.
const kindWorkerLeft contracts.Kind = "core:worker-left"

// onLeave queues the end of a worker's connection behind anything that
// connection delivered, so core sees its result first.
func (c *Core) onLeave(p *hub.Peer) {
	if p.Hello.Role != contracts.RoleWorker {
		return
	}
	select {
	case c.inbox <- contracts.Envelope{Kind: kindWorkerLeft, Turn: p.Hello.Turn}:
	case <-c.stopped:
	}
}

func (c *Core) handleResult(ctx context.Context, env contracts.Envelope) {
	if !c.fence.accept(env.Turn) {
		why := "unknown turn"
		if c.fence.wasClosed(env.Turn) {
			why = "turn already closed"
		}
		c.log.Warn("result fenced out", "turn", env.Turn, "why", why)
		return
	}
	t := c.turn
	c.fence.close(t.id)
	t.fenced = true
	var res contracts.Result
	if err := env.Decode(&res); err != nil {
		c.degradeNow(t, OutcomeFailed, err.Error())
		c.maybeFinish(ctx)
		return
	}
	t.modelTime, t.peakRSS = res.ModelTime, res.PeakRSS
	log := c.log.With("turn", t.id)
	for _, n := range res.Notes {
		log.Warn("worker note", "note", n)
	}
	if !res.OK {
		log.Warn("worker reported failure", "err", res.Error)
		c.degradeNow(t, OutcomeFailed, res.Error)
		c.maybeFinish(ctx)
		return
	}
	// Reply and react first: the owner never waits on a memory write, and
	// a failed write never blocks the reply.
	c.reply(t, contracts.Outbound{Text: res.Payload, Turn: t.id})
	name, glyphs := c.glyphs(res.Face)
	c.face.react(name, glyphs, res.Thought)
	c.feel(mood.TurnOK)
	c.applyOps(ctx, t.id, res.Ops)
	c.recordExchange(ctx, t, res.Payload)
	t.outcome = OutcomeOK
	c.maybeFinish(ctx)
}

// degrade closes the fence on a failed turn and answers anyway.
func (c *Core) degrade(t *activeTurn, outcome, reason string) {
	c.fence.close(t.id)
	c.degradeNow(t, outcome, reason)
}

func (c *Core) degradeNow(t *activeTurn, outcome, reason string) {
	c.log.Warn("degraded", contracts.AuditEvent, contracts.EventDegrade, "turn", t.id, "outcome", outcome, "why", reason)
	t.fenced = true
	t.outcome, t.err = outcome, reason
	c.reply(t, contracts.Outbound{Text: DegradeText, Turn: t.id, Degraded: true})
	name, glyphs := c.glyphs(faces.CantThink)
	c.face.react(name, glyphs, "can't think")
	c.feel(mood.TurnFailed)
	// The owner's words stay in the history, so the next turn knows what
	// was asked even though this one could not answer.
	if t.admission.Text != "" {
		if err := c.store.AppendHistory(context.Background(), t.id, contracts.ChatUser, t.admission.Text, t.started); err != nil {
			c.log.Error("recording history failed", "turn", t.id, "err", err)
		}
	}
}

// maybeFinish ends the turn once its result is settled and its worker is
// gone, then frees the arbiter and starts the catch-up turn.
func (c *Core) maybeFinish(ctx context.Context) {
	t := c.turn
	if t == nil || !t.fenced || !t.exited {
		return
	}
	if t.timer != nil {
		t.timer.Stop()
	}
	c.finishTurnRecord(t, t.outcome, t.err)
	c.turn = nil
	c.face.refresh() // one more turn today
	c.announceActivity(t, false)
	// The reaction holds the screen for its dwell; then the mood's face.
	c.clock.AfterFunc(c.cfg.Turn.ReactionDwell.Duration, func() { c.post(event{kind: evShowMood}) })
	c.release(ctx)
	if c.turn == nil && c.returning.CompareAndSwap(false, true) {
		// Idle until the next message, perhaps for hours: the garbage of
		// the turn goes back to the kernel now rather than at the
		// runtime's own pace, since on a 416 MB board every resident MB
		// counts. Off the loop, so that a message arriving meanwhile
		// does not wait for the collection.
		go func() {
			defer c.returning.Store(false)
			debug.FreeOSMemory()
		}()
	}
}

// announceActivity tells the turn's transport that it started or ended,
// so the owner sees the pet is busy (Telegram's "typing…").
func (c *Core) announceActivity(t *activeTurn, busy bool) {
	from := t.admission.Origin
	env, err := contracts.NewEnvelope(contracts.KindActivity, t.id, contracts.Activity{Chat: from.Chat, Turn: t.id, Busy: busy})
	if err != nil || from.Transport == "" {
		return
	}
	env.To = from.Transport
	// A transport that has gone misses a typing hint, nothing more.
	_ = c.hub.Route(env)
}

func (c *Core) finishTurnRecord(t *activeTurn, outcome, reason string) {
	end := c.clock.Now()
	if err := c.store.FinishTurn(context.Background(), state.TurnEnd{
		ID: t.id, Ended: end, Outcome: outcome, Error: reason, ModelTime: t.modelTime,
		WorkerPeak: max(t.peakRSS, t.exit.MemoryPeak), WorkerCPU: t.exit.CPUTime, WorkerExit: t.exit.Result,
		WorkerJoin: t.joinedAfter,
	}); err != nil {
		c.log.Error("recording the turn's end failed", "turn", t.id, "err", err)
	}
	c.log.Info("turn finished", contracts.AuditEvent, contracts.EventTurnEnd, "turn", t.id, "outcome", outcome, "took", end.Sub(t.started).Round(time.Millisecond), "model", t.modelTime.Round(time.Millisecond))
	c.opts.Notify.Status(fmt.Sprintf("waiting for a message (turn %s: %s)", t.id, outcome))
}

func (c *Core) recordExchange(ctx context.Context, t *activeTurn, payload string) {
	for _, m := range []struct{ role, text string }{{contracts.ChatUser, t.admission.Text}, {contracts.ChatAssistant, payload}} {
		if m.text == "" {
			continue // a resumed turn has no words of the owner's
		}
		if err := c.store.AppendHistory(ctx, t.id, m.role, m.text, c.clock.Now()); err != nil {
			c.log.Error("recording history failed", "turn", t.id, "err", err)
		}
	}
}

func (c *Core) reply(t *activeTurn, out contracts.Outbound) {
	c.replyTo(t.admission.Origin, out)
}

// replyTo sends the owner a message where they wrote from.
func (c *Core) replyTo(to Origin, out contracts.Outbound) {
	out.Chat = to.Chat
	env, err := contracts.NewEnvelope(contracts.KindOutbound, out.Turn, out)
	if err != nil {
		c.log.Error("encoding the reply failed", "turn", out.Turn, "err", err)
		return
	}
	env.To = to.Transport
	if err := c.hub.Route(env); err != nil {
		c.log.Error("the reply reached no transport", "turn", out.Turn, "err", err)
	}
}

// loadFaces reads the face registry: at start, and after core itself
// has added a face.
func (c *Core) loadFaces() {
	reg, err := c.layout.LoadFaces()
	if err != nil {
		c.log.Warn("face registry has bad entries; using the good ones", "err", err)
	}
	c.faces = reg
}

// glyphs resolves a face name to the name shown (the default reply face
// for an unknown one) and its drawing.
func (c *Core) glyphs(face string) (string, string) {
	name, g, _ := c.faces.Resolve(face)
	return name, g
}

func (c *Core) pushSnapshot(s contracts.Snapshot) {
	env, err := contracts.NewEnvelope(contracts.KindSnapshot, "", s)
	if err != nil {
		return
	}
	if err := c.hub.Route(env); err != nil && !errors.Is(err, hub.ErrNoRoute) {
		c.log.Warn("face push failed", "err", err)
	}
}

// verifyWorker admits a worker the hub's Access let in only if it is a
// process of the turn it names, and that turn is the one being started.
func (c *Core) verifyWorker(hello contracts.Hello, cred hub.Cred) error {
	c.mu.Lock()
	slot := c.starting[hello.Turn]
	c.mu.Unlock()
	if slot == nil {
		return fmt.Errorf("turn %q is not running", hello.Turn)
	}
	select {
	case <-slot.ready:
	case <-time.After(5 * time.Second):
		return fmt.Errorf("turn %q did not finish starting", hello.Turn)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case slot.handle == nil:
		return fmt.Errorf("turn %q failed to start", hello.Turn)
	case !slot.handle.Owns(cred.PID):
		return fmt.Errorf("pid %d is not the worker of turn %q", cred.PID, hello.Turn)
	case slot.sent:
		return fmt.Errorf("turn %q already has its worker", hello.Turn)
	}
	slot.sent = true
	slot.joinedAfter = c.clock.Now().Sub(slot.launched)
	return nil
}

// onJoin gives a new worker its turn input and a new panel the face.
func (c *Core) onJoin(p *hub.Peer) {
	var env contracts.Envelope
	var err error
	switch p.Hello.Role {
	case contracts.RoleWorker:
		c.mu.Lock()
		slot := c.starting[p.Hello.Turn]
		c.mu.Unlock()
		if slot == nil {
			return
		}
		env, err = contracts.NewEnvelope(contracts.KindTurnInput, p.Hello.Turn, slot.input)
	case contracts.RolePanel:
		env, err = contracts.NewEnvelope(contracts.KindSnapshot, "", c.face.current())
	default:
		return
	}
	if err == nil {
		env.From = contracts.RoleCore
		err = c.hub.Send(p, env)
	}
	if err != nil {
		c.log.Warn("greeting a new peer failed", "role", p.Hello.Role, "err", err)
	}
}

// toolbox is the tools as a turn sees them now: the built-ins and the
// self-coded tools promoted so far.
func (c *Core) toolbox() *tools.Registry { return c.tools.WithSelfCoded(c.layout.Tools()) }

// workerTasks bounds a worker's processes and threads where a unit holds
// it: a Go program needs a handful of threads, a runaway many more.
const workerTasks = 64

// workerEnvKeep are the variables a worker inherits from core. Everything
// else stays behind: the worker holds nothing but what core sends it, and
// core's environment may carry a provider key in development
// (SHELLDON_PROVIDER_KEY) or a credentials directory.
var workerEnvKeep = []string{"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "GODEBUG", "GOMAXPROCS", "GOMEMLIMIT", "GOGC"}

// workerEnvTestPrefix lets the tests' re-executed test binary know it is
// to act as shelldon; it carries no secret.
const workerEnvTestPrefix = "SHELLDON_TEST_"

func workerEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(workerEnvKeep, name) || strings.HasPrefix(name, "LC_") || strings.HasPrefix(name, workerEnvTestPrefix) {
			out = append(out, kv)
		}
	}
	return out
}

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
