package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shelldon/bus"
	"shelldon/clock"
	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/launch"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/testhost"
)

// inProcessLauncher runs each "worker" as a goroutine of the test, so a
// test can make a worker misbehave in ways a real one never would (answer
// after T, claim another turn). The bus still checks its credentials: it
// owns only the test's own pid.
type inProcessLauncher struct {
	work func(ctx context.Context, spec launch.Spec) // acts as the worker
}

func (inProcessLauncher) Name() string { return "in-process (test)" }

type inProcessHandle struct {
	done   chan launch.Exit
	cancel context.CancelFunc
}

func (l inProcessLauncher) Start(_ context.Context, spec launch.Spec) (launch.Handle, error) {
	ctx, cancel := context.WithCancel(context.Background())
	h := &inProcessHandle{done: make(chan launch.Exit, 1), cancel: cancel}
	go func() {
		l.work(ctx, spec)
		h.done <- launch.Exit{Result: launch.ResultSuccess}
	}()
	return h, nil
}

func (h *inProcessHandle) PID() int                 { return os.Getpid() }
func (h *inProcessHandle) Owns(pid int) bool        { return pid == os.Getpid() }
func (h *inProcessHandle) Done() <-chan launch.Exit { return h.done }
func (h *inProcessHandle) Kill()                    { h.cancel() }

func turnOf(spec launch.Spec) string {
	for i, a := range spec.Argv {
		if a == "--turn" {
			return spec.Argv[i+1]
		}
	}
	return ""
}

type coreHarness struct {
	cfg     config.Config
	replies chan contracts.Outbound
	send    func(text string)
}

func startCore(t *testing.T, l launch.Launcher, turnTimeout time.Duration) *coreHarness {
	t.Helper()
	return startCoreIn(t, l, turnTimeout, nil)
}

// startCoreIn is startCore with a chance to prepare the state directory
// before core creates its socket there.
func startCoreIn(t *testing.T, l launch.Launcher, turnTimeout time.Duration, prepare func(dir string)) *coreHarness {
	t.Helper()
	return startCoreWith(t, l, turnTimeout, prepare, func(*Options) {})
}

// startCoreWith is startCoreIn with a last say over the core's options.
func startCoreWith(t *testing.T, l launch.Launcher, turnTimeout time.Duration, prepare func(dir string), tweak func(*Options)) *coreHarness {
	t.Helper()
	dir := testhost.ShortDir(t)
	if prepare != nil {
		prepare(dir)
	}
	cfg := config.Default()
	cfg.StateDir, cfg.Socket = dir, filepath.Join(dir, "bus.sock")
	cfg.Timeouts.Worker.Duration = turnTimeout / 3
	cfg.Timeouts.Reap.Duration = turnTimeout / 2
	cfg.Timeouts.Turn.Duration = turnTimeout
	store, err := state.Open(statedir.Layout{Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	opts := Options{Config: cfg, Store: store, Launcher: l, WorkerArgv: []string{"worker"}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	tweak(&opts)
	serveCore(t, opts)
	h := &coreHarness{cfg: cfg, replies: make(chan contracts.Outbound, 16)}
	conn := listen(t, cfg.Socket, contracts.RoleTransport, func(env contracts.Envelope) {
		var out contracts.Outbound
		if env.Kind == contracts.KindOutbound && env.Decode(&out) == nil {
			h.replies <- out
		}
	})
	h.send = func(text string) {
		env, _ := contracts.NewEnvelope(contracts.KindInbound, "", contracts.Inbound{Text: text})
		if err := conn.Send(env); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// serveCore runs a core with opts until the test ends, or until the
// returned stop is called.
func serveCore(t *testing.T, opts Options) (stop func()) {
	t.Helper()
	_, stop = serveCoreOf(t, opts)
	return stop
}

// serveCoreOf is serveCore that also gives the core, for a test that waits
// on its loop.
func serveCoreOf(t *testing.T, opts Options) (core *Core, stop func()) {
	t.Helper()
	core, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- core.Run(ctx, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("core did not start: %v", err)
	case <-time.After(waitLimit):
		t.Fatalf("core did not start within %v", waitLimit)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := within(t, done, "core to stop"); err != nil {
				t.Errorf("core stopped with %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return core, stop
}

// waitLimit bounds every wait of these tests for something core does.
const waitLimit = 10 * time.Second

// within receives from ch, failing the test with what it waited for when
// nothing comes within waitLimit.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("waited %v for %s", waitLimit, what)
		panic("unreachable")
	}
}

// listen joins core's bus in role and hands got every envelope that comes,
// until the test ends.
func listen(t *testing.T, socket string, role contracts.Role, got func(contracts.Envelope)) *bus.Conn {
	t.Helper()
	conn, err := bus.Dial(context.Background(), socket, contracts.Hello{Role: role, Name: "test"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	// The reader ends before the cleanups registered earlier run (a test
	// that set time.Local puts it back then, and a decode in flight reads
	// it); one blocked handing over an envelope nobody takes is left.
	t.Cleanup(func() {
		conn.Close()
		select {
		case <-done:
		case <-time.After(waitLimit):
		}
	})
	go func() {
		defer close(done)
		for {
			env, err := conn.Recv()
			if err != nil {
				return
			}
			got(env)
		}
	}()
	return conn
}

// joinAsWorker joins the bus as the worker of turn and reads its input.
func joinAsWorker(ctx context.Context, socket, turn string) (*bus.Conn, contracts.TurnInput, error) {
	conn, err := bus.Dial(ctx, socket, contracts.Hello{Role: contracts.RoleWorker, Turn: turn}, 0)
	if err != nil {
		return nil, contracts.TurnInput{}, err
	}
	env, err := conn.Recv()
	var in contracts.TurnInput
	if err == nil {
		err = env.Decode(&in)
	}
	return conn, in, err
}

func sendResult(conn *bus.Conn, turn, payload string) error {
	env, err := contracts.NewEnvelope(contracts.KindResult, turn, contracts.Result{OK: true, Payload: payload})
	if err != nil {
		return err
	}
	return conn.Send(env)
}

func TestResultAfterTurnTimeoutIsDropped(t *testing.T) {
	const T = 600 * time.Millisecond
	sent := make(chan error, 1)
	var h *coreHarness
	h = startCore(t, inProcessLauncher{work: func(ctx context.Context, spec launch.Spec) {
		conn, in, err := joinAsWorker(ctx, h.cfg.Socket, turnOf(spec))
		if err != nil {
			sent <- err
			return
		}
		defer conn.Close()
		if in.Text != "hello" {
			sendResult(conn, turnOf(spec), "answer to "+in.Text)
			return
		}
		<-time.After(T + 300*time.Millisecond) // answer after core gave up
		sent <- sendResult(conn, turnOf(spec), "too late")
	}}, T)
	h.send("hello")
	r := within(t, h.replies, "the degrade answer at T")
	if !r.Degraded {
		t.Fatalf("first reply = %+v, want the degrade answer at T", r)
	}
	if err := within(t, sent, "the late worker's send"); err != nil {
		t.Fatalf("the late worker could not send: %v", err)
	}
	// The next message's turn starts once the late worker is gone, after
	// its result: its answer is the owner's next reply.
	h.send("next")
	if r := within(t, h.replies, "the answer to the next message"); r.Text != "answer to next" {
		t.Fatalf("a result after T reached the owner: %+v", r)
	}
}

// TestAResultTheFenceRefusedIsNotActedOn is a worker that answers after
// its turn timed out, and before it is gone: the turn is still core's
// current one, settled by the timeout, its fence closed. Its answer must
// not reach the owner. On the fake clock: the worker's leaving, which core
// takes behind its result and tells the brokers of, says that the result
// was taken; the reap then ends the turn, and the next message's answer
// must be the owner's next reply.
// firstStubborn starts its first worker as one that will not die, and
// the rest as they are.
type firstStubborn struct {
	inProcessLauncher
	started *atomic.Int32
}

func (l firstStubborn) Start(ctx context.Context, spec launch.Spec) (launch.Handle, error) {
	if l.started.Add(1) == 1 {
		return stubbornLauncher{l.inProcessLauncher}.Start(ctx, spec)
	}
	return l.inProcessLauncher.Start(ctx, spec)
}

func TestAResultTheFenceRefusedIsNotActedOn(t *testing.T) {
	const T = time.Minute
	clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	joined, late := make(chan string, 1), make(chan struct{})
	sent := make(chan error, 1)
	var h *coreHarness
	h = startCoreWith(t, firstStubborn{started: new(atomic.Int32), inProcessLauncher: inProcessLauncher{work: func(ctx context.Context, spec launch.Spec) {
		conn, in, err := joinAsWorker(ctx, h.cfg.Socket, turnOf(spec))
		if err != nil {
			sent <- err
			return
		}
		defer conn.Close()
		if in.Text != "one" {
			sendResult(conn, turnOf(spec), "answer to "+in.Text)
			return
		}
		joined <- turnOf(spec)
		<-late // the turn times out meanwhile; the worker will not die
		sent <- sendResult(conn, turnOf(spec), "too late")
	}}}, T, nil, func(o *Options) {
		o.Clock = clk
		o.Config.Bus.BrokerUsers = []string{me.Username}
	})
	cancelled := make(chan string, 4)
	listen(t, h.cfg.Socket, contracts.RoleBroker, func(env contracts.Envelope) {
		if env.Kind == contracts.KindJobCancel {
			cancelled <- env.Turn
		}
	})
	h.send("one")
	first := within(t, joined, "the worker of the first turn")
	clk.Advance(T)
	if r := within(t, h.replies, "the degrade answer at T"); !r.Degraded {
		t.Fatalf("first reply = %+v, want the degrade answer at T", r)
	}
	close(late)
	if err := within(t, sent, "the late worker's send"); err != nil {
		t.Fatalf("the late worker could not send: %v", err)
	}
	if turn := within(t, cancelled, "the worker's leaving, behind its result"); turn != first {
		t.Fatalf("the brokers were told that the worker of %q left, want %q", turn, first)
	}
	clk.Advance(h.cfg.Timeouts.Reap.Duration)
	h.send("two")
	if r := within(t, h.replies, "the answer to the next message"); r.Text != "answer to two" {
		t.Fatalf("the next reply is %+v, want the answer to the next message: core acted on a result its fence refused", r)
	}
}

func TestWorkerCannotClaimAnotherTurn(t *testing.T) {
	refused := make(chan error, 1)
	var h *coreHarness
	h = startCore(t, inProcessLauncher{work: func(ctx context.Context, spec launch.Spec) {
		_, _, err := joinAsWorker(ctx, h.cfg.Socket, "not-"+turnOf(spec))
		refused <- err
		conn, _, err := joinAsWorker(ctx, h.cfg.Socket, turnOf(spec))
		if err == nil {
			sendResult(conn, turnOf(spec), "honest")
			conn.Close()
		}
	}}, 5*time.Second)
	h.send("hello")
	if err := within(t, refused, "the claim of another turn"); !errors.Is(err, bus.ErrRefused) {
		t.Errorf("claiming another turn: err = %v, want refused", err)
	}
	if r := within(t, h.replies, "the honest worker's reply"); r.Text != "honest" {
		t.Errorf("reply = %+v, want the honest worker's result", r)
	}
}

// stubbornHandle is a worker that will not die: Done never reports and
// Kill does nothing, as a process stuck in the kernel might behave.
type stubbornHandle struct{ *inProcessHandle }

func (stubbornHandle) Done() <-chan launch.Exit { return nil }
func (stubbornHandle) Kill()                    {}

type stubbornLauncher struct{ inProcessLauncher }

func (l stubbornLauncher) Start(ctx context.Context, spec launch.Spec) (launch.Handle, error) {
	h, err := l.inProcessLauncher.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return stubbornHandle{h.(*inProcessHandle)}, nil
}

// TestAWorkerThatWillNotDieDoesNotWedgeThePet answers, then never exits:
// core must still free the slot (after T and one more R), so the next
// message gets a turn of its own.
func TestAWorkerThatWillNotDieDoesNotWedgeThePet(t *testing.T) {
	const T = 600 * time.Millisecond
	var h *coreHarness
	h = startCore(t, stubbornLauncher{inProcessLauncher{work: func(ctx context.Context, spec launch.Spec) {
		conn, _, err := joinAsWorker(ctx, h.cfg.Socket, turnOf(spec))
		if err != nil {
			return
		}
		sendResult(conn, turnOf(spec), "answer to "+turnOf(spec))
		// Keep the connection open, as a worker that hangs after answering.
		<-ctx.Done()
	}}}, T)
	h.send("one")
	first := within(t, h.replies, "the first answer")
	if first.Degraded {
		t.Fatalf("first reply = %+v, want the worker's answer", first)
	}
	h.send("two")
	select {
	case second := <-h.replies:
		if second.Degraded || second.Turn == first.Turn {
			t.Fatalf("second reply = %+v, want an answer from a turn of its own", second)
		}
	case <-time.After(5 * T):
		t.Fatal("the second message never got a turn: the stuck worker wedged the pet")
	}
}
