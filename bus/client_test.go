package bus_test

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"shelldon/bus"
	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/hub"
	"shelldon/daemon/hub/hubtest"
)

// patience bounds every wait in these tests, so a hang fails instead of
// blocking the run.
const patience = 5 * time.Second

// testHub is a real hub serving on a real socket.
type testHub struct {
	*hub.Hub
	core   chan contracts.Envelope
	joined chan *hub.Peer
	stop   func()
}

// serveHub starts a hub at path. verifyWorker, its check of a worker's
// turn, may be nil. The hub stops at cleanup if the test has not stopped
// it.
func serveHub(t *testing.T, path string, verifyWorker func(contracts.Hello, hub.Cred) error) *testHub {
	t.Helper()
	th := &testHub{core: make(chan contracts.Envelope, 16), joined: make(chan *hub.Peer, 16)}
	th.Hub, _, th.stop = hubtest.Serve(t, path, hub.Config{
		VerifyWorker: verifyWorker,
		Core:         th.core,
		OnJoin:       func(p *hub.Peer) { th.joined <- p },
	})
	return th
}

func (th *testHub) waitJoin(t *testing.T) *hub.Peer {
	t.Helper()
	select {
	case p := <-th.joined:
		return p
	case <-time.After(patience):
		t.Fatalf("no peer joined within %v", patience)
		return nil
	}
}

func dialCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	t.Cleanup(cancel)
	return ctx
}

func TestDialWelcomed(t *testing.T) {
	path := hubtest.SocketPath(t)
	th := serveHub(t, path, nil)
	conn, err := bus.Dial(dialCtx(t), path, contracts.Hello{Role: contracts.RolePanel, Name: "oled"}, 0)
	if err != nil {
		t.Fatalf("Dial(panel) = %v, want welcome", err)
	}
	defer conn.Close()
	p := th.waitJoin(t)
	if p.Hello.Role != contracts.RolePanel || p.Hello.Name != "oled" {
		t.Errorf("hub saw hello %+v, want panel oled", p.Hello)
	}
	// The joined connection carries frames both ways.
	snap, _ := contracts.NewEnvelope(contracts.KindSnapshot, "", map[string]string{"face": "^_^"})
	if err := th.Route(snap); err != nil {
		t.Fatalf("Route(snapshot) = %v", err)
	}
	got, err := conn.Recv()
	if err != nil || got.Kind != contracts.KindSnapshot {
		t.Errorf("Recv = %s, %v; want %s", got.Kind, err, contracts.KindSnapshot)
	}
}

func TestDialRefusedCarriesReason(t *testing.T) {
	path := hubtest.SocketPath(t)
	serveHub(t, path, func(contracts.Hello, hub.Cred) error {
		return errors.New(`turn "t-1" is not running`)
	})
	conn, err := bus.Dial(dialCtx(t), path, contracts.Hello{Role: contracts.RoleWorker, Turn: "t-1"}, 0)
	if err == nil {
		conn.Close()
		t.Fatal("Dial = nil error, want a refusal")
	}
	if !errors.Is(err, bus.ErrRefused) {
		t.Errorf("Dial = %v, want it to wrap ErrRefused", err)
	}
	if !strings.Contains(err.Error(), `turn "t-1" is not running`) {
		t.Errorf("Dial = %v, want core's reason in it", err)
	}
}

func TestDialNoSocket(t *testing.T) {
	_, err := bus.Dial(dialCtx(t), hubtest.SocketPath(t), contracts.Hello{Role: contracts.RolePanel}, 0)
	if err == nil || errors.Is(err, bus.ErrRefused) {
		t.Errorf("Dial(missing socket) = %v, want a dial error that is not a refusal", err)
	}
}

// A listener that accepts and then says nothing stands in for a core that
// is wedged mid-handshake. The channel gets a signal per accepted caller.
func silentListener(t *testing.T, path string) <-chan struct{} {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 16)
	var conns sync.WaitGroup
	conns.Add(1)
	go func() {
		defer conns.Done()
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
			select {
			case accepted <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() { ln.Close(); conns.Wait() })
	return accepted
}

func TestDialAnswersCancelMidHandshake(t *testing.T) {
	path := hubtest.SocketPath(t)
	accepted := silentListener(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := bus.Dial(ctx, path, contracts.Hello{Role: contracts.RolePanel}, 0)
		done <- err
	}()
	waitSignal(t, accepted, "a connection to the silent listener")
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Dial after cancel = nil error")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Dial did not return within 2s of cancel while waiting for a welcome")
	}
}

// runClient runs c in the background; the returned func cancels it and
// returns Run's error, failing the test if Run does not stop promptly.
func runClient(t *testing.T, c *bus.Client, handle func(*bus.Conn, contracts.Envelope)) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, handle) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(2 * time.Second):
				t.Errorf("Client.Run did not return within 2s of cancel")
			}
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

func recvEnvelope(t *testing.T, ch <-chan contracts.Envelope, what string) contracts.Envelope {
	t.Helper()
	select {
	case env := <-ch:
		return env
	case <-time.After(patience):
		t.Fatalf("no %s within %v", what, patience)
		return contracts.Envelope{}
	}
}

// The core-restart case: core goes away, a new core listens on the same
// path, and the client joins it again without being restarted.
func TestClientRunRejoinsAfterCoreRestart(t *testing.T) {
	path := hubtest.SocketPath(t)
	first := serveHub(t, path, nil)
	logs := hubtest.NewLog()
	connected := make(chan struct{}, 4)
	received := make(chan contracts.Envelope, 4)
	c := &bus.Client{
		Socket:    path,
		Hello:     contracts.Hello{Role: contracts.RoleTransport, Name: "cli"},
		Logf:      logs.Logf,
		OnConnect: func(*bus.Conn) { connected <- struct{}{} },
	}
	stop := runClient(t, c, func(_ *bus.Conn, env contracts.Envelope) { received <- env })

	waitSignal(t, connected, "first OnConnect")
	first.waitJoin(t)
	say := func(h *testHub, text string) {
		t.Helper()
		out, _ := contracts.NewEnvelope(contracts.KindOutbound, "", text)
		if err := h.Route(out); err != nil {
			t.Fatalf("Route(outbound %q) = %v", text, err)
		}
		if got := recvEnvelope(t, received, "outbound"); string(got.Body) != `"`+text+`"` {
			t.Errorf("client received body %s, want %q", got.Body, text)
		}
	}
	say(first, "before")

	first.stop()
	// The lost connection is logged once it is let go, so from here Send
	// must report the gap.
	logs.WaitFor(t, "connection lost")
	in, _ := contracts.NewEnvelope(contracts.KindInbound, "", "anyone there?")
	if err := c.Send(in); !errors.Is(err, bus.ErrNotConnected) {
		t.Errorf("Send while core is down = %v, want ErrNotConnected", err)
	}

	second := serveHub(t, path, nil)
	waitSignal(t, connected, "OnConnect after the restart")
	second.waitJoin(t)
	say(second, "after")
	if err := c.Send(in); err != nil {
		t.Fatalf("Send after rejoining = %v", err)
	}
	got := recvEnvelope(t, second.core, "inbound at the new core")
	if got.Kind != contracts.KindInbound || got.Sender != "cli" {
		t.Errorf("new core got %s from %q, want %s from cli", got.Kind, got.Sender, contracts.KindInbound)
	}
	if err := stop(); err != nil {
		t.Errorf("Run after cancel = %v, want nil", err)
	}
}

// While core is away a long time (an hour here, on a fake clock), the
// client redials with a wait that doubles from 50 ms up to its MaxRedial
// and says so once, not at every redial; joined again it says that once,
// and a connection that lasted starts the backoff afresh.
func TestClientBacksOffQuietlyWhileCoreIsAway(t *testing.T) {
	path := hubtest.SocketPath(t)
	clk := clock.NewFake(time.Now())
	logs := hubtest.NewLog()
	connected := make(chan struct{}, 4)
	c := &bus.Client{
		Socket: path, Hello: contracts.Hello{Role: contracts.RolePanel, Name: "panel"},
		Logf: logs.Logf, Clock: clk, MaxRedial: time.Minute,
		OnConnect: func(*bus.Conn) { connected <- struct{}{} },
	}
	runClient(t, c, func(*bus.Conn, contracts.Envelope) {})

	var waits []time.Duration
	for away := time.Duration(0); away < time.Hour; {
		d := nextRedial(t, clk)
		waits = append(waits, d)
		clk.Advance(d)
		away += d
	}
	want := 50 * time.Millisecond
	for i, d := range waits {
		if d != want {
			t.Fatalf("redial wait %d = %v, want %v (all: %v)", i, d, want, waits)
		}
		want = min(2*want, time.Minute)
	}
	if lines := logs.Lines(); len(lines) != 1 || !strings.Contains(lines[0], "core does not answer") {
		t.Errorf("an hour away (%d redials) logged %q, want one line that core does not answer", len(waits), lines)
	}

	// Core comes back while the client waits to redial.
	redial := nextRedial(t, clk)
	h := serveHub(t, path, nil)
	clk.Advance(redial)
	waitSignal(t, connected, "OnConnect once core is back")
	h.waitJoin(t)
	clk.Advance(10 * time.Second) // joined a while
	h.stop()
	logs.WaitFor(t, "connection lost")
	if d := nextRedial(t, clk); d != 50*time.Millisecond {
		t.Errorf("first redial after a connection that lasted waits %v, want 50ms", d)
	}
	clk.Advance(nextRedial(t, clk))
	nextRedial(t, clk) // the second redial failed, as core is still away
	lines := logs.Lines()
	if len(lines) != 3 || !strings.Contains(lines[1], "joined") || !strings.Contains(lines[2], "connection lost") {
		t.Errorf("logged %q, want one line each: core does not answer, joined, connection lost", lines)
	}
}

// nextRedial waits for the client to schedule its next redial on clk and
// returns how far ahead it is.
func nextRedial(t *testing.T, clk *clock.Fake) time.Duration {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		if d, ok := clk.Next(); ok {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client scheduled no redial within %v", patience)
		}
		time.Sleep(time.Millisecond)
	}
}

func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(patience):
		t.Fatalf("no %s within %v", what, patience)
	}
}

// A refusal will only be repeated, so Run gives up at once with it.
func TestClientRunReturnsRefusal(t *testing.T) {
	path := hubtest.SocketPath(t)
	var mu sync.Mutex
	asked := 0
	serveHub(t, path, func(contracts.Hello, hub.Cred) error {
		mu.Lock()
		asked++
		mu.Unlock()
		return errors.New(`turn "t-1" is not running`)
	})
	c := &bus.Client{
		Socket:    path,
		Hello:     contracts.Hello{Role: contracts.RoleWorker, Turn: "t-1"},
		OnConnect: func(*bus.Conn) { t.Error("OnConnect ran for a refused client") },
	}
	done := make(chan error, 1)
	go func() {
		done <- c.Run(context.Background(), func(*bus.Conn, contracts.Envelope) {})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, bus.ErrRefused) || !strings.Contains(err.Error(), `turn "t-1" is not running`) {
			t.Errorf("Run = %v, want a refusal with core's reason", err)
		}
	case <-time.After(patience):
		t.Fatal("Run kept going after a refusal")
	}
	mu.Lock()
	defer mu.Unlock()
	if asked != 1 {
		t.Errorf("VerifyWorker asked %d times, want 1 (no retry after a refusal)", asked)
	}
}

func TestClientSendBeforeJoining(t *testing.T) {
	c := &bus.Client{Socket: hubtest.SocketPath(t), Hello: contracts.Hello{Role: contracts.RolePanel}}
	env := contracts.Envelope{Kind: contracts.KindSnapshot}
	if err := c.Send(env); !errors.Is(err, bus.ErrNotConnected) {
		t.Errorf("Send before Run = %v, want ErrNotConnected", err)
	}
	// With no core at all, Run keeps redialing and Send keeps failing.
	logs := hubtest.NewLog()
	c.Logf = logs.Logf
	stop := runClient(t, c, func(*bus.Conn, contracts.Envelope) {})
	logs.WaitFor(t, "core does not answer")
	if err := c.Send(env); !errors.Is(err, bus.ErrNotConnected) {
		t.Errorf("Send while no core listens = %v, want ErrNotConnected", err)
	}
	if err := stop(); err != nil {
		t.Errorf("Run after cancel = %v, want nil", err)
	}
}

// TestClientSaysWhyItCannotDial: a client that cannot reach core hears
// why from every failed dial, so an actor can tell the owner (no socket
// there, no permission on it) instead of only "not connected".
func TestClientSaysWhyItCannotDial(t *testing.T) {
	path := hubtest.SocketPath(t)
	why := make(chan error, 16)
	c := &bus.Client{Socket: path, Hello: contracts.Hello{Role: contracts.RolePanel},
		OnDialError: func(err error) {
			select {
			case why <- err:
			default:
			}
		}}
	stop := runClient(t, c, func(*bus.Conn, contracts.Envelope) {})
	select {
	case err := <-why:
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
			t.Errorf("OnDialError(%v), want the socket %s named as missing", err, path)
		}
	case <-time.After(patience):
		t.Fatal("OnDialError was not called while no core listens")
	}
	if err := stop(); err != nil {
		t.Errorf("Run after cancel = %v, want nil", err)
	}
}

func TestClientRunStopsOnCancel(t *testing.T) {
	tests := []struct {
		name string
		// setup prepares path and c, and returns a wait that blocks until
		// Run is in the state under test.
		setup func(t *testing.T, path string, c *bus.Client) (wait func())
	}{
		{"while joined", func(t *testing.T, path string, c *bus.Client) func() {
			serveHub(t, path, nil)
			connected := make(chan struct{}, 1)
			c.OnConnect = func(*bus.Conn) { connected <- struct{}{} }
			return func() { waitSignal(t, connected, "OnConnect") }
		}},
		{"while waiting to redial", func(t *testing.T, path string, c *bus.Client) func() {
			logs := hubtest.NewLog()
			c.Logf = logs.Logf
			return func() { logs.WaitFor(t, "core does not answer") }
		}},
		{"while waiting for a welcome", func(t *testing.T, path string, c *bus.Client) func() {
			accepted := silentListener(t, path)
			return func() { waitSignal(t, accepted, "a connection to the silent listener") }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := hubtest.SocketPath(t)
			c := &bus.Client{Socket: path, Hello: contracts.Hello{Role: contracts.RolePanel}}
			wait := tt.setup(t, path, c)
			stop := runClient(t, c, func(*bus.Conn, contracts.Envelope) {})
			wait()
			if err := stop(); err != nil {
				t.Errorf("Run after cancel = %v, want nil", err)
			}
		})
	}
}
