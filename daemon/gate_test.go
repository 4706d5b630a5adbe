package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"shelldon/bus"
	"shelldon/clock"
	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/launch"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/sandbox"
	"shelldon/sandbox/image/imagetest"
	"shelldon/testhost"
)

// countingSandbox is the real sandbox, counting how many runs are under
// way at once.
type countingSandbox struct {
	sb       *sandbox.Sandbox
	mu       sync.Mutex
	now, max int
}

func (c *countingSandbox) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	c.mu.Lock()
	c.now++
	c.max = max(c.max, c.now)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.now--
		c.mu.Unlock()
	}()
	return c.sb.Run(ctx, spec)
}

// coreState is the configuration and the store of a core on the state
// directory dir.
func coreState(t *testing.T, dir string) (config.Config, *state.Store) {
	t.Helper()
	cfg := config.Default()
	cfg.StateDir, cfg.Socket = dir, filepath.Join(dir, "bus.sock")
	store, err := state.Open(statedir.Layout{Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return cfg, store
}

// replyingWorker ends every turn with payload and ops.
func replyingWorker(socket, payload string, ops []contracts.Op) inProcessLauncher {
	return inProcessLauncher{work: func(ctx context.Context, spec launch.Spec) {
		conn, in, err := joinAsWorker(ctx, socket, turnOf(spec))
		if err != nil {
			return
		}
		defer conn.Close()
		env, _ := contracts.NewEnvelope(contracts.KindResult, in.Turn, contracts.Result{OK: true, Payload: payload, Ops: ops})
		conn.Send(env)
	}}
}

// passingTool is a reply's op proposing a tool called name that passes its
// gate: run() returns 'ok', and its test says so.
func passingTool(name string) contracts.Op {
	return contracts.Op{Body: contracts.ProposeTool{Name: name,
		Code: "DESCRIPTION = 'x'\nPARAMS_SCHEMA = {'type': 'object', 'properties': {}}\n\ndef run():\n    return 'ok'\n",
		Test: "from " + name + " import run\n\ndef test_ok():\n    assert run() == 'ok'\n"}}
}

// TestGatesRunOneAtATime: a reply that proposes six tools does not run six
// gates at once — the board could not hold them — but one after another;
// the owner hears which wait, and the one past the queue is dropped and
// said so. Every tool that passes is asked about.
func TestGatesRunOneAtATime(t *testing.T) {
	img := imagetest.Image(t)
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	counted := &countingSandbox{sb: sb}
	cfg, store := coreState(t, testhost.ShortDir(t))
	var ops []contracts.Op
	for i := range maxQueuedGates + 2 {
		ops = append(ops, passingTool(fmt.Sprintf("tool%c", 'a'+i)))
	}
	worker := replyingWorker(cfg.Socket, "I wrote tools.", ops)
	serveCore(t, Options{Config: cfg, Store: store, Launcher: worker, WorkerArgv: []string{"worker"}, Sandbox: counted,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	got := make(chan contracts.Envelope, 64)
	conn := listen(t, cfg.Socket, contracts.RoleTransport, func(env contracts.Envelope) { got <- env })
	in, _ := contracts.NewEnvelope(contracts.KindInbound, "", contracts.Inbound{Chat: "owner", Text: "write yourself six tools"})
	if err := conn.Send(in); err != nil {
		t.Fatal(err)
	}
	var asked, told []string
	deadline := time.After(60 * time.Second)
	for len(asked) < maxQueuedGates+1 {
		select {
		case env := <-got:
			switch env.Kind {
			case contracts.KindApprovalRequest:
				var req contracts.ApprovalRequest
				env.Decode(&req)
				asked = append(asked, req.Tool)
			case contracts.KindOutbound:
				var out contracts.Outbound
				env.Decode(&out)
				told = append(told, out.Text)
			}
		case <-deadline:
			t.Fatalf("asked about %q, told %q, within a minute; want %d tools asked about", asked, told, maxQueuedGates+1)
		}
	}
	counted.mu.Lock()
	most := counted.max
	counted.mu.Unlock()
	if most != 1 {
		t.Errorf("%d sandbox runs were under way at once, want one gate at a time", most)
	}
	joined := strings.Join(told, "\n")
	if !strings.Contains(joined, "toolb; I will test it once the test of toola is done") {
		t.Errorf("the owner was told %q, want toolb queued behind toola", told)
	}
	if !strings.Contains(joined, "toolf, but 5 of my tools already wait to be tested, so I dropped it") {
		t.Errorf("the owner was told %q, want the sixth tool dropped and said so", told)
	}
}

// TestAProposalWithoutASandboxIsToldBeforeTheReply: where commands cannot
// run (no sandbox image), a tool the model proposes cannot be tested; the
// owner hears why, and before the reply that says the tool goes through
// its gate (core checks first, as it answers a command at once).
func TestAProposalWithoutASandboxIsToldBeforeTheReply(t *testing.T) {
	cfg, store := coreState(t, testhost.ShortDir(t))
	op := passingTool("greet")
	worker := replyingWorker(cfg.Socket, "I wrote myself a tool. It goes through my gate in the sandbox.", []contracts.Op{op})
	serveCore(t, Options{Config: cfg, Store: store, Launcher: worker, WorkerArgv: []string{"worker"}, NoSandbox: sandbox.ErrNoImage,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	got := make(chan contracts.Envelope, 64)
	conn := listen(t, cfg.Socket, contracts.RoleTransport, func(env contracts.Envelope) { got <- env })
	in, _ := contracts.NewEnvelope(contracts.KindInbound, "", contracts.Inbound{Chat: "owner", Text: "write yourself a tool"})
	if err := conn.Send(in); err != nil {
		t.Fatal(err)
	}
	var told []string
	deadline := time.After(30 * time.Second)
	for len(told) < 2 {
		select {
		case env := <-got:
			if env.Kind == contracts.KindOutbound {
				var out contracts.Outbound
				env.Decode(&out)
				told = append(told, out.Text)
			}
		case <-deadline:
			t.Fatalf("the owner was told %q within 30 s; want why the tool cannot be tested, then the reply", told)
		}
	}
	if !strings.Contains(told[0], "greet") || !strings.Contains(told[0], "not built") || !strings.Contains(told[0], "make image") {
		t.Errorf("the owner was told first %q, want why greet cannot be tested (no image) and the fix", told[0])
	}
	if !strings.Contains(told[1], "goes through my gate") {
		t.Errorf("the owner was told then %q, want the reply", told[1])
	}
}

// stuckSandbox is a sandbox whose runs hang until their context ends, as
// a gate does that is cut by a stop; entered says a run began.
type stuckSandbox struct{ entered chan struct{} }

func (s stuckSandbox) Run(ctx context.Context, _ sandbox.Spec) (sandbox.Result, error) {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return sandbox.Result{}, ctx.Err()
}

// TestAProposalInItsGateOutlivesAStop: a core stopped (Ctrl-C, a
// restart) while a proposed tool is under its gate, with another queued
// behind it, loses neither: the next core tells the owner it tests them
// again, and asks about each that passes.
func TestAProposalInItsGateOutlivesAStop(t *testing.T) {
	img := imagetest.Image(t)
	dir := testhost.ShortDir(t)
	layout := statedir.Layout{Root: dir}
	start := func(sb Sandbox, worker inProcessLauncher) (*clock.Fake, chan contracts.Envelope, *bus.Conn, func()) {
		cfg := config.Default()
		cfg.StateDir, cfg.Socket = dir, filepath.Join(dir, "bus.sock")
		store, err := state.Open(layout)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
		stop := serveCore(t, Options{Config: cfg, Store: store, Launcher: worker, WorkerArgv: []string{"worker"}, Clock: clk, Sandbox: sb,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		got := make(chan contracts.Envelope, 64)
		var conn *bus.Conn
		ready := make(chan struct{})
		conn = listen(t, cfg.Socket, contracts.RoleTransport, func(env contracts.Envelope) {
			<-ready
			var out contracts.Outbound
			if env.Kind == contracts.KindOutbound && env.Decode(&out) == nil && out.Key != "" {
				// Held, as a transport confirms a reply it took.
				ack, _ := contracts.NewEnvelope(contracts.KindOutboundAck, "", contracts.OutboundAck{Key: out.Key})
				conn.Send(ack)
			}
			got <- env
		})
		close(ready)
		return clk, got, conn, func() { stop(); store.Close() }
	}

	stuck := stuckSandbox{entered: make(chan struct{}, 1)}
	socket := filepath.Join(dir, "bus.sock")
	_, _, conn, stop := start(stuck, replyingWorker(socket, "I wrote two tools.", []contracts.Op{passingTool("toola"), passingTool("toolb")}))
	in, _ := contracts.NewEnvelope(contracts.KindInbound, "", contracts.Inbound{Chat: "owner", Text: "write yourself two tools"})
	if err := conn.Send(in); err != nil {
		t.Fatal(err)
	}
	within(t, stuck.entered, "toola's gate to start")
	stop()

	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	clk, got, _, _ := start(sb, replyingWorker(socket, "nothing", nil))
	var asked, told []string
	deadline := time.After(90 * time.Second)
	for len(asked) < 2 {
		clk.Advance(expiryCheck)
		select {
		case env := <-got:
			switch env.Kind {
			case contracts.KindApprovalRequest:
				var req contracts.ApprovalRequest
				env.Decode(&req)
				asked = append(asked, req.Tool)
			case contracts.KindOutbound:
				var out contracts.Outbound
				env.Decode(&out)
				told = append(told, out.Text)
			}
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("after the restart the owner was asked about %q and told %q; want both tools tested again and asked about", asked, told)
		}
	}
	t.Logf("asked about %q; told %q", asked, told)
	if joined := strings.Join(told, "\n"); !strings.Contains(joined, "toola") || !strings.Contains(joined, "again") {
		t.Errorf("the owner was told %q, want that toola and toolb are tested again after the stop", told)
	}
}
