package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"shelldon/clock"
	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/approval/approved"
	"shelldon/daemon/commands"
	"shelldon/daemon/driver"
	"shelldon/daemon/handoff"
	"shelldon/daemon/hub"
	"shelldon/daemon/intake"
	"shelldon/daemon/launch"
	"shelldon/daemon/mcp"
	"shelldon/daemon/media"
	"shelldon/daemon/mood"
	"shelldon/daemon/ops"
	"shelldon/daemon/owner"
	"shelldon/daemon/progress"
	"shelldon/daemon/sdnotify"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/daemon/tokencap"
	"shelldon/daemon/toolstore"
	"shelldon/daemon/turns"
	"shelldon/giveback"
	"shelldon/sandbox"
	"shelldon/tools"
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
	// Sandbox runs the commands of turns; nil when the host has none,
	// and NoSandbox says why (for the model and the owner).
	Sandbox   Sandbox
	NoSandbox error
	// ModelHelp ends /help and /start: what the model is known to
	// understand (the scripted demo model's phrases, when `shelldon up`
	// runs on it); empty for a real model, which understands plain words.
	ModelHelp string
	// Fetch carries out approved http_get calls; nil is the guarded
	// client with its defaults (tests serve their pages through one).
	Fetch approved.Fetcher
}

// Sandbox runs one command in a throwaway container: [sandbox.Sandbox].
type Sandbox interface {
	Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error)
}

// Core routes: the bus's envelopes, the turn machine's steps, the owner's
// decisions and commands, and the brain's ticks each go to the part that
// owns them. One goroutine, the loop, owns every part, so none needs a
// lock; the parts hand work done off the loop back to it with onLoop.
type Core struct {
	opts   Options
	cfg    config.Config
	layout statedir.Layout
	store  *state.Store
	log    *slog.Logger
	clock  clock.Clock

	inbox   chan contracts.Envelope
	work    chan func(context.Context) // done on the loop: timers' and goroutines' results
	probes  chan chan struct{}         // the watchdog's: answered by the loop
	stopped chan struct{}              // closed when the loop ends; late work is dropped
	hub     *hub.Hub
	// offLoop is the work running off the loop that uses the store, the
	// tool store or the workspace (a backup, a sandboxed command, an
	// approved call, a gate): Run waits for it before they close.
	offLoop sync.WaitGroup
	started time.Time

	// The parts, owned by the loop.
	say *messenger // to the owner's transports and the panels
	// replies are the turns' replies routed and not yet held by their
	// transports.
	replies *handoff.Ledger
	face    *presence      // what the panels show
	turns   *turns.Machine // one turn at a time
	driver  *driver.Driver // drives the turn machine: the turn in flight
	slots   *driver.Slots  // shared with the hub: the workers being admitted
	writes  *failedWrites  // the writes to the state that failed, for /status
	auth    *approval.Authority
	runner  *approved.Runner
	keeper  *keeper
	brain   *brain
	tools   *tools.Registry // the built-in tools
	// draining is set once core stops: no turn starts.
	draining bool
	// intake takes the owner's messages in.
	intake *intake.Intake
	// mcp are the owner's MCP servers.
	mcp mcpTools
	// progress words the steps of the turn in flight for the owner.
	progress *progress.Reporter
	// commands answers the owner's commands.
	commands *commands.Handler

	// What core does for a decision the authority carries out
	// (decisionHost, decisions.go) with the parts New wires and keeps
	// nowhere else.
	carryOutPastCap func(ctx context.Context, out approval.Outcome) bool
	keepMarked      func(ctx context.Context, from approval.Audience, req approval.Request, approve bool)
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
	layout := statedir.Layout{Root: opts.Config.StateDir}
	c := &Core{
		opts: opts, cfg: opts.Config, layout: layout, store: opts.Store, log: opts.Log, clock: opts.Clock,
		inbox:   make(chan contracts.Envelope, 1024),
		work:    make(chan func(context.Context), 64),
		probes:  make(chan chan struct{}),
		stopped: make(chan struct{}),
		slots:   &driver.Slots{Clock: opts.Clock},
		writes:  &failedWrites{clock: opts.Clock},
	}
	// photos keeps the owner's voice notes' transcripts and photos until
	// their turn has answered; gate starts the turns of their messages,
	// or asks them first past the daily token cap.
	photos := media.New(layout.Photos(), c.writes.note, c.log)
	var gate *tokencap.Gate
	c.say = &messenger{clock: c.clock, log: c.log}
	c.intake = &intake.Intake{Store: c.store.Intake(), Media: photos, Clock: c.clock, Log: c.log, Workspace: layout.Workspace(),
		Failed: c.writes.note, Reply: c.say.reply, Tell: c.say.Tell, OnLoop: c.onLoop,
		Route:    func(env contracts.Envelope) error { return c.hub.Route(env) },
		Stopping: func() bool { return c.draining },
		Start:    func(ctx context.Context, adm turns.Admission) { gate.Start(ctx, adm) },
	}
	c.replies = handoff.New(handoff.Config{Store: c.store.Replies(), Clock: c.clock, Failed: c.writes.note, Log: c.log,
		Send: func(transport string, out contracts.Outbound) error {
			return c.say.send(turns.Origin{Transport: transport, Chat: out.Chat}, out)
		}})
	c.intake.Hand = c.replies.Reply
	c.face = &presence{clock: c.clock, dwell: c.cfg.Turn.ReactionDwell.Duration, push: c.say.snapshot, status: func() contracts.PanelStatus { return panelStatus(c.store, c.clock.Now(), c.started) }}
	c.tools = tools.Builtins(tools.Env{Workspace: layout.Workspace(), Vault: layout.Vault(), Clock: c.clock})
	c.progress = &progress.Reporter{Send: c.say.progress, ShowDraft: c.say.draft, Tools: c.tools, Log: c.log,
		Running: func(turn string) bool {
			t := c.turns.Current()
			return t != nil && t.ID == turn && !c.turns.Settled(t)
		}}
	c.turns = turns.New(c.clock, c.cfg.Timeouts.Turn.Duration, c.cfg.Timeouts.Reap.Duration, func(ev turns.Event) {
		c.onLoop(func(ctx context.Context) { c.driver.Event(ctx, ev) })
	})
	c.intake.Turns = c.turns
	sb := opts.Sandbox
	c.runner = &approved.Runner{Workspace: layout.Workspace(), Vault: layout.Vault(), Kept: layout.Changes(), Scratch: layout.Scratch(),
		Sandbox: sb, NoSandbox: opts.NoSandbox, Tools: c.tools, Fetch: opts.Fetch, Log: c.log}
	c.auth = approval.New(approval.Config{Store: c.store, Notify: c.say, Clock: c.clock,
		Expiry: c.cfg.Turn.ApprovalExpiry.Duration, RuleLife: time.Duration(c.cfg.Turn.RuleDays) * 24 * time.Hour, Log: c.log,
		Executor: c.runner, Host: decisionHost{c}})
	c.brain = &brain{store: c.store, writes: c.writes, clock: c.clock, log: c.log, face: c.face, onLoop: c.onLoop,
		onScreen: func() bool { return c.turns.Current() != nil },
		start: func(ctx context.Context, sc state.Scheduled) bool {
			if c.draining {
				return false
			}
			adm, now := c.turns.SubmitMarked(sc.Text, turns.Origin{Transport: sc.Transport, Chat: sc.Chat}, sc.Outside)
			if now {
				adm.Scheduled = true
				c.driver.Start(ctx, adm)
			}
			return now
		}}
	if err := c.brain.init(opts.Config); err != nil {
		return nil, fmt.Errorf("new core: %w", err)
	}
	c.intake.Feel = c.brain.feel
	c.mcp = mcpTools{log: c.log}
	// The servers run as sandboxed processes: a sandbox that can start
	// one (the real one; tests' stand-ins run commands only) serves them.
	starter, ok := sb.(mcp.Starter)
	switch {
	case len(c.cfg.MCP) > 0 && !ok:
		c.log.Warn("the MCP servers of the configuration are not started: there is no sandbox to run them in", "why", opts.NoSandbox)
		c.mcp.why = "there is no sandbox to run it in"
		if opts.NoSandbox != nil {
			c.mcp.why += " (" + opts.NoSandbox.Error() + ")"
		}
		for _, m := range c.cfg.MCP {
			c.mcp.unstartable = append(c.mcp.unstartable, m.Name)
		}
	case len(c.cfg.MCP) > 0:
		c.mcp.set = mcp.NewSet(c.cfg.MCP, starter, mcp.Options{Workspace: layout.Workspace(), Clock: c.clock, Log: c.log,
			Tell: func(text string) {
				c.onLoop(func(context.Context) {
					// Where the turn in flight came from; between turns,
					// every transport.
					var to turns.Origin
					if t := c.turns.Current(); t != nil {
						to = t.Admission.Origin
					}
					c.say.reply(to, contracts.Outbound{Text: text})
				})
			}})
	}
	c.runner.MCP = c.mcp
	c.keeper = &keeper{state: c.store, writes: c.writes, builtins: c.tools, auth: c.auth, sandbox: sb, noSandbox: opts.NoSandbox,
		strikes: c.cfg.Turn.ToolStrikes, clock: c.clock, log: c.log, tell: c.say.Tell, feel: c.brain.feel, onLoop: c.onLoop, offLoop: &c.offLoop}
	applier := &ops.Applier{Store: c.store.Memories(), Auth: c.auth, Clock: c.clock, Log: c.log, Failed: c.writes.note, Tell: c.say.Tell,
		OffLoop: c.offLoop.Go, OnLoop: c.onLoop, FacesAdded: func() { c.face.load(c.layout, c.log) },
		Propose: c.keeper.propose, Schedule: c.brain.schedule,
		Cancel: func(ctx context.Context, id int64) error {
			_, err := c.brain.cancel(ctx, id)
			return err
		},
		LetThrough: c.letThrough, Keep: c.keep}
	c.keepMarked = applier.KeepMarked
	c.commands = &commands.Handler{Config: c.cfg, Store: c.store, Layout: layout, Auth: c.auth, Turns: c.turns,
		Clock: c.clock, Log: c.log, ModelHelp: opts.ModelHelp, Reply: c.say.reply,
		Started: func() time.Time { return c.started },
		Mood:    func() mood.State { return c.brain.mood },
		Budget:  c.brain.budgetReport, Schedule: c.brain.command, Writes: c.writes.report,
		Tools: func() owner.ToolFacts {
			gating, queued := c.keeper.waitingForGate()
			return owner.ToolFacts{Builtin: c.tools.BuiltinNames(), Stored: c.keeper.tools.List(),
				Gating: gating, Queued: queued, MCP: c.mcp.report()}
		},
		Restore: c.keeper.restore,
	}
	c.driver = &driver.Driver{Config: c.cfg, Turns: c.turns, Slots: c.slots, Store: c.store, Launcher: opts.Launcher,
		WorkerArgv: opts.WorkerArgv, Clock: c.clock, Log: c.log, Failed: c.writes.note, OnLoop: c.onLoop, OffLoop: c.offLoop.Go,
		Status: opts.Notify.Status, Progress: c.progress, Media: photos, Intake: c.intake, Ops: applier, Auth: c.auth,
		Face:     driver.Face{Thinking: c.face.thinking, Failed: c.face.failed, Replied: c.face.replied, Refresh: c.face.refresh, Settle: c.brain.show},
		Activity: c.say.activity, Tell: c.say.Tell, Feel: c.brain.feel, Untestable: c.keeper.untestable, CarryOut: c.auth.CarryOut,
		Mood:     func() mood.State { return c.brain.mood },
		Stopping: func() bool { return c.draining },
		Offer: func(ctx context.Context, text string, to approval.Audience) ([]contracts.ToolDefinition, []string, []contracts.ToolDefinition) {
			selfCoded, byName := c.keeper.offer(ctx, text, to)
			mcpDefs := c.mcp.Offered()
			return selfCoded, append(byName, mcpByName(selfCoded, byName, mcpDefs, text)...), mcpDefs
		}}
	gate = &tokencap.Gate{Cap: c.cfg.Budget.DailyTokenCap, Today: c.brain.tokensToday, Auth: c.auth, Intake: c.intake,
		Failed: c.writes.note, Tell: c.say.Tell, Log: c.log, Begin: c.driver.Start, Release: c.driver.Release}
	c.driver.StartOwners = gate.Start
	c.carryOutPastCap = gate.CarryOut
	return c, nil
}

// Run listens on the bus and runs turns until ctx is done. Ready, when
// not nil, is called once the bus accepts connections.
func (c *Core) Run(ctx context.Context, ready func()) error {
	if err := os.MkdirAll(c.layout.Changes(), 0o700); err != nil {
		return fmt.Errorf("start core: %w", err)
	}
	// What a run was shown besides the workspace is for that run alone:
	// an earlier core's is cleared.
	if err := errors.Join(os.RemoveAll(c.layout.Scratch()), os.MkdirAll(c.layout.Scratch(), 0o700)); err != nil {
		return fmt.Errorf("start core: %w", err)
	}
	tools, err := toolstore.Open(c.layout.ToolStore())
	if err != nil {
		return fmt.Errorf("start core: %w", err)
	}
	defer tools.Close()
	c.keeper.tools = tools
	logf := func(format string, args ...any) { c.log.Info(fmt.Sprintf(format, args...)) }
	h, err := hub.Listen(c.cfg.Socket, hub.Config{
		QueueLength: c.cfg.Bus.QueueLength,
		MaxFrame:    int(c.cfg.Bus.MaxFrame),
		Access: hub.Access{
			Connect:    c.cfg.Bus.AllowedUIDs,
			Brokers:    hub.LookupUIDs("bus.broker_users", c.cfg.Bus.BrokerUsers, logf),
			Transports: hub.LookupUIDs("bus.transport_users", c.cfg.Bus.TransportUsers, logf),
		},
		VerifyWorker: c.slots.Verify,
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
	c.hub, c.say.hub = h, h
	c.started = c.clock.Now()
	if n := c.store.Recovered(); n > 0 {
		c.log.Warn("turns left running by an earlier core were marked interrupted", "count", n)
	}
	if d := c.store.Damage(); d != nil {
		c.log.Error("the state database was damaged and moved aside", "why", d.Why, "aside", d.Aside, "restored", d.Restored)
	}
	if r := c.store.RolledBack(); r != nil {
		c.log.Error("the state database was found behind its high-water mark", "why", r.Why, "since", r.Since, "lost", r.Lost())
	}
	c.replies.Load(ctx)
	c.intake.Load(ctx)
	// The bus outlives ctx: a stopping core still hears the turn in
	// flight, its broker and the owner while it drains.
	busCtx, stopBus := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBus()
	served := make(chan error, 1)
	go func() { served <- h.Serve(busCtx) }()
	c.face.load(c.layout, c.log)
	c.log.Info("core ready", "socket", c.cfg.Socket, "launcher", c.opts.Launcher.Name(), "state", c.cfg.StateDir)
	c.brain.load(ctx)
	// Each MCP server starts now to list its tools, in the background,
	// so that the first turns can offer them; idle_stop stops it after.
	c.mcp.Offered()
	if ready != nil {
		ready()
	}
	c.opts.Notify.Ready("waiting for a message")
	// What an earlier core left: staging and runs of its own, tools kept
	// where the model could write them, requests from before digests.
	// After a pause, so that the transports have rejoined a restarted
	// core before it tells the owner anything.
	c.clock.AfterFunc(expiryCheck, func() { c.onLoop(c.tidyUp) })
	c.clock.AfterFunc(c.cfg.Mood.Tick.Duration, func() { c.onLoop(c.brain.tick) })
	c.brain.arm(ctx)
	c.intake.Prune(busCtx)
	go c.opts.Notify.Watchdog(ctx, c.alive)
	c.loop(busCtx, ctx.Done(), func() bool { return true })
	c.opts.Notify.Stopping()
	c.drain(busCtx)
	c.driver.Shutdown()
	if c.mcp.set != nil {
		c.mcp.set.Close()
	}
	c.intake.ReportLeft(busCtx)
	stopBus()
	close(c.stopped)
	c.offLoop.Wait()
	return <-served
}

// loop is the one goroutine that owns the turn machine, the approval
// authority and the brain: it runs until stop is closed or more says
// there is no more to do.
func (c *Core) loop(ctx context.Context, stop <-chan struct{}, more func() bool) {
	for more() {
		select {
		case <-stop:
			return
		case env := <-c.inbox:
			c.route(ctx, env)
		case fn := <-c.work:
			fn(ctx)
		case ev := <-c.brain.feelings:
			c.brain.felt(ctx, ev)
		case reply := <-c.probes:
			close(reply)
			// The watchdog's ping, every 15 s for months, runs the
			// scheduler's and the notifier's code: without this an idle
			// core would map a megabyte of its binary back in within
			// 15 s of each release.
			c.idleChoreDone()
		case <-c.store.Notices().Owing():
			c.say.tellOwed(ctx, c.store)
		}
	}
}

// onLoop hands fn to the loop, from a timer or a goroutine, or drops it
// once the loop has ended.
func (c *Core) onLoop(fn func(context.Context)) {
	select {
	case c.work <- fn:
	case <-c.stopped:
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

// route sends one envelope to the part that owns its kind.
func (c *Core) route(ctx context.Context, env contracts.Envelope) {
	switch env.Kind {
	case contracts.KindInbound:
		var in contracts.Inbound
		if err := env.Decode(&in); err != nil || in.Text == "" {
			c.log.Warn("dropped an unreadable inbound message", "from", env.Sender, "err", err)
			return
		}
		if testHook(ctx, c.log, in.Text) {
			return
		}
		from := turns.Origin{Transport: env.Sender, Chat: in.Chat}
		// An owner's command is not a message for the model: it needs
		// no turn and does not wait for one, nor keeping.
		if c.commands.Answer(ctx, from, in) {
			c.intake.Confirm(from, in.Ref)
			return
		}
		c.intake.Take(ctx, from, in)
	case contracts.KindOutboundAck:
		var a contracts.OutboundAck
		if err := env.Decode(&a); err != nil {
			c.log.Warn("dropped an unreadable confirmation of a reply", "from", env.Sender, "err", err)
			return
		}
		c.replies.Confirmed(ctx, env.Sender, a.Key)
	case contracts.KindResult:
		c.driver.Result(ctx, env)
	case contracts.KindExec:
		c.handleExec(ctx, env)
	case contracts.KindStep:
		c.progress.Step(env)
	case contracts.KindDraft:
		c.progress.Draft(env)
	case contracts.KindDecision:
		c.handleDecision(ctx, env)
	case kindWorkerLeft:
		c.say.workerGone(env.Turn)
		c.driver.Event(ctx, turns.Event{Kind: turns.Left, Turn: env.Turn})
	default:
		c.log.Warn("core got an envelope it does not handle", "kind", env.Kind)
	}
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

// onJoin gives a new worker its turn input and a new panel the face.
func (c *Core) onJoin(p *hub.Peer) {
	var env contracts.Envelope
	var err error
	switch p.Hello.Role {
	case contracts.RoleWorker:
		input, ok := c.slots.Input(p.Hello.Turn)
		if !ok {
			return
		}
		env, err = contracts.NewEnvelope(contracts.KindTurnInput, p.Hello.Turn, input)
	case contracts.RolePanel:
		env, err = contracts.NewEnvelope(contracts.KindSnapshot, "", c.face.current())
	case contracts.RoleTransport:
		name, joined := p.Hello.Name, c.clock.Now()
		c.onLoop(func(ctx context.Context) {
			c.replies.Joined(name, joined)
			c.say.tellOwed(ctx, c.store)
			c.intake.Joined(ctx, name)
		})
		return
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

// expiryCheck is how often parked requests are checked for expiry.
const expiryCheck = time.Minute

// tidyUp, a minute after start, deals with what an earlier core or an
// older shelldon left, then starts the expiry checks.
func (c *Core) tidyUp(ctx context.Context) {
	c.keeper.tidy(ctx, c.layout.Workspace())
	c.auth.Renew(ctx)
	dropOrphanChanges(ctx, c.auth, c.layout.Changes())
	c.say.tellOwed(ctx, c.store)
	c.backUp(ctx)
	c.expire(ctx)
}

// backupEvery is how often core copies the state database for recovery
// from damage: a power cut on an SD card loses at most this much of the
// history and the turns' records.
const backupEvery = 6 * time.Hour

// backUp copies the state database, off the loop (it reads a
// connection of its own), and again after backupEvery. A stop cuts a
// backup short, and Run returns only once it has ended: the store closes
// after Run.
func (c *Core) backUp(ctx context.Context) {
	c.offLoop.Go(func() {
		err := c.store.Backup(ctx)
		if ctx.Err() != nil {
			c.log.Info("a backup of the state database was cut short by the stop; the last one stays")
			return
		}
		if err := c.writes.note("back up the state database", err); err != nil {
			c.log.Error("backing up the state database", "err", err)
		}
		// A chore: the backup's pages (SQLite's code, its copy's cache)
		// go back once it ends, not at the next turn's release.
		giveback.AfterChore()
	})
	c.clock.AfterFunc(backupEvery, func() { c.onLoop(c.backUp) })
}

// idleChoreDone says that work core did by its own timer, on the loop,
// is done: between turns a chore, whose pages go back at once if core had
// let go already, and which does not put off a release a turn armed.
// During a turn the turn's giveback covers it (giveback's own busy mark
// ends 20 s into a long turn, so the loop's knowledge decides here).
func (c *Core) idleChoreDone() {
	if c.turns.Current() == nil {
		giveback.AfterChore()
	}
}

// ChoreDone says that a part of core's process did a chore off the loop,
// by its own timer: the Telegram transport's long poll, which ends with
// nothing every poll_timeout between the owner's messages. What it ran
// goes back as the loop's own chores' pages do, unless a turn runs. It
// never waits: a loop with a full queue is not idle, and what it is busy
// with ends in a giveback of its own.
func (c *Core) ChoreDone() {
	select {
	case c.work <- func(context.Context) { c.idleChoreDone() }:
	default:
	}
}

// expire drops the requests nobody decided on in time, sends again the
// replies their transports did not confirm, and checks again a minute
// later.
func (c *Core) expire(ctx context.Context) {
	c.replies.Retry(ctx)
	c.auth.ExpireRules(ctx)
	c.auth.Expire(ctx)
	c.face.refresh() // the status strip's memory figure moves between turns
	// The check ran SQLite's code and the snapshot's.
	c.idleChoreDone()
	c.clock.AfterFunc(expiryCheck, func() { c.onLoop(c.expire) })
}

// dropOrphanChanges removes the change sets kept in dir that no request
// of auth's waits for (a request dropped while core was away).
func dropOrphanChanges(ctx context.Context, auth *approval.Authority, dir string) {
	waiting, err := auth.Waiting(ctx)
	if err != nil {
		return
	}
	keep := map[string]bool{}
	for _, r := range waiting {
		if r.Kind == approval.ChangeSet {
			keep[r.ChangeSet.Dir] = true
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !keep[e.Name()] {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// drain is the first part of a stop: the turn in flight may finish within
// the stop grace, with its results, requests and the broker's answers
// routed as ever; what the owner sends meanwhile is kept for the next
// start, and no turn starts. Real time, not core's clock: the grace
// bounds how long a stop takes, which systemd's TimeoutStopSec bounds in
// turn.
func (c *Core) drain(ctx context.Context) {
	c.draining = true
	grace := c.cfg.Timeouts.StopGrace.Duration
	turn := c.driver.InFlight()
	if turn == "" || grace <= 0 {
		return
	}
	c.log.Info("stopping: letting the turn in flight finish", "turn", turn, "grace", grace)
	over := make(chan struct{})
	timer := time.AfterFunc(grace, func() { close(over) })
	defer timer.Stop()
	c.loop(ctx, over, func() bool { return c.driver.InFlight() != "" })
	if turn := c.driver.InFlight(); turn != "" {
		c.log.Warn("stopping: the turn in flight did not finish within the grace", "turn", turn, "grace", grace)
	}
}
