package hub_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shelldon/bus"
	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/hub"
	"shelldon/daemon/hub/hubtest"
)

// patience bounds every wait, so a hang fails the test instead of
// blocking the run.
const patience = 5 * time.Second

// fixture is a hub serving on a real socket, with its callbacks turned
// into channels.
type fixture struct {
	*hub.Hub
	path   string
	core   chan contracts.Envelope
	joined chan *hub.Peer
	left   chan *hub.Peer
	logs   *hubtest.Log
	// stop cancels Serve and fails the test if it does not return promptly.
	stop func()
}

// serve starts a hub; cfg's Core, OnJoin, OnLeave and Logf are filled in
// by the fixture unless set.
func serve(t *testing.T, cfg hub.Config) *fixture {
	t.Helper()
	f := &fixture{
		path:   hubtest.SocketPath(t),
		core:   make(chan contracts.Envelope, 16),
		joined: make(chan *hub.Peer, 16),
		left:   make(chan *hub.Peer, 16),
		logs:   hubtest.NewLog(),
	}
	if cfg.Core == nil {
		cfg.Core = f.core
	}
	if cfg.OnJoin == nil {
		cfg.OnJoin = func(p *hub.Peer) { f.joined <- p }
	}
	if cfg.OnLeave == nil {
		cfg.OnLeave = func(p *hub.Peer) { f.left <- p }
	}
	if cfg.Logf == nil {
		cfg.Logf = f.logs.Logf
	}
	f.Hub, _, f.stop = hubtest.Serve(t, f.path, cfg)
	return f
}

// join dials the hub as hello and waits until the hub has registered the
// peer, so routes can reach it.
func (f *fixture) join(t *testing.T, hello contracts.Hello) (*bus.Conn, *hub.Peer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	conn, err := bus.Dial(ctx, f.path, hello, 0)
	if err != nil {
		t.Fatalf("Dial(%+v) = %v", hello, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, f.waitJoin(t)
}

func (f *fixture) waitJoin(t *testing.T) *hub.Peer {
	t.Helper()
	select {
	case p := <-f.joined:
		return p
	case <-time.After(patience):
		t.Fatalf("no peer joined within %v", patience)
		return nil
	}
}

func (f *fixture) waitLeave(t *testing.T) *hub.Peer {
	t.Helper()
	select {
	case p := <-f.left:
		return p
	case <-time.After(patience):
		t.Fatalf("no peer left within %v", patience)
		return nil
	}
}

func (f *fixture) waitCore(t *testing.T) contracts.Envelope {
	t.Helper()
	select {
	case env := <-f.core:
		return env
	case <-time.After(patience):
		t.Fatalf("nothing reached core within %v", patience)
		return contracts.Envelope{}
	}
}

// recv reads one envelope, failing the test if none comes in time.
func recv(t *testing.T, conn *bus.Conn) contracts.Envelope {
	t.Helper()
	type result struct {
		env contracts.Envelope
		err error
	}
	got := make(chan result, 1)
	go func() {
		env, err := conn.Recv()
		got <- result{env, err}
	}()
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("Recv = %v", r.err)
		}
		return r.env
	case <-time.After(patience):
		conn.Close()
		t.Fatalf("nothing received within %v", patience)
		return contracts.Envelope{}
	}
}

func envelope(t *testing.T, kind contracts.Kind, turn string, body any) contracts.Envelope {
	t.Helper()
	env, err := contracts.NewEnvelope(kind, turn, body)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func send(t *testing.T, conn *bus.Conn, env contracts.Envelope) {
	t.Helper()
	if err := conn.Send(env); err != nil {
		t.Fatalf("Send(%s) = %v", env.Kind, err)
	}
}

func bodyText(t *testing.T, env contracts.Envelope) string {
	t.Helper()
	var s string
	if err := env.Decode(&s); err != nil {
		t.Fatalf("body of %s: %v", env.Kind, err)
	}
	return s
}

func TestListenSocketMode(t *testing.T) {
	f := serve(t, hub.Config{})
	fi, err := os.Lstat(f.path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("bus path mode = %v, want a socket", fi.Mode())
	}
	if perm := fi.Mode().Perm(); perm != 0o660 {
		t.Errorf("bus socket permissions = %v, want -rw-rw----", perm)
	}
}

func TestListenReplacesStaleSocket(t *testing.T) {
	path := hubtest.SocketPath(t)
	// A crashed core leaves its socket file behind with nobody listening.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("stale socket not left behind: %v", err)
	}

	h, err := hub.Listen(path, hub.Config{})
	if err != nil {
		t.Fatalf("Listen over a stale socket = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	dctx, dcancel := context.WithTimeout(context.Background(), patience)
	defer dcancel()
	conn, err := bus.Dial(dctx, path, contracts.Hello{Role: contracts.RolePanel}, 0)
	if err != nil {
		t.Fatalf("Dial the new hub = %v", err)
	}
	conn.Close()
}

func TestListenRefusesLiveSocket(t *testing.T) {
	f := serve(t, hub.Config{})
	if _, err := hub.Listen(f.path, hub.Config{}); err == nil {
		t.Fatal("second Listen on a served socket = nil error")
	} else if !strings.Contains(err.Error(), "another core is already serving") {
		t.Errorf("second Listen = %v, want it to say another core serves the socket", err)
	}
	// The first hub must still own its socket.
	conn, _ := f.join(t, contracts.Hello{Role: contracts.RolePanel})
	conn.Close()
}

// A core too busy to take a connection is still alive: its socket must
// not be mistaken for a stale one and removed from under it.
func TestListenKeepsBusySocket(t *testing.T) {
	path := hubtest.SocketPath(t)
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	// Fill the backlog of a listener that never accepts.
	full := false
	for range 16 {
		c, err := net.Dial("unix", path)
		if err != nil {
			full = true
			break
		}
		defer c.Close()
	}
	if !full {
		t.Fatal("could not fill the listener's backlog")
	}
	before, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hub.Listen(path, hub.Config{}); err == nil {
		t.Error("Listen over a busy core's socket = nil error")
	}
	after, err := os.Lstat(path)
	if err != nil || !os.SameFile(before, after) {
		t.Errorf("the busy core's socket was replaced (Lstat = %v)", err)
	}
}

func TestListenRefusesRegularFile(t *testing.T) {
	path := hubtest.SocketPath(t)
	if err := os.WriteFile(path, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := hub.Listen(path, hub.Config{}); err == nil || !strings.Contains(err.Error(), "non-socket") {
		t.Errorf("Listen over a regular file = %v, want a non-socket error", err)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != "keep me" {
		t.Errorf("the file in the way = %q, %v; want it untouched", data, err)
	}
}

func TestListenMissingDirectory(t *testing.T) {
	path := filepath.Join(hubtest.SocketPath(t), "no", "such", "bus.sock")
	if _, err := hub.Listen(path, hub.Config{}); err == nil {
		t.Error("Listen in a missing directory = nil error")
	}
}

// handshake writes first as a raw frame and reads the hub's welcome.
func handshake(t *testing.T, path string, first contracts.Envelope) contracts.Welcome {
	t.Helper()
	nc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(patience))
	// A hub that refuses a caller before it reads the hello may have
	// closed before it was written; its refusal is still there to read.
	written := bus.WriteFrame(nc, first, 0)
	reply, err := bus.ReadFrame(nc, 0)
	if err != nil {
		t.Fatalf("reading the welcome: %v (writing the hello: %v)", err, written)
	}
	var w contracts.Welcome
	if reply.Kind != contracts.KindWelcome {
		t.Fatalf("hub answered %s, want %s", reply.Kind, contracts.KindWelcome)
	}
	if err := reply.Decode(&w); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestHandshakeRefusals(t *testing.T) {
	hello := func(h contracts.Hello) contracts.Envelope {
		return envelope(t, contracts.KindHello, h.Turn, h)
	}
	tests := []struct {
		name   string
		first  contracts.Envelope
		reason string
	}{
		{"first frame not a hello", envelope(t, contracts.KindInbound, "", "hi"), "first frame must be"},
		{"hello without a body", contracts.Envelope{Kind: contracts.KindHello}, "first frame must be"},
		{"hello body not an object", contracts.Envelope{Kind: contracts.KindHello, Body: []byte(`"broker"`)}, "first frame must be"},
		{"unknown role", hello(contracts.Hello{Role: "wizard"}), `unknown role "wizard"`},
		{"empty role", hello(contracts.Hello{}), `unknown role ""`},
		{"core role", hello(contracts.Hello{Role: contracts.RoleCore}), `unknown role "core"`},
		{"worker without a turn", hello(contracts.Hello{Role: contracts.RoleWorker}), "must name its turn"},
	}
	f := serve(t, hub.Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := handshake(t, f.path, tt.first)
			if w.OK || !strings.Contains(w.Reason, tt.reason) {
				t.Errorf("welcome = %+v, want a refusal containing %q", w, tt.reason)
			}
		})
	}
	select {
	case p := <-f.joined:
		t.Errorf("a refused caller joined: %+v", p.Hello)
	default:
	}
}

func TestVerifyWorkerRefusalReachesWorker(t *testing.T) {
	asked := make(chan contracts.Hello, 16)
	f := serve(t, hub.Config{VerifyWorker: func(h contracts.Hello, c hub.Cred) error {
		asked <- h
		return fmt.Errorf("pid %d is not the worker of turn %q", c.PID, h.Turn)
	}})
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	conn, err := bus.Dial(ctx, f.path, contracts.Hello{Role: contracts.RoleWorker, Turn: "t-1"}, 0)
	if err == nil {
		conn.Close()
		t.Fatal("Dial(worker) = nil error, want a refusal")
	}
	reason := fmt.Sprintf("pid %d is not the worker of turn \"t-1\"", os.Getpid())
	if !errors.Is(err, bus.ErrRefused) || !strings.Contains(err.Error(), reason) {
		t.Errorf("Dial(worker) = %v, want a refusal with VerifyWorker's reason", err)
	}
	// Only workers have a turn to prove.
	f.join(t, contracts.Hello{Role: contracts.RolePanel})
	f.join(t, contracts.Hello{Role: contracts.RoleBroker})
	if n := len(asked); n != 1 {
		t.Errorf("VerifyWorker asked %d times, want once, for the worker", n)
	}
}

func TestVerifyWorkerSeesKernelCredentials(t *testing.T) {
	seen := make(chan hub.Cred, 1)
	f := serve(t, hub.Config{VerifyWorker: func(_ contracts.Hello, c hub.Cred) error {
		seen <- c
		return nil
	}})
	_, p := f.join(t, contracts.Hello{Role: contracts.RoleWorker, Turn: "t-1"})
	want := hub.Cred{PID: os.Getpid(), UID: os.Getuid(), GID: os.Getgid()}
	select {
	case got := <-seen:
		if got != want {
			t.Errorf("VerifyWorker saw %+v, want %+v", got, want)
		}
	case <-time.After(patience):
		t.Fatal("VerifyWorker was not called")
	}
	if p.Cred != want {
		t.Errorf("Peer.Cred = %+v, want %+v", p.Cred, want)
	}
}

// The hub says who sent a frame; what the sender claims is overwritten.
func TestInboundReachesCoreWithProvenSender(t *testing.T) {
	f := serve(t, hub.Config{})
	conn, _ := f.join(t, contracts.Hello{Role: contracts.RoleTransport, Name: "cli"})
	in := envelope(t, contracts.KindInbound, "", "hello pet")
	in.From, in.Sender = contracts.RoleCore, "telegram"
	send(t, conn, in)
	got := f.waitCore(t)
	if got.Kind != contracts.KindInbound || got.From != contracts.RoleTransport || got.Sender != "cli" {
		t.Errorf("core got %s from %s %q, want %s from transport \"cli\"", got.Kind, got.From, got.Sender, contracts.KindInbound)
	}
	if text := bodyText(t, got); text != "hello pet" {
		t.Errorf("core got body %q, want %q", text, "hello pet")
	}
}

func TestWorkerSpeaksOnlyForItsTurn(t *testing.T) {
	f := serve(t, hub.Config{})
	broker, _ := f.join(t, contracts.Hello{Role: contracts.RoleBroker, Name: "broker"})
	worker, _ := f.join(t, contracts.Hello{Role: contracts.RoleWorker, Turn: "t-7"})

	job := envelope(t, contracts.KindJob, "t-1", "prompt")
	job.From, job.Sender = contracts.RoleCore, "core"
	send(t, worker, job)
	got := recv(t, broker)
	if got.Kind != contracts.KindJob || got.Turn != "t-7" || got.From != contracts.RoleWorker || got.Sender != "" {
		t.Errorf("broker got %s turn %q from %s %q, want %s turn \"t-7\" from worker \"\"", got.Kind, got.Turn, got.From, got.Sender, contracts.KindJob)
	}

	result := envelope(t, contracts.KindResult, "", "done")
	send(t, worker, result)
	if got := f.waitCore(t); got.Kind != contracts.KindResult || got.Turn != "t-7" {
		t.Errorf("core got %s turn %q, want %s turn \"t-7\"", got.Kind, got.Turn, contracts.KindResult)
	}
}

// A kind the sender's role may not send is dropped and logged; the
// sender's next, allowed frame still gets through.
func TestForbiddenKindsAreDropped(t *testing.T) {
	tests := []struct {
		role contracts.Role
		kind contracts.Kind
	}{
		{contracts.RoleTransport, contracts.KindResult},
		{contracts.RoleTransport, contracts.KindOutbound},
		{contracts.RoleWorker, contracts.KindOutbound},
		{contracts.RoleWorker, contracts.KindTurnInput},
		{contracts.RoleBroker, contracts.KindJob},
		{contracts.RolePanel, contracts.KindSnapshot},
		{contracts.RolePanel, contracts.KindInbound},
		{contracts.RoleTransport, "NOT_A_KIND"},
		{contracts.RoleTransport, contracts.KindHello},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s sends %s", tt.role, tt.kind), func(t *testing.T) {
			f := serve(t, hub.Config{})
			c := f.joinEveryRole(t)
			send(t, c[tt.role], envelope(t, tt.kind, "t-1", "forged"))
			f.logs.WaitFor(t, fmt.Sprintf("dropped %s from %s", tt.kind, tt.role))
			f.nothingDelivered(t, c)
		})
	}
}

// TestPanelMaySendNothing: any user that may connect may be a panel, which
// is safe only because a panel may send nothing at all. A panel's frames
// of every kind are dropped, and none reaches anyone.
func TestPanelMaySendNothing(t *testing.T) {
	kinds := []contracts.Kind{contracts.KindHello, contracts.KindWelcome, "NOT_A_KIND", ""}
	for _, kind := range slices.Sorted(maps.Keys(contracts.Routes)) {
		kinds = append(kinds, kind)
	}
	for kind, roles := range contracts.Senders {
		if slices.Contains(roles, contracts.RolePanel) {
			t.Errorf("contracts.Senders lets a panel send %s", kind)
		}
	}
	f := serve(t, hub.Config{})
	c := f.joinEveryRole(t)
	seen := 0
	for _, kind := range kinds {
		send(t, c[contracts.RolePanel], envelope(t, kind, "t-1", "forged"))
		seen = f.logs.WaitAfter(t, seen, fmt.Sprintf("dropped %s from panel", kind))
	}
	f.nothingDelivered(t, c)
}

// joinEveryRole joins one connection of each role but core, so that only
// the sender check can stop a forged frame.
func (f *fixture) joinEveryRole(t *testing.T) map[contracts.Role]*bus.Conn {
	t.Helper()
	conns := map[contracts.Role]*bus.Conn{}
	for _, hello := range []contracts.Hello{
		{Role: contracts.RoleTransport, Name: "cli"},
		{Role: contracts.RolePanel},
		{Role: contracts.RoleBroker},
		{Role: contracts.RoleWorker, Turn: "t-1"},
	} {
		conns[hello.Role], _ = f.join(t, hello)
	}
	return conns
}

// nothingDelivered checks that core and every receiver in conns got
// nothing yet: the next frame each gets is a marker sent now.
func (f *fixture) nothingDelivered(t *testing.T, conns map[contracts.Role]*bus.Conn) {
	t.Helper()
	send(t, conns[contracts.RoleTransport], envelope(t, contracts.KindInbound, "", "marker"))
	if got := f.waitCore(t); got.Kind != contracts.KindInbound || bodyText(t, got) != "marker" {
		t.Errorf("core got %s %s first, want the marker", got.Kind, got.Body)
	}
	markers := []struct {
		role contracts.Role
		env  contracts.Envelope
	}{
		{contracts.RoleTransport, envelope(t, contracts.KindOutbound, "", "marker")},
		{contracts.RolePanel, envelope(t, contracts.KindSnapshot, "", "marker")},
		{contracts.RoleBroker, envelope(t, contracts.KindJob, "t-1", "marker")},
		{contracts.RoleWorker, envelope(t, contracts.KindTurnInput, "t-1", "marker")},
	}
	for _, m := range markers {
		if err := f.Route(m.env); err != nil {
			t.Fatalf("Route(%s marker) = %v", m.env.Kind, err)
		}
		if got := recv(t, conns[m.role]); got.Kind != m.env.Kind || bodyText(t, got) != "marker" {
			t.Errorf("%s got %s %s first, want the marker", m.role, got.Kind, got.Body)
		}
	}
}

func TestOutboundAddressing(t *testing.T) {
	f := serve(t, hub.Config{})
	cli, _ := f.join(t, contracts.Hello{Role: contracts.RoleTransport, Name: "cli"})
	telegram, _ := f.join(t, contracts.Hello{Role: contracts.RoleTransport, Name: "telegram"})
	panel, _ := f.join(t, contracts.Hello{Role: contracts.RolePanel, Name: "cli"})

	toCLI := envelope(t, contracts.KindOutbound, "", "just you")
	toCLI.To = "cli"
	if err := f.Route(toCLI); err != nil {
		t.Fatalf("Route(outbound to cli) = %v", err)
	}
	if err := f.Route(envelope(t, contracts.KindOutbound, "", "everyone")); err != nil {
		t.Fatalf("Route(outbound to all) = %v", err)
	}
	if err := f.Route(envelope(t, contracts.KindSnapshot, "", "face")); err != nil {
		t.Fatalf("Route(snapshot) = %v", err)
	}

	for _, want := range []string{"just you", "everyone"} {
		got := recv(t, cli)
		if got.Kind != contracts.KindOutbound || got.From != contracts.RoleCore || bodyText(t, got) != want {
			t.Errorf("cli got %s %s from %s, want outbound %q from core", got.Kind, got.Body, got.From, want)
		}
	}
	if got := recv(t, telegram); bodyText(t, got) != "everyone" {
		t.Errorf("telegram's first frame = %s, want only the broadcast", got.Body)
	}
	// A panel that happens to share the name is not a transport.
	if got := recv(t, panel); got.Kind != contracts.KindSnapshot {
		t.Errorf("panel named cli got %s first, want only the snapshot", got.Kind)
	}
}

func TestCompletionReachesOnlyItsTurn(t *testing.T) {
	f := serve(t, hub.Config{})
	first, _ := f.join(t, contracts.Hello{Role: contracts.RoleWorker, Turn: "t-1"})
	second, _ := f.join(t, contracts.Hello{Role: contracts.RoleWorker, Turn: "t-2"})
	for _, turn := range []string{"t-1", "t-2"} {
		if err := f.Route(envelope(t, contracts.KindCompletion, turn, "for "+turn)); err != nil {
			t.Fatalf("Route(completion for %s) = %v", turn, err)
		}
	}
	for conn, turn := range map[*bus.Conn]string{first: "t-1", second: "t-2"} {
		if got := recv(t, conn); got.Turn != turn || bodyText(t, got) != "for "+turn {
			t.Errorf("worker of %s got %s (turn %q) first, want its own completion", turn, got.Body, got.Turn)
		}
	}
}

// TestSecondBrokerIsRefused is the attack of a second broker, which the
// hub would route every turn's JOB to (the whole prompt) while the real
// broker got nothing: a broker hello while a live broker is joined is
// refused with who holds the place, and logged; the jobs still reach the
// first broker. Once it has left, a new broker may join.
func TestSecondBrokerIsRefused(t *testing.T) {
	f := serve(t, hub.Config{})
	first, _ := f.join(t, contracts.Hello{Role: contracts.RoleBroker, Name: "real"})
	worker, _ := f.join(t, contracts.Hello{Role: contracts.RoleWorker, Turn: "t-1"})

	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	thief, err := bus.Dial(ctx, f.path, contracts.Hello{Role: contracts.RoleBroker, Name: "thief"}, 0)
	if err == nil {
		thief.Close()
		t.Fatal("a second broker joined while the first was live")
	}
	reason := fmt.Sprintf("a broker is already joined (pid %d, uid %d)", os.Getpid(), os.Getuid())
	if !errors.Is(err, bus.ErrRefused) || !strings.Contains(err.Error(), reason) {
		t.Errorf("Dial(second broker) = %v, want a refusal saying %q", err, reason)
	}
	f.logs.WaitFor(t, fmt.Sprintf(`bus: refused pid %d uid %d (broker "thief"): %s`, os.Getpid(), os.Getuid(), reason))
	select {
	case p := <-f.joined:
		t.Fatalf("the refused broker joined: %+v", p.Hello)
	default:
	}
	for _, prompt := range []string{"first", "second"} {
		send(t, worker, envelope(t, contracts.KindJob, "", prompt))
		if got := recv(t, first); got.Kind != contracts.KindJob || bodyText(t, got) != prompt {
			t.Errorf("the first broker got %s %s, want the job %q", got.Kind, got.Body, prompt)
		}
	}

	first.Close()
	f.waitLeave(t)
	next, _ := f.join(t, contracts.Hello{Role: contracts.RoleBroker, Name: "restarted"})
	send(t, worker, envelope(t, contracts.KindJob, "", "third"))
	if got := recv(t, next); bodyText(t, got) != "third" {
		t.Errorf("the broker that joined after the first left got %s, want the third job", got.Body)
	}
}

// TestQuickBrokerRestart: a broker that restarts says hello again as soon
// as its old connection is closed, before the hub may have read the old
// one's end: it is admitted, not locked out by its own past.
func TestQuickBrokerRestart(t *testing.T) {
	f := serve(t, hub.Config{})
	worker, _ := f.join(t, contracts.Hello{Role: contracts.RoleWorker, Turn: "t-1"})
	for i := range 10 {
		old, _ := f.join(t, contracts.Hello{Role: contracts.RoleBroker, Name: fmt.Sprint("run-", i)})
		old.Close() // no wait for the hub to notice
		next, _ := f.join(t, contracts.Hello{Role: contracts.RoleBroker, Name: fmt.Sprint("run-", i+1)})
		f.waitLeave(t)
		send(t, worker, envelope(t, contracts.KindJob, "", "after a restart"))
		if got := recv(t, next); bodyText(t, got) != "after a restart" {
			t.Fatalf("the restarted broker got %s, want the job", got.Body)
		}
		next.Close()
		f.waitLeave(t)
	}
}

// TestDeafBrokerMakesWay: a broker the hub can no longer write to (it shut
// its reading side, so writing its job failed) takes no more jobs, and
// must not keep the place from the broker that replaces it: the new one is
// admitted, the deaf one's connection is closed, and jobs reach the new one.
func TestDeafBrokerMakesWay(t *testing.T) {
	f := serve(t, hub.Config{})
	nc, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: f.path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(patience))
	if err := bus.WriteFrame(nc, envelope(t, contracts.KindHello, "", contracts.Hello{Role: contracts.RoleBroker, Name: "deaf"}), 0); err != nil {
		t.Fatal(err)
	}
	if w, err := bus.ReadFrame(nc, 0); err != nil || w.Kind != contracts.KindWelcome {
		t.Fatalf("the deaf broker's welcome = %s, %v", w.Kind, err)
	}
	deaf := f.waitJoin(t)
	if err := nc.CloseRead(); err != nil {
		t.Fatal(err)
	}
	if err := f.Route(envelope(t, contracts.KindJob, "t-1", "lost")); err != nil {
		t.Fatalf("Route(job to the broker) = %v", err)
	}
	f.logs.WaitFor(t, `writing JOB to broker "deaf"`)

	next, _ := f.join(t, contracts.Hello{Role: contracts.RoleBroker, Name: "next"})
	if left := f.waitLeave(t); left != deaf {
		t.Errorf("OnLeave got %s %q, want the deaf broker", left.Hello.Role, left.Hello.Name)
	}
	if err := f.Route(envelope(t, contracts.KindJob, "t-1", "heard")); err != nil {
		t.Fatalf("Route(job to the new broker) = %v", err)
	}
	if got := recv(t, next); bodyText(t, got) != "heard" {
		t.Errorf("the new broker got %s, want the job", got.Body)
	}
	if peers := f.Peers(contracts.RoleBroker); len(peers) != 1 || peers[0].Hello.Name != "next" {
		t.Errorf("Peers(broker) = %d peers, want only the new one", len(peers))
	}
}

// TestJobWaitsForABroker: a worker's job sent while no broker is
// connected (core just started, the broker restarts) reaches the broker
// that joins within HoldFor, and is dropped, with a log line, once
// HoldFor has passed.
func TestJobWaitsForABroker(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	f := serve(t, hub.Config{HoldFor: 25 * time.Second, Clock: fake})
	worker, _ := f.join(t, contracts.Hello{Role: contracts.RoleWorker, Turn: "t-1"})

	send(t, worker, envelope(t, contracts.KindJob, "", "early"))
	seen := f.logs.WaitAfter(t, 0, "holding JOB")
	broker, _ := f.join(t, contracts.Hello{Role: contracts.RoleBroker, Name: "late"})
	if got := recv(t, broker); bodyText(t, got) != "early" || got.Turn != "t-1" {
		t.Errorf("the late broker got %s for turn %q, want the held job of t-1", got.Body, got.Turn)
	}

	broker.Close()
	f.waitLeave(t)
	send(t, worker, envelope(t, contracts.KindJob, "", "stale"))
	f.logs.WaitAfter(t, seen, "holding JOB")
	fake.Advance(26 * time.Second)
	again, _ := f.join(t, contracts.Hello{Role: contracts.RoleBroker, Name: "later"})
	f.logs.WaitFor(t, "no broker joined within 25s")
	send(t, worker, envelope(t, contracts.KindJob, "", "fresh"))
	if got := recv(t, again); bodyText(t, got) != "fresh" {
		t.Errorf("the broker's first job = %s, want the fresh one (the stale one expired)", got.Body)
	}
}

// TestLastWordsOfAClosedPeerArrive: a worker that sends its result and
// exits at once, while the hub is writing to it (its job's late
// completion), has its result read all the same: a failed write stops
// the writing, not the reading.
func TestLastWordsOfAClosedPeerArrive(t *testing.T) {
	f := serve(t, hub.Config{})
	for i := range 20 {
		turn := fmt.Sprintf("t-%d", i)
		worker, peer := f.join(t, contracts.Hello{Role: contracts.RoleWorker, Turn: turn})
		send(t, worker, envelope(t, contracts.KindResult, "", "last words"))
		worker.Close()
		// The late completion hits a closed socket.
		for range 3 {
			f.Send(peer, envelope(t, contracts.KindCompletion, turn, "too late"))
		}
		if got := f.waitCore(t); got.Kind != contracts.KindResult || got.Turn != turn {
			t.Fatalf("core got %s for turn %q, want the result of %s", got.Kind, got.Turn, turn)
		}
		f.waitLeave(t)
	}
}

func TestRouteWithoutTarget(t *testing.T) {
	f := serve(t, hub.Config{})
	f.join(t, contracts.Hello{Role: contracts.RoleWorker, Turn: "t-1"})
	f.join(t, contracts.Hello{Role: contracts.RoleTransport, Name: "cli"})
	addressed := envelope(t, contracts.KindOutbound, "", "hi")
	addressed.To = "telegram"
	tests := []struct {
		name string
		env  contracts.Envelope
	}{
		{"no broker", envelope(t, contracts.KindJob, "t-1", "x")},
		{"no worker for the turn", envelope(t, contracts.KindCompletion, "t-9", "x")},
		{"no turn named", envelope(t, contracts.KindTurnInput, "", "x")},
		{"no transport of that name", addressed},
		{"no panel", envelope(t, contracts.KindSnapshot, "", "x")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := f.Route(tt.env); !errors.Is(err, hub.ErrNoRoute) {
				t.Errorf("Route(%s turn %q to %q) = %v, want ErrNoRoute", tt.env.Kind, tt.env.Turn, tt.env.To, err)
			}
		})
	}
}

func TestRouteUnknownKind(t *testing.T) {
	f := serve(t, hub.Config{})
	for _, kind := range []contracts.Kind{contracts.KindHello, contracts.KindWelcome, "BOGUS", ""} {
		if err := f.Route(contracts.Envelope{Kind: kind}); err == nil || errors.Is(err, hub.ErrNoRoute) {
			t.Errorf("Route(%q) = %v, want a not-in-the-routing-table error", kind, err)
		}
	}
}

func TestRouteToCoreWithoutInbox(t *testing.T) {
	h, err := hub.Listen(hubtest.SocketPath(t), hub.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h.Serve(ctx) // closes the listener
	if err := h.Route(contracts.Envelope{Kind: contracts.KindInbound}); !errors.Is(err, hub.ErrNoRoute) {
		t.Errorf("Route(inbound) with no Core channel = %v, want ErrNoRoute", err)
	}
}

// A panel that stops reading fills its queue, is waited for StallFor,
// and is dropped; the hub goes on serving everyone else.
func TestSlowReaderIsDropped(t *testing.T) {
	f := serve(t, hub.Config{QueueLength: 8, StallFor: 200 * time.Millisecond})
	_, slowPeer := f.join(t, contracts.Hello{Role: contracts.RolePanel, Name: "wedged"})
	transport, _ := f.join(t, contracts.Hello{Role: contracts.RoleTransport, Name: "cli"})

	// Big snapshots fill the socket buffer quickly, then the queue.
	snapshot := envelope(t, contracts.KindSnapshot, "", strings.Repeat("@", 64<<10))
	reply := envelope(t, contracts.KindOutbound, "", "still here")
	flood := make(chan error, 1)
	go func() {
		for i := range 10000 {
			select {
			case <-slowPeer.Gone():
				flood <- nil
				return
			default:
			}
			f.Route(snapshot) // fails once the panel is dropped
			// The transport, which does read, is served all along.
			if err := f.Route(reply); err != nil {
				flood <- fmt.Errorf("Route(outbound %d) while a panel is wedged = %v", i, err)
				return
			}
			if _, err := transport.Recv(); err != nil {
				flood <- fmt.Errorf("transport Recv %d while a panel is wedged = %v", i, err)
				return
			}
		}
		flood <- errors.New("the wedged panel was never dropped")
	}()
	select {
	case err := <-flood:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		transport.Close()
		t.Fatal("Route blocked behind a panel that does not read")
	}
	f.logs.WaitFor(t, `dropped slow reader panel "wedged"`)
	if p := f.waitLeave(t); p != slowPeer {
		t.Errorf("OnLeave got %+v, want the wedged panel", p.Hello)
	}
	if peers := f.Peers(contracts.RolePanel); len(peers) != 0 {
		t.Errorf("Peers(panel) after the drop = %d peers, want none", len(peers))
	}
	if err := f.Hub.Send(slowPeer, envelope(t, contracts.KindSnapshot, "", "late")); !errors.Is(err, hub.ErrNoRoute) {
		t.Errorf("Send to a dropped peer = %v, want ErrNoRoute", err)
	}
	// The transport was never dropped.
	if peers := f.Peers(contracts.RoleTransport); len(peers) != 1 {
		t.Errorf("Peers(transport) = %d peers, want 1", len(peers))
	}
	if err := f.Route(reply); err != nil {
		t.Errorf("Route(outbound) after the drop = %v", err)
	}
	recv(t, transport)
}

// TestASlowReaderLosesNothing: a transport that reads, but slowly — as
// one storing each of a burst of requests does — is sent everything
// routed to it, in order, its queue of 8 waited on rather than the
// transport dropped, where once the 9th envelope of a burst dropped it
// and what followed reached no transport.
func TestASlowReaderLosesNothing(t *testing.T) {
	f := serve(t, hub.Config{QueueLength: 8, StallFor: 2 * time.Second})
	transport, _ := f.join(t, contracts.Hello{Role: contracts.RoleTransport, Name: "telegram"})
	const burst = 300
	got := make(chan error, 1)
	go func() {
		for i := range burst {
			time.Sleep(time.Millisecond) // the transport stores each
			env, err := transport.Recv()
			var said string
			if err == nil {
				err = env.Decode(&said)
			}
			if err == nil && said != fmt.Sprint(i) {
				err = fmt.Errorf("envelope %d says %q", i, said)
			}
			if err != nil {
				got <- err
				return
			}
		}
		got <- nil
	}()
	for i := range burst {
		if err := f.Route(envelope(t, contracts.KindApprovalRequest, "", fmt.Sprint(i))); err != nil {
			t.Fatalf("Route(%d) = %v", i, err)
		}
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if logs := strings.Join(f.logs.Lines(), "\n"); strings.Contains(logs, "slow reader") {
		t.Errorf("the hub dropped a reader that reads:\n%s", logs)
	}
}

func TestJoinAndLeaveCallbacks(t *testing.T) {
	f := serve(t, hub.Config{})
	conn, p := f.join(t, contracts.Hello{Role: contracts.RolePanel, Name: "oled", Note: "128x64"})
	if p.Hello.Role != contracts.RolePanel || p.Hello.Name != "oled" || p.Hello.Note != "128x64" {
		t.Errorf("OnJoin got hello %+v, want panel oled", p.Hello)
	}
	if peers := f.Peers(contracts.RolePanel); len(peers) != 1 || peers[0] != p {
		t.Errorf("Peers(panel) = %v, want the joined peer", peers)
	}
	if peers := f.Peers(contracts.RoleBroker); len(peers) != 0 {
		t.Errorf("Peers(broker) = %v, want none", peers)
	}
	// OnJoin's peer can be sent to at once (core sends a new panel the face).
	if err := f.Hub.Send(p, envelope(t, contracts.KindSnapshot, "", "face")); err != nil {
		t.Fatalf("Send to a joined peer = %v", err)
	}
	if got := recv(t, conn); got.Kind != contracts.KindSnapshot {
		t.Errorf("peer got %s, want the snapshot", got.Kind)
	}

	conn.Close()
	if left := f.waitLeave(t); left != p {
		t.Errorf("OnLeave got %+v, want the peer that joined", left.Hello)
	}
	select {
	case <-p.Gone():
	default:
		t.Error("Gone() still open after OnLeave")
	}
	if peers := f.Peers(contracts.RolePanel); len(peers) != 0 {
		t.Errorf("Peers(panel) after leaving = %v, want none", peers)
	}
}

// Serve's shutdown ends every connection it accepted: joined peers, a
// transport waiting on a full core inbox, and callers still mid-handshake.
func TestServeStopsWithConnectionsOpen(t *testing.T) {
	f := serve(t, hub.Config{Core: make(chan contracts.Envelope)}) // nobody reads core's inbox
	panel, _ := f.join(t, contracts.Hello{Role: contracts.RolePanel})
	transport, _ := f.join(t, contracts.Hello{Role: contracts.RoleTransport, Name: "cli"})
	send(t, transport, envelope(t, contracts.KindInbound, "", "stuck"))

	// Callers that connect and never finish a hello: one silent, one that
	// sent half a frame.
	silent, err := net.Dial("unix", f.path)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	partial, err := net.Dial("unix", f.path)
	if err != nil {
		t.Fatal(err)
	}
	defer partial.Close()
	if _, err := partial.Write([]byte{0, 0, 0, 50, '{'}); err != nil {
		t.Fatal(err)
	}
	// Connections are accepted in order, so once a later caller has
	// joined, the hub is holding both half-open ones.
	f.join(t, contracts.Hello{Role: contracts.RoleBroker})

	stopped := make(chan struct{})
	go func() {
		f.stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(2 * time.Second):
		t.Fatal("Serve did not return within 2s of cancel; a half-open connection held it")
	}
	for name, conn := range map[string]*bus.Conn{"panel": panel, "transport": transport} {
		if _, err := conn.Recv(); err == nil {
			t.Errorf("%s Recv after shutdown = nil error, want the connection closed", name)
		}
	}
	for range 3 {
		f.waitLeave(t)
	}
	if _, err := os.Lstat(f.path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket after shutdown: Lstat = %v, want it removed", err)
	}
}

// TestABrokerThatLeavesFailsItsJobs: a broker that dies holding a job is
// noticed at once: the job's worker gets a failed completion saying the
// broker left, instead of waiting out its budget for an answer that will
// never come; a job it answered is not failed again.
func TestABrokerThatLeavesFailsItsJobs(t *testing.T) {
	f := serve(t, hub.Config{})
	broker, _ := f.join(t, contracts.Hello{Role: contracts.RoleBroker, Name: "real"})
	answered, _ := f.join(t, contracts.Hello{Role: contracts.RoleWorker, Turn: "t-1"})
	waiting, _ := f.join(t, contracts.Hello{Role: contracts.RoleWorker, Turn: "t-2"})
	send(t, answered, envelope(t, contracts.KindJob, "", "one"))
	send(t, waiting, envelope(t, contracts.KindJob, "", "two"))
	for range 2 {
		if got := recv(t, broker); got.Kind != contracts.KindJob {
			t.Fatalf("the broker got %s, want a job", got.Kind)
		}
	}
	done, _ := contracts.NewEnvelope(contracts.KindCompletion, "t-1", contracts.Completion{OK: true, Text: "hi"})
	send(t, broker, done)
	if got := recv(t, answered); got.Kind != contracts.KindCompletion {
		t.Fatalf("the first worker got %s, want its completion", got.Kind)
	}
	started := time.Now()
	broker.Close() // as kill -9 of the broker would
	got := recv(t, waiting)
	var c contracts.Completion
	if got.Kind != contracts.KindCompletion || got.Decode(&c) != nil || c.OK || !strings.Contains(c.Error, "broker left the bus") {
		t.Fatalf("the waiting worker got %s %s, want a failed completion saying the broker left", got.Kind, got.Body)
	}
	if took := time.Since(started); took > time.Second {
		t.Errorf("the worker heard after %v, want within a second", took)
	}
	extra := make(chan contracts.Envelope, 1)
	go func() {
		if env, err := answered.Recv(); err == nil {
			extra <- env
		}
	}()
	select {
	case env := <-extra:
		t.Errorf("the worker whose job was answered got another %s %s", env.Kind, env.Body)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestAStoppingHubDeliversWhatItHolds: what core routes just before the
// hub stops — the answer of a turn that finished as core stopped — reaches
// its peer before the connection closes, where it was dropped from the
// peer's queue; a peer that does not read holds the stop about a second.
func TestAStoppingHubDeliversWhatItHolds(t *testing.T) {
	f := serve(t, hub.Config{QueueLength: 64})
	transport, _ := f.join(t, contracts.Hello{Role: contracts.RoleTransport, Name: "cli"})
	f.join(t, contracts.Hello{Role: contracts.RolePanel}) // joined, never reads
	const n = 50
	for i := range n {
		if err := f.Route(envelope(t, contracts.KindOutbound, "", fmt.Sprint("last words ", i))); err != nil {
			t.Fatal(err)
		}
	}
	for range 200 { // the panel's queue and socket fill up
		f.Route(envelope(t, contracts.KindSnapshot, "", strings.Repeat("x", 4000)))
	}
	began := time.Now()
	f.stop()
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("the stop took %v with a peer that does not read", took)
	}
	for i := range n {
		env, err := transport.Recv()
		if err != nil {
			t.Fatalf("after the stop the transport read %d of the %d envelopes routed before it: %v", i, n, err)
		}
		if got, want := bodyText(t, env), fmt.Sprint("last words ", i); got != want {
			t.Fatalf("envelope %d = %q, want %q", i, got, want)
		}
	}
}
