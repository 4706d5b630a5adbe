package driver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/launch"
	"shelldon/daemon/media"
	"shelldon/daemon/mood"
	"shelldon/daemon/progress"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/daemon/turns"
	"shelldon/tools"
)

// worker is a started worker that ends when killed or told to.
type worker struct{ done chan launch.Exit }

func (w *worker) PID() int                 { return 4242 }
func (w *worker) Owns(pid int) bool        { return pid == 4242 }
func (w *worker) Done() <-chan launch.Exit { return w.done }
func (w *worker) Kill()                    { w.exit(launch.ResultSignal) }
func (w *worker) exit(result string) {
	select {
	case w.done <- launch.Exit{Result: result}:
	default:
	}
}

// launcher starts workers that do nothing until told; fail makes the
// next start fail.
type launcher struct {
	started []launch.Spec
	last    *worker
	fail    error
}

func (l *launcher) Name() string { return "test" }
func (l *launcher) Start(_ context.Context, spec launch.Spec) (launch.Handle, error) {
	l.started = append(l.started, spec)
	if l.fail != nil {
		return nil, l.fail
	}
	l.last = &worker{done: make(chan launch.Exit, 1)}
	return l.last, nil
}

// answers records the replies the driver sends through the intake.
type answers struct{ out []string }

func (a *answers) Overflow(text string) string { return "" }
func (a *answers) Answer(_ context.Context, t *turns.Turn, out contracts.Outbound) {
	a.out = append(a.out, out.Text)
}

// noOps keeps no request and applies every op at once.
type noOps struct{}

func (noOps) Requests(_ context.Context, _ *turns.Turn, payload string, ops []contracts.Op) (string, []approval.Request, []contracts.Op) {
	return payload, nil, ops
}
func (noOps) Apply(ctx context.Context, _ *turns.Turn, _ []contracts.Op, done func(context.Context, []string)) {
	done(ctx, nil)
}

// noneHeld is an authority with no decision held.
type noneHeld struct{}

func (noneHeld) Ask(approval.Request)                          { panic("no request was kept") }
func (noneHeld) Held(context.Context) (approval.Outcome, bool) { return approval.Outcome{}, false }
func (noneHeld) HeldCount() int                                { return 0 }

type rig struct {
	d        *Driver
	store    *state.Store
	clk      *clock.Fake
	launcher *launcher
	answers  *answers
	work     chan func(context.Context) // core's loop, which the test turns
	owners   []string                   // the catch-up turns handed on
}

// newRig is a Driver over a real store and turn machine on a fake clock;
// what the driver hands back to core's loop waits in r.work until the
// test runs it.
func newRig(t *testing.T) *rig {
	layout := statedir.Layout{Root: t.TempDir()}
	store, err := state.Open(layout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	clk := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	log := slog.New(slog.DiscardHandler)
	r := &rig{store: store, clk: clk, launcher: &launcher{}, answers: &answers{}, work: make(chan func(context.Context), 16)}
	cfg := config.Default()
	cfg.StateDir, cfg.Socket = layout.Root, layout.Root+"/bus.sock"
	onLoop := func(f func(context.Context)) { r.work <- f }
	var d *Driver
	machine := turns.New(clk, time.Minute, time.Second, func(ev turns.Event) { onLoop(func(ctx context.Context) { d.Event(ctx, ev) }) })
	face := func() {}
	d = &Driver{Config: cfg, Turns: machine, Slots: &Slots{Clock: clk}, Store: store, Launcher: r.launcher,
		WorkerArgv: []string{"shelldon-worker"}, Clock: clk, Log: log,
		Failed: func(_ string, err error) error { return err }, OnLoop: onLoop, OffLoop: func(f func()) { f() },
		Status: func(string) {},
		Progress: &progress.Reporter{Send: func(turns.Origin, contracts.Progress) {}, Log: log,
			Tools: tools.Builtins(tools.Env{Workspace: t.TempDir(), Vault: t.TempDir(), Clock: clk}), Running: func(string) bool { return true }},
		Media:  media.New(t.TempDir(), func(_ string, err error) error { return err }, log),
		Intake: r.answers, Ops: noOps{}, Auth: noneHeld{},
		Face:     Face{Thinking: face, Failed: face, Refresh: face, Settle: face, Replied: func(string, string) {}},
		Activity: func(*turns.Turn, bool) {}, Tell: func(approval.Audience, string) {},
		Mood: func() mood.State { return mood.State{Mood: "happy"} }, Feel: func(mood.Event) {},
		Offer: func(context.Context, string, approval.Audience) ([]contracts.ToolDefinition, []string, []contracts.ToolDefinition) {
			return nil, nil, nil
		},
		Untestable:  func(ops []contracts.Op) ([]contracts.Op, []string) { return ops, nil },
		CarryOut:    func(context.Context, approval.Outcome) bool { return false },
		StartOwners: func(_ context.Context, adm turns.Admission) { r.owners = append(r.owners, adm.Text) },
		Stopping:    func() bool { return false },
	}
	r.d = d
	return r
}

// turn runs what the driver handed back to core's loop until none waits.
func (r *rig) turn() {
	for {
		select {
		case f := <-r.work:
			f(context.Background())
		default:
			return
		}
	}
}

// result is a worker's result for turn.
func result(t *testing.T, turn, payload string) contracts.Envelope {
	env, err := contracts.NewEnvelope(contracts.KindResult, turn, contracts.Result{OK: true, Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// lastOutcome is how the store says the newest turn ended.
func (r *rig) lastOutcome(t *testing.T) string {
	t.Helper()
	recent, err := r.store.Turns().Recent(context.Background(), 1)
	if err != nil || len(recent) != 1 {
		t.Fatalf("Turns().Recent = %v, %v", recent, err)
	}
	return recent[0].Outcome
}

// waitExit waits for the launcher's word that the worker is gone, which
// the driver's goroutine hands to the loop.
func (r *rig) waitExit(t *testing.T) {
	t.Helper()
	select {
	case f := <-r.work:
		f(context.Background())
	case <-time.After(10 * time.Second):
		t.Fatal("the worker's end never reached the loop")
	}
	r.turn()
}

// TestDriverActsOnlyOnResultsThroughTheFence, as the attack: a worker
// sends a result for a turn that is not in flight, and a second result
// for its own. Neither is answered; the one result the fence lets
// through is, once; the turn is recorded as it ended, and the slot goes
// to the catch-up of what arrived meanwhile.
func TestDriverActsOnlyOnResultsThroughTheFence(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	adm, now := r.d.Turns.Submit("hello", turns.Origin{Transport: "chat"})
	if !now {
		t.Fatal("an idle machine did not start the turn")
	}
	r.d.Start(ctx, adm)
	id := r.d.InFlight()
	if id == "" || len(r.launcher.started) != 1 || !strings.Contains(strings.Join(r.launcher.started[0].Argv, " "), "--turn "+id) {
		t.Fatalf("in flight %q, launched %+v", id, r.launcher.started)
	}
	r.d.Turns.Submit("meanwhile", turns.Origin{Transport: "chat"})
	r.d.Result(ctx, result(t, "T-not-running", "obey me"))
	r.d.Result(ctx, result(t, id, "hi"))
	r.d.Result(ctx, result(t, id, "hi again"))
	if got := strings.Join(r.answers.out, "|"); got != "hi" {
		t.Errorf("answered %q, want only the result through the fence", got)
	}
	r.launcher.last.exit(launch.ResultSuccess)
	r.waitExit(t)
	if r.d.InFlight() != "" {
		t.Errorf("turn %s still in flight after its worker left", r.d.InFlight())
	}
	if got := r.lastOutcome(t); got != OutcomeOK {
		t.Errorf("recorded outcome %q, want %q", got, OutcomeOK)
	}
	if strings.Join(r.owners, "|") != "meanwhile" {
		t.Errorf("the slot went to %q, want the catch-up of meanwhile", r.owners)
	}
}

// TestDriverDegradesAWorkerThatCannotStart, as the fault: the launcher
// fails. The owner still gets an answer, the cant-think reply, the turn
// is recorded as spawn-failed, and the slot is free again.
func TestDriverDegradesAWorkerThatCannotStart(t *testing.T) {
	r := newRig(t)
	r.launcher.fail = errors.New("fork: out of memory")
	adm, _ := r.d.Turns.Submit("hello", turns.Origin{Transport: "chat"})
	r.d.Start(context.Background(), adm)
	r.turn()
	if got := strings.Join(r.answers.out, "|"); got != DegradeText {
		t.Errorf("answered %q, want %q", got, DegradeText)
	}
	if got := r.lastOutcome(t); got != OutcomeSpawnFailed {
		t.Errorf("recorded outcome %q, want %q", got, OutcomeSpawnFailed)
	}
	if _, now := r.d.Turns.Submit("again", turns.Origin{Transport: "chat"}); !now {
		t.Error("the slot stayed taken after a turn that never started")
	}
}

// TestDriverShutdownKillsTheWorker: a stopping core kills the worker of
// the turn in flight and records the turn as interrupted.
func TestDriverShutdownKillsTheWorker(t *testing.T) {
	r := newRig(t)
	adm, _ := r.d.Turns.Submit("hello", turns.Origin{Transport: "chat"})
	r.d.Start(context.Background(), adm)
	r.d.Shutdown()
	if got := r.lastOutcome(t); got != state.OutcomeInterrupted {
		t.Errorf("recorded outcome %q, want %q", got, state.OutcomeInterrupted)
	}
}

// TestABurstOfTurnsSettlesTheFaceOnce: each turn's reaction holds the
// screen for the dwell, then the mood's face comes back, a chore whose
// pages core gives back at once. A chat of quick turns must settle once,
// a dwell after its last turn: a settle for each turn (stale all but the
// last) made core release its memory again and again, 44 times in 25 s
// after 200 quick turns.
func TestABurstOfTurnsSettlesTheFaceOnce(t *testing.T) {
	r := newRig(t)
	settles := 0
	r.d.Face.Settle = func() { settles++ }
	dwell := r.d.Config.Turn.ReactionDwell.Duration
	const burst = 5
	for i := range burst {
		adm, now := r.d.Turns.Submit(fmt.Sprintf("message %d", i), turns.Origin{Transport: "chat"})
		if !now {
			t.Fatalf("turn %d did not start on an idle machine", i)
		}
		r.d.Start(context.Background(), adm)
		r.d.Result(context.Background(), result(t, r.d.InFlight(), "ok"))
		r.launcher.last.exit(launch.ResultSuccess)
		r.waitExit(t)
		r.clk.Advance(time.Second)
		r.turn()
	}
	// The first turn's dwell is over, the last one's is not.
	r.clk.Advance(dwell - burst*time.Second)
	r.turn()
	if settles != 0 {
		t.Errorf("%d settles while the last turn's reaction still holds the screen, want 0", settles)
	}
	r.clk.Advance(burst * time.Second)
	r.turn()
	if settles != 1 {
		t.Errorf("%d settles a dwell after a burst of %d turns, want 1", settles, burst)
	}
}
