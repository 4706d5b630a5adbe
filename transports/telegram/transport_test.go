package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	authority "shelldon/daemon/approval"
	"shelldon/daemon/hub"
	"shelldon/daemon/hub/hubtest"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/transports/telegram/telegramtest"
)

const (
	waitLimit = 15 * time.Second
	token     = "123456:test-token-for-the-local-bot-api"
	owner     = 42
	stranger  = 666
)

// rig is a transport between a local Bot API server and a stand-in core:
// a real hub whose core inbox the test reads.
type rig struct {
	api    *telegramtest.Server
	core   *hub.Hub
	inbox  chan contracts.Envelope
	joined chan struct{}
	socket string
	store  *state.Store
	// stopCore ends the rig's core; unconfirmed, when set, makes the
	// rig's core not confirm the owner's messages kept, as core does.
	stopCore    func()
	unconfirmed bool

	// What the next start gives the transport; rig options set them.
	allowed []int64
	giveUp  GiveUp
	clock   clock.Clock
	log     *slog.Logger
	// updates, when set, wraps the store the transport keeps its updates
	// in.
	updates func(updateStore) updateStore
	// configure, when set, changes the transport's Config before it
	// starts: its providers' abilities, its bounds, its poll.
	configure func(*Config)
	// react turns telegram.react on.
	react bool

	// tr is the running transport.
	tr *Transport
	// cancel ends the running transport at once; stop ends it and waits.
	cancel context.CancelFunc
	stop   func()
}

// rigOption changes a rig before its transport first starts.
type rigOption func(*rig)

func newRig(t *testing.T, opts ...rigOption) *rig {
	t.Helper()
	r := &rig{api: telegramtest.New(t, token), inbox: make(chan contracts.Envelope, 64), joined: make(chan struct{}, 8), allowed: []int64{owner}}
	r.startCore(t, "")
	store, err := state.Open(statedir.Layout{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	r.store = store
	for _, opt := range opts {
		opt(r)
	}
	r.start(t)
	// Telegram lets a bot write only to users who wrote to it first.
	for _, id := range r.allowed {
		r.say(t, id, "/start")
	}
	return r
}

// startCore serves the rig's core, the test, on socket (a fresh one when
// empty).
func (r *rig) startCore(t *testing.T, socket string) {
	t.Helper()
	r.core, r.socket, r.stopCore = hubtest.Serve(t, socket, hub.Config{Core: r.inbox, OnJoin: func(*hub.Peer) { r.joined <- struct{}{} }})
}

// start runs a transport over the rig's store until stop or the test's end.
func (r *rig) start(t *testing.T) {
	t.Helper()
	clk := r.clock
	if clk == nil {
		clk = clock.Real{}
	}
	cfg := Config{
		Token: token, APIURL: r.api.URL(), AllowedIDs: r.allowed, Socket: r.socket, MaxFrame: 4 << 20,
		Store: r.store, Statuses: authority.NewStatuses(r.store.Approvals(), clk), PollTimeout: 2 * time.Second, Backoff: Backoff{Min: 20 * time.Millisecond, Max: 200 * time.Millisecond},
		GiveUp: r.giveUp, Clock: r.clock, Location: time.UTC, Log: r.log, React: r.react,
	}
	if r.configure != nil {
		r.configure(&cfg)
	}
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.updates != nil {
		tr.updates = r.updates(tr.updates)
	}
	r.tr = tr
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx) }()
	stopped := false
	r.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v, want nil after cancel", err)
			}
		case <-time.After(waitLimit):
			t.Error("Run did not return after cancel")
		}
	}
	t.Cleanup(r.stop)
	select {
	case <-r.joined:
	case <-time.After(waitLimit):
		t.Fatal("the transport never joined the bus")
	}
}

// nextCore is the next envelope core gets, which must be of kind. An
// owner's message is confirmed kept, as core does, unless the rig says
// not to, and the transport is waited for to let go of it.
func (r *rig) nextCore(t *testing.T, kind contracts.Kind, body any) {
	t.Helper()
	select {
	case env := <-r.inbox:
		if env.Kind != kind {
			t.Fatalf("core got %s %s, want %s", env.Kind, env.Body, kind)
		}
		if err := env.Decode(body); err != nil {
			t.Fatal(err)
		}
		if in, ok := body.(*contracts.Inbound); ok && !r.unconfirmed {
			r.confirm(t, *in)
		}
	case <-time.After(waitLimit):
		t.Fatalf("core got no %s", kind)
	}
}

// confirm tells the transport that core kept in, and waits for the
// transport to have let go of its update.
func (r *rig) confirm(t *testing.T, in contracts.Inbound) {
	t.Helper()
	if in.Ref == "" {
		t.Fatalf("core got %q without the update's id, so it cannot confirm it", in.Text)
	}
	r.route(t, contracts.KindInboundAck, contracts.InboundAck{Ref: in.Ref, Chat: in.Chat})
	deadline := time.Now().Add(waitLimit)
	for {
		items, err := r.store.Queues().Unhandled(context.Background(), TransportName, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(items, func(it state.InboxItem) bool { return strconv.FormatInt(it.ID, 10) == in.Ref }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the transport kept update %s after core confirmed it", in.Ref)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// say has the owner write text, and returns it as core got it.
func (r *rig) say(t *testing.T, from int64, text string) contracts.Inbound {
	t.Helper()
	r.api.SendText(from, text)
	var in contracts.Inbound
	r.nextCore(t, contracts.KindInbound, &in)
	return in
}

// route sends what core sends. The rig's core is the approval authority
// too: a request it asks is parked in the store, and one it settles is
// taken from there, so the transport reads of each what core said.
func (r *rig) route(t *testing.T, kind contracts.Kind, body any) {
	t.Helper()
	switch b := body.(type) {
	case contracts.ApprovalRequest:
		expires := b.Expires
		if !expires.After(time.Now()) {
			expires = time.Now().Add(time.Hour)
		}
		r.parkAs(t, b.Turn, time.Now(), expires)
	case contracts.ApprovalClosed:
		_, err := r.store.Approvals().Take(context.Background(), b.Turn, time.Now(), b.Outcome)
		if err != nil && !errors.Is(err, state.ErrNoApproval) {
			t.Fatalf("settling %s: %v", b.Turn, err)
		}
	}
	env, err := contracts.NewEnvelope(kind, "", body)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.core.Route(env); err != nil {
		t.Fatalf("Route(%s) = %v", kind, err)
	}
}

// ask routes an approval request and returns its message, once it shows
// its buttons.
func (r *rig) ask(t *testing.T, req contracts.ApprovalRequest) telegramtest.Message {
	t.Helper()
	r.route(t, contracts.KindApprovalRequest, req)
	return r.api.WaitMessage(t, owner, func(m telegramtest.Message) bool {
		return len(m.Keyboard) > 0 && strings.Contains(m.Text, req.Detail)
	})
}

// eventually waits for cond, which the test cannot be told of.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(waitLimit)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("waited %v in vain: %s", waitLimit, what)
		}
	}
}

// logBook keeps the transport's log lines, for a test to wait for one.
type logBook struct {
	mu      sync.Mutex
	lines   []string // "LEVEL message key=value ..."
	changed chan struct{}
}

func newLogBook() *logBook { return &logBook{changed: make(chan struct{})} }

func (b *logBook) Enabled(context.Context, slog.Level) bool { return true }

func (b *logBook) Handle(_ context.Context, rec slog.Record) error {
	line := rec.Level.String() + " " + rec.Message
	rec.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, line)
	close(b.changed)
	b.changed = make(chan struct{})
	return nil
}

// The transport logs with neither attributes bound nor groups.
func (b *logBook) WithAttrs([]slog.Attr) slog.Handler { return b }
func (b *logBook) WithGroup(string) slog.Handler      { return b }

// matching returns the lines that hold every one of parts.
func (b *logBook) matching(parts ...string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var found []string
	for _, line := range b.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			found = append(found, line)
		}
	}
	return found
}

// wait returns the first line holding every one of parts, waiting for it.
func (b *logBook) wait(t *testing.T, parts ...string) string {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		b.mu.Lock()
		changed := b.changed // taken before looking, so no line is missed
		b.mu.Unlock()
		if found := b.matching(parts...); len(found) > 0 {
			return found[0]
		}
		select {
		case <-changed:
		case <-deadline:
			b.mu.Lock()
			defer b.mu.Unlock()
			t.Fatalf("no log line holding %q within %v; the log:\n%s", parts, waitLimit, strings.Join(b.lines, "\n"))
			return ""
		}
	}
}

func hasText(s string) func(telegramtest.Message) bool {
	return func(m telegramtest.Message) bool { return strings.Contains(m.Text, s) }
}

func TestNewRefuses(t *testing.T) {
	store, err := state.Open(statedir.Layout{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	good := Config{Token: token, AllowedIDs: []int64{owner}, Socket: "/x.sock", Store: store}
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no allowed users", func(c *Config) { c.AllowedIDs = nil }, "@userinfobot"},
		{"no token", func(c *Config) { c.Token = " " }, "empty bot token"},
		{"no socket", func(c *Config) { c.Socket = "" }, "no bus socket"},
		{"no store", func(c *Config) { c.Store = nil }, "no state store"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.edit(&cfg)
			_, err := New(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New(%s) = %v, want an error saying %q", tc.name, err, tc.want)
			}
		})
	}
	if _, err := New(Config{Token: token, Socket: "/x.sock", Store: store}); !errors.Is(err, ErrNoAllowedIDs) {
		t.Errorf("New without allowed users = %v, want ErrNoAllowedIDs", err)
	}
}

func TestChatAndEscapedReply(t *testing.T) {
	r := newRig(t)
	in := r.say(t, owner, "hello pet")
	if in.Text != "hello pet" || in.Chat != strconv.Itoa(owner) {
		t.Fatalf("core got %+v", in)
	}
	r.route(t, contracts.KindOutbound, contracts.Outbound{Chat: in.Chat, Text: "try <script>alert(1)</script> & see"})
	m := r.api.WaitMessage(t, owner, hasText("try"))
	if m.Text != "try <script>alert(1)</script> & see" || !strings.Contains(m.HTML, "&lt;script&gt;") || m.ParseMode != "HTML" {
		t.Errorf("reply = %+v, want the text escaped in HTML and shown as written", m)
	}
}

func TestLongReplyArrivesInOrderInPieces(t *testing.T) {
	r := newRig(t)
	var lines []string
	for i := range 500 {
		lines = append(lines, fmt.Sprintf("line %03d of a long reply", i)) // 20 bytes a line: 10,000+ in all
	}
	text := strings.Join(lines, "\n")
	r.route(t, contracts.KindOutbound, contracts.Outbound{Text: text})
	r.api.WaitMessage(t, owner, hasText("line 499"))
	msgs := r.api.Messages(owner)
	if len(msgs) < 3 {
		t.Fatalf("a %d-character reply came in %d messages, want at least 3", len(text), len(msgs))
	}
	var got []string
	for _, m := range msgs {
		if n := len([]rune(m.Text)); n > 4096 {
			t.Errorf("a piece of %d characters, over 4096", n)
		}
		got = append(got, m.Text)
	}
	if strings.Join(got, "\n") != text {
		t.Error("the pieces joined are not the reply, in order")
	}
}

// TestAKeptReplyIsConfirmedAndQueuedOnce: a reply core keeps until the
// transport holds it (one with a key) is confirmed once it is queued, all
// its pieces at once; the same reply sent again — core restarted before it
// heard the confirmation, while the reply was queued or sent — is
// confirmed again and queued no second time.
func TestAKeptReplyIsConfirmedAndQueuedOnce(t *testing.T) {
	r := newRig(t)
	text := strings.Repeat("a line of a long kept reply\n", 400) + "the end"
	reply := contracts.Outbound{Chat: strconv.Itoa(owner), Text: text, Key: "m7.8"}
	for range 2 {
		r.route(t, contracts.KindOutbound, reply)
		var ack contracts.OutboundAck
		r.nextCore(t, contracts.KindOutboundAck, &ack)
		if ack.Key != "m7.8" {
			t.Fatalf("the transport confirmed %+v, want the reply's key", ack)
		}
	}
	r.api.WaitMessage(t, owner, hasText("the end"))
	r.route(t, contracts.KindOutbound, reply) // after it was sent
	var ack contracts.OutboundAck
	r.nextCore(t, contracts.KindOutboundAck, &ack)
	r.route(t, contracts.KindOutbound, contracts.Outbound{Text: "after it"})
	r.api.WaitMessage(t, owner, hasText("after it"))
	var got []string
	for _, m := range r.api.Messages(owner) {
		got = append(got, m.Text)
	}
	if want := text + "\nafter it"; strings.Join(got, "\n") != want {
		t.Errorf("the owner got %d messages, %d characters; want the reply once, in %d characters, then the next", len(got), len(strings.Join(got, "\n")), len(want))
	}
}

func TestStrangersAreIgnored(t *testing.T) {
	r := newRig(t)
	r.api.SendText(stranger, "let me in")
	msg := r.ask(t, contracts.ApprovalRequest{Turn: "t1", Tool: "write_file", Note: "writes", Detail: "write a.txt"})
	r.api.Tap(stranger, owner, msg.ID, "a:t1")
	// The owner's next message is the first thing core hears.
	if in := r.say(t, owner, "me again"); in.Text != "me again" {
		t.Fatalf("core got %+v first, want the owner's message", in)
	}
	if calls := r.api.Calls("answerCallbackQuery"); len(calls) != 0 {
		t.Errorf("a stranger's tap was answered: %+v", calls)
	}
	for _, m := range r.api.Messages(stranger) {
		t.Errorf("the stranger got a message: %q", m.Text)
	}
	updates, senders, err := r.store.Queues().StrangerTotal(context.Background())
	if err != nil || updates != 2 || senders != 1 {
		t.Errorf("StrangerTotal = %d, %d, %v; want 2 updates from 1 stranger", updates, senders, err)
	}
}

func TestNonTextGetsPoliteAnswer(t *testing.T) {
	r := newRig(t)
	r.api.SendSticker(owner)
	r.api.WaitMessage(t, owner, hasText(textOnlyReply))
}

func TestCommandsAreRegistered(t *testing.T) {
	r := newRig(t)
	r.api.WaitCall(t, "setMyCommands", nil)
	var got []string
	for _, c := range r.api.Commands() {
		got = append(got, c.Command)
	}
	var want []string
	for _, c := range contracts.Commands {
		want = append(want, c.Name)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("registered commands %v, want %v", got, want)
	}
}

func TestApprovalTaps(t *testing.T) {
	for _, approve := range []bool{true, false} {
		t.Run(fmt.Sprintf("approve=%v", approve), func(t *testing.T) {
			r := newRig(t)
			msg := r.ask(t, contracts.ApprovalRequest{Turn: "t1", Chat: strconv.Itoa(owner), Tool: "write_file", Note: "writes 4 bytes",
				Detail: "write todo.txt:\n<milk>", Expires: time.Now().Add(time.Hour)})
			if !strings.Contains(msg.HTML, "<pre>write todo.txt:\n&lt;milk&gt;</pre>") {
				t.Errorf("request HTML = %q, want the exact detail escaped in <pre>", msg.HTML)
			}
			data := msg.Keyboard[0][1].CallbackData
			if approve {
				data = msg.Keyboard[0][0].CallbackData
			}
			_, query := r.api.Tap(owner, owner, msg.ID, data)
			var d contracts.Decision
			r.nextCore(t, contracts.KindDecision, &d)
			// The spinner stopped before core heard of the tap.
			answered := false
			for _, c := range r.api.Calls("answerCallbackQuery") {
				answered = answered || c.Params["callback_query_id"] == query && c.Status == 200
			}
			if !answered {
				t.Error("core got the decision before the tap was answered")
			}
			if d.Turn != "t1" || d.Approve != approve || d.Chat != strconv.Itoa(owner) {
				t.Errorf("decision = %+v, want turn t1, approve %v", d, approve)
			}
			outcome, mark := contracts.ApprovalDenied, "❌ Denied at"
			if approve {
				outcome, mark = contracts.ApprovalApproved, "✅ Approved at"
			}
			r.route(t, contracts.KindApprovalClosed, contracts.ApprovalClosed{Turn: "t1", Outcome: outcome, At: time.Now()})
			settled := r.api.WaitMessage(t, owner, func(m telegramtest.Message) bool { return m.ID == msg.ID && m.Keyboard == nil })
			if !strings.Contains(settled.Text, mark) || !strings.Contains(settled.HTML, "<pre>") {
				t.Errorf("settled request = %+v, want %q and the formatting kept", settled, mark)
			}
			// A second tap, on the old buttons (a stale client), decides nothing.
			_, again := r.api.Tap(owner, owner, msg.ID, data)
			r.api.WaitCall(t, "answerCallbackQuery", func(c telegramtest.Call) bool {
				return c.Params["callback_query_id"] == again && strings.Contains(c.Params["text"], "settled")
			})
			if in := r.say(t, owner, "next"); in.Text != "next" {
				t.Errorf("core got %+v, want no second decision", in)
			}
		})
	}
}

func TestQuickSecondTapIsIgnored(t *testing.T) {
	r := newRig(t)
	msg := r.ask(t, contracts.ApprovalRequest{Turn: "t1", Tool: "write_file", Note: "writes", Detail: "write a.txt"})
	r.api.Tap(owner, owner, msg.ID, "a:t1")
	_, second := r.api.Tap(owner, owner, msg.ID, "d:t1")
	var d contracts.Decision
	r.nextCore(t, contracts.KindDecision, &d)
	if !d.Approve {
		t.Errorf("decision = %+v, want the first tap's", d)
	}
	r.api.WaitCall(t, "answerCallbackQuery", func(c telegramtest.Call) bool {
		return c.Params["callback_query_id"] == second && c.Params["text"] == tapAnswered
	})
	if in := r.say(t, owner, "next"); in.Text != "next" {
		t.Errorf("core got %+v, want no second decision", in)
	}
}

func TestExpiredAndUnknownTaps(t *testing.T) {
	r := newRig(t)
	msg := r.ask(t, contracts.ApprovalRequest{Turn: "t1", Tool: "write_file", Note: "writes", Detail: "write a.txt"})
	r.route(t, contracts.KindApprovalClosed, contracts.ApprovalClosed{Turn: "t1", Outcome: contracts.ApprovalExpired, At: time.Now()})
	r.api.WaitMessage(t, owner, func(m telegramtest.Message) bool {
		return m.ID == msg.ID && m.Keyboard == nil && strings.Contains(m.Text, "⌛ Expired at")
	})
	_, expired := r.api.Tap(owner, owner, msg.ID, "a:t1")
	r.api.WaitCall(t, "answerCallbackQuery", func(c telegramtest.Call) bool {
		return c.Params["callback_query_id"] == expired && strings.Contains(c.Params["text"], "expired")
	})

	// A button core never asked for (an old chat, a forged update).
	r.route(t, contracts.KindOutbound, contracts.Outbound{Text: "plain message"})
	plain := r.api.WaitMessage(t, owner, hasText("plain message"))
	_, unknown := r.api.Tap(owner, owner, plain.ID, "a:never-asked")
	r.api.WaitCall(t, "answerCallbackQuery", func(c telegramtest.Call) bool {
		return c.Params["callback_query_id"] == unknown && c.Params["text"] == tapUnknown
	})
	_, junk := r.api.Tap(owner, owner, plain.ID, "rm -rf /")
	r.api.WaitCall(t, "answerCallbackQuery", func(c telegramtest.Call) bool {
		return c.Params["callback_query_id"] == junk && c.Params["text"] == tapNotOurs
	})
	if in := r.say(t, owner, "next"); in.Text != "next" {
		t.Errorf("core got %+v, want no decision from stale or foreign taps", in)
	}
}

func TestLongDetailComesAsFile(t *testing.T) {
	r := newRig(t)
	detail := strings.Repeat("print('a long tool')\n", 400)
	r.route(t, contracts.KindApprovalRequest, contracts.ApprovalRequest{Turn: "promote-calc", Tool: "new tool calc", Note: "adds numbers", Detail: detail})
	msg := r.api.WaitMessage(t, owner, func(m telegramtest.Message) bool { return len(m.Keyboard) == 1 })
	if !strings.Contains(msg.Text, "the whole text is in the file above") {
		t.Errorf("request text does not point to the file: %.300q", msg.Text)
	}
	msgs := r.api.Messages(owner)
	if len(msgs) != 2 || msgs[0].Document == nil || string(msgs[0].Document.Content) != detail || msgs[1].ID != msg.ID {
		t.Fatalf("messages = %+v, want the whole detail as a file, then the request", msgs)
	}
}

// TestAReplysFileComesAsADocument: a reply that sums up a long list
// (an approved command's changes) comes as its text and then the whole
// list as a file, named as core named it, with no slash or other
// unsafe character in the name.
func TestAReplysFileComesAsADocument(t *testing.T) {
	r := newRig(t)
	list := strings.Repeat("  created  many/1 (0 bytes)\n", 1000)
	r.route(t, contracts.KindOutbound, contracts.Outbound{Text: "Applied to the workspace, from run_shell:\n  1000 paths", File: []byte(list), FileName: "../changes.txt"})
	doc := r.api.WaitMessage(t, owner, func(m telegramtest.Message) bool { return m.Document != nil })
	msgs := r.api.Messages(owner)
	if len(msgs) != 2 || !strings.Contains(msgs[0].Text, "1000 paths") || msgs[1].ID != doc.ID {
		t.Fatalf("messages = %+v, want the text, then the file", msgs)
	}
	if string(doc.Document.Content) != list || doc.Document.FileName != "shelldon-..-changes.txt" {
		t.Errorf("the file came as %q (%d bytes), want the whole list under a safe name", doc.Document.FileName, len(doc.Document.Content))
	}
}

func TestRateLimitIsWaitedOut(t *testing.T) {
	r := newRig(t)
	r.api.WaitCall(t, "setMyCommands", nil)
	r.api.RateLimit(1, 1)
	r.route(t, contracts.KindOutbound, contracts.Outbound{Text: "after the limit"})
	// The successful call, not the message: the server keeps a message
	// before it records its call's status, and under qemu (make
	// test-cross) the test read the calls in between.
	r.api.WaitCall(t, "sendMessage", nil)
	calls := r.api.Calls("sendMessage")
	if len(calls) != 2 || calls[0].Status != 429 || calls[1].Status != 200 {
		t.Fatalf("sendMessage calls = %+v, want a 429 and then a success", calls)
	}
	if waited := calls[1].At.Sub(calls[0].At); waited < time.Second {
		t.Errorf("retried after %v, want at least the 1 s Telegram asked for", waited)
	}
}

func TestOutageQueuesReplies(t *testing.T) {
	r := newRig(t)
	r.api.WaitCall(t, "setMyCommands", nil)
	r.api.SetDown(true)
	for i := range 3 {
		r.route(t, contracts.KindOutbound, contracts.Outbound{Text: fmt.Sprintf("queued %d", i)})
	}
	eventually(t, "sends failed for the outage", func() bool { return len(r.api.Calls("sendMessage")) >= 2 })
	if n, err := r.store.Queues().OutboxLen(context.Background(), TransportName); err != nil || n != 3 {
		t.Errorf("outbox holds %d items (%v) while Telegram is down, want 3", n, err)
	}
	// An outage says nothing against the reply: it is not counted towards
	// giving up.
	if head, ok, err := r.store.Queues().NextOutbox(context.Background(), TransportName, chatLane(owner)); err != nil || !ok || head.Attempts != 0 {
		t.Errorf("head of the owner's lane during the outage = %+v, %v, %v, want no failed attempt counted", head, ok, err)
	}
	r.api.SetDown(false)
	r.api.WaitMessage(t, owner, hasText("queued 2"))
	var got []string
	for _, m := range r.api.Messages(owner) {
		got = append(got, m.Text)
	}
	if strings.Join(got, ",") != "queued 0,queued 1,queued 2" {
		t.Errorf("after the outage the owner got %q, want the three replies in order", got)
	}
	if in := r.say(t, owner, "polling recovered"); in.Text != "polling recovered" {
		t.Errorf("core got %+v", in)
	}
}

func TestRestartHandlesEachUpdateOnce(t *testing.T) {
	r := newRig(t)
	first := r.api.SendText(owner, "one")
	var in contracts.Inbound
	r.nextCore(t, contracts.KindInbound, &in)
	r.stop()
	r.api.SendText(owner, "two") // while the transport is down
	// An update kept but not handled when the pet died is handled after
	// the restart, though Telegram will never send it again.
	ctx := context.Background()
	offset, err := r.store.Queues().Offset(ctx, TransportName)
	if err != nil {
		t.Fatal(err)
	}
	r.start(t)
	r.nextCore(t, contracts.KindInbound, &in)
	if in.Text != "two" {
		t.Fatalf("after a restart core got %q first, want %q", in.Text, "two")
	}
	if n := r.api.Delivered(first); n != 1 {
		t.Errorf("update %d was delivered %d times, want once", first, n)
	}
	if offset < first {
		t.Errorf("saved offset %d, want at least %d", offset, first)
	}
	r.stop()
	body := fmt.Sprintf(`{"update_id":%d,"message":{"message_id":99,"date":1,"chat":{"id":%d,"type":"private"},"from":{"id":%d,"is_bot":false,"first_name":"o"},"text":"kept, not handled"}}`, offset+50, owner, owner)
	if err := r.store.Queues().Receive(ctx, TransportName, []state.InboxItem{{ID: offset + 50, Body: []byte(body)}}); err != nil {
		t.Fatal(err)
	}
	r.start(t)
	r.nextCore(t, contracts.KindInbound, &in)
	if in.Text != "kept, not handled" {
		t.Errorf("core got %q, want the kept update", in.Text)
	}
	select {
	case env := <-r.inbox:
		t.Errorf("core got more: %s %s", env.Kind, env.Body)
	default:
	}
}

func TestTypingWhileATurnRuns(t *testing.T) {
	r := newRig(t)
	r.route(t, contracts.KindActivity, contracts.Activity{Chat: strconv.Itoa(owner), Turn: "t1", Busy: true})
	c := r.api.WaitCall(t, "sendChatAction", nil)
	if c.Params["action"] != "typing" || c.Params["chat_id"] != strconv.Itoa(owner) {
		t.Errorf("chat action = %+v, want typing in the owner's chat", c.Params)
	}
	r.route(t, contracts.KindActivity, contracts.Activity{Chat: strconv.Itoa(owner), Turn: "t1", Busy: false})
}

func TestBadEnvelopesFromCoreAreSurvived(t *testing.T) {
	r := newRig(t)
	for _, kind := range []contracts.Kind{contracts.KindOutbound, contracts.KindApprovalRequest, contracts.KindApprovalClosed, contracts.KindActivity} {
		r.core.Route(contracts.Envelope{Kind: kind, Body: []byte(`{"text": 12, "turn": [], "busy": "x"}`)})
	}
	r.route(t, contracts.KindOutbound, contracts.Outbound{Chat: "not-a-telegram-chat", Text: "elsewhere"})
	r.route(t, contracts.KindOutbound, contracts.Outbound{Text: "still here"})
	r.api.WaitMessage(t, owner, hasText("still here"))
	if in := r.say(t, owner, "and listening"); in.Text != "and listening" {
		t.Errorf("core got %+v", in)
	}
}

// TestTurnsKeepTheirConnections: a chat turn's Bot API calls (the long
// poll, the typing hint, the reaction and the reply, at once over a
// network's round trip) reuse the connections the turns before opened;
// against Telegram each new one is a TLS handshake, several ms of a Pi
// Zero's CPU.
func TestTurnsKeepTheirConnections(t *testing.T) {
	const turns, warmUp = 10, 2
	r := newRig(t, func(r *rig) { r.react = true })
	r.api.SetLatency(20 * time.Millisecond)
	var opened []int // new connections, turn by turn
	for turn := range turns {
		before := r.api.Connections()
		r.turn(t, fmt.Sprintf("turn %d", turn+1))
		opened = append(opened, r.api.Connections()-before)
	}
	t.Logf("new connections by turn: %v", opened)
	// A call that finds every kept connection busy at that instant dials
	// another while it waits for one to come free, and keeps the winner:
	// on a slow machine (qemu-user in make test-cross) a turn now and then
	// opens one. Connections not kept opened one or two a turn, every turn
	// (8 to 16 over these 8 turns), so half a turn's worth still tells.
	if n, most := sum(opened[warmUp:]), (turns-warmUp)/2; n > most {
		t.Errorf("turns %d to %d opened %d new connections (by turn: %v), want at most %d", warmUp+1, turns, n, opened, most)
	}
}

// turn plays one chat turn as core does: the owner's message comes, core
// keeps it (👀), says it is busy (typing) and replies, and once the
// typing hint is shown it is idle again (stopping the hint sooner would
// cut its call, and its connection, short, as no turn of a model does).
// It ends once every call of the turn was answered.
func (r *rig) turn(t *testing.T, text string) {
	t.Helper()
	reactions, typings := len(r.api.Calls("setMessageReaction")), len(r.api.Calls("sendChatAction"))
	in := r.say(t, owner, text)
	r.route(t, contracts.KindActivity, contracts.Activity{Chat: in.Chat, Turn: text, Busy: true})
	r.route(t, contracts.KindOutbound, contracts.Outbound{Chat: in.Chat, Text: "re: " + text})
	eventually(t, "the turn's typing hint answered", func() bool { return answered(r.api.Calls("sendChatAction")) > typings })
	r.route(t, contracts.KindActivity, contracts.Activity{Chat: in.Chat, Turn: text, Busy: false})
	r.api.WaitMessage(t, owner, hasText("re: "+text))
	eventually(t, "the turn's reaction answered", func() bool { return answered(r.api.Calls("setMessageReaction")) > reactions })
}

// answered counts the calls given an answer.
func answered(calls []telegramtest.Call) int {
	n := 0
	for _, c := range calls {
		if c.Status != 0 {
			n++
		}
	}
	return n
}

func sum(ns []int) int {
	total := 0
	for _, n := range ns {
		total += n
	}
	return total
}
