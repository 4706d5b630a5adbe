package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"shelldon/bus"
	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/owner"
	"shelldon/daemon/turns"
	"shelldon/daemon/visible"
	"shelldon/faces"
)

// TransportName is the name the terminal joins the bus with, and the chat
// its messages come from.
const TransportName = "cli"

// maxMessage is the longest line the owner may type: what core reads of
// one message. A longer line is cut there, saying so.
const maxMessage = turns.MaxMessageBytes

// MoreCommand shows the next page of a request's detail.
const MoreCommand = "/more"

// endWait bounds how long the chat, once its input has ended (Ctrl-D,
// the end of a pipe), waits for core to take and answer what it sent.
const endWait = 30 * time.Second

// notSentYet answers a message typed while core is not there: the chat
// holds it, and only while it is open; core keeps it once it has it.
const notSentYet = "(Not sent yet: core is not there. It goes to core as soon as core is, while this chat is open.)"

// ErrUndelivered ends a chat whose owner typed what never reached core;
// the chat has said so.
var ErrUndelivered = errors.New("what was typed never reached core")

// The prompts: what the owner's next line can answer.
const (
	promptIdle    = "> "
	promptOne     = "approve? [y/n] "
	promptOneRule = "approve? [y/n, a: always] "
	promptSeveral = "[%d requests wait: /yes ID or /no ID] > "
)

// terminalHelp is what the terminal adds to core's /help: how a request
// is answered here, where there are no buttons.
const terminalHelp = "In this terminal, y or n answers the request that waits; when several wait, /yes ID or /no ID " +
	"answers the one named (its ID is in brackets after the tool), and /more shows more of a long one. " +
	"Where a request offers a rule, a (or /always ID) approves it and grants the rule; /rules lists them. " +
	"Anything else you type is a message, as ever. Ctrl-D quits."

// stopNote tells the owner that the pet is stopping, and how to hurry it.
const stopNote = "(Stopping: I finish what I am doing first, a few seconds at most. Ctrl-C again stops at once.)"

// Options configure a terminal chat.
type Options struct {
	Socket   string
	MaxFrame int
	In       io.Reader
	Out      io.Writer
	// Banner is printed once before the first prompt (the demo-model
	// notice, for instance).
	Banner string
	// Stopping, when closed, says the pet is stopping (Ctrl-C in
	// `shelldon up --chat`): the chat says so, gives the terminal its own
	// line editing back, and goes on showing what core says (the answer
	// of the turn that finishes) until ctx is done.
	Stopping <-chan struct{}
	// Logf reports bus trouble; nil discards it.
	Logf func(format string, args ...any)
	// Clock tells the time of requests' expiry and of the wait at the
	// end; nil is the real clock.
	Clock clock.Clock
}

// eventKind says what happened on the bus.
type eventKind int

const (
	received    eventKind = iota // core sent an envelope
	joined                       // the transport's connection is up
	lost                         // the transport's connection is gone
	unreachable                  // the transport could not reach core
)

type event struct {
	kind eventKind
	env  contracts.Envelope
	err  error // why core is unreachable
}

// chat is one terminal's conversation. Everything but the bus clients'
// and the input's own goroutines runs in its loop, one thing at a time.
type chat struct {
	opts      Options
	term      *terminal
	transport *bus.Client
	events    chan event
	requests  requests
	outbox    *outbox
	// shown are the keys of the replies shown, so that one core sends
	// again is shown once.
	shown shownKeys
	// left says a request the owner had before them stopped waiting
	// without their answer from here (replaced, gone, expired): the next
	// request shown is unread, as y or n may have been meant for the one
	// that left.
	left bool

	connected bool
	// heard says the bus client has come back from its first dial
	// (joined, or failed to): before then core may be a moment from
	// joining, and a line typed is kept without a word; quiet says one
	// was, so that the owner is told it waits if the dial fails.
	heard, quiet bool
	// away is what the owner was told of why core is not there; told
	// says they were told core is away, so are told when it is back.
	away     string
	told     bool
	stopping bool
	// closedByStop says core closed the connection after the stop began:
	// what core had to say before it stopped has arrived, and the chat
	// ends.
	closedByStop bool

	// busy says a turn of this terminal's runs; answering says a line
	// went to core whose answer has not come. Faces come on the panel's
	// own connection, which may overtake the transport's: while either
	// holds, the last face waits in held and is shown after the answer.
	busy      bool
	answering bool
	// owed says core lost the connection while it owed an answer.
	owed      bool
	held      *contracts.Snapshot
	lastFace  string
	holdUntil time.Time
	// lastProgress is the step of the running turn shown last.
	lastProgress string

	clock clock.Clock
	// wake has the loop look at the time again (a request's expiry, the
	// end of endWait); expiryAt is when expiryTimer fires.
	wake        chan struct{}
	expiryAt    time.Time
	expiryTimer clock.Timer
	// inputOver says the owner's input has ended; the chat ends by endBy.
	inputOver bool
	endBy     time.Time
}

// Run chats until the input ends or ctx is done.
func Run(ctx context.Context, opts Options) error {
	term, err := newTerminal(opts.In, opts.Out)
	if err != nil {
		return fmt.Errorf("chat: %w", err)
	}
	defer term.restore()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := &chat{opts: opts, term: term, events: make(chan event, 64), outbox: newOutbox(),
		clock: opts.Clock, wake: make(chan struct{}, 1)}
	if c.clock == nil {
		c.clock = clock.Real{}
	}
	c.transport = &bus.Client{
		Socket: opts.Socket, MaxFrame: opts.MaxFrame, Logf: opts.Logf,
		Hello:        contracts.Hello{Role: contracts.RoleTransport, Name: TransportName},
		OnConnect:    func(*bus.Conn) { c.post(ctx, event{kind: joined}) },
		OnDisconnect: func() { c.post(ctx, event{kind: lost}) },
		OnDialError:  func(err error) { c.post(ctx, event{kind: unreachable, err: err}) },
	}
	panel := &bus.Client{
		Socket: opts.Socket, MaxFrame: opts.MaxFrame, Logf: opts.Logf,
		Hello: contracts.Hello{Role: contracts.RolePanel, Name: TransportName},
	}
	errs := make(chan error, 2)
	receive := func(_ *bus.Conn, env contracts.Envelope) { c.post(ctx, event{kind: received, env: env}) }
	go func() { errs <- c.transport.Run(ctx, receive) }()
	go func() { errs <- panel.Run(ctx, receive) }()
	keys := make(chan []byte)
	var readErr error // set before keys is closed
	go func() {
		defer close(keys)
		readErr = read(ctx, opts.In, keys)
	}()

	if opts.Banner != "" {
		term.write(opts.Banner + "\n")
	}
	term.say("Type a message and press Enter; Ctrl-D quits.")
	stopping := opts.Stopping
	for {
		c.expire()
		if c.ended() || c.closedByStop {
			return c.finish()
		}
		// The timer is set before the prompt shows the request waits.
		c.armExpiry()
		term.setPrompt(c.prompt())
		term.showPrompt()
		select {
		case <-ctx.Done():
			return c.finish()
		case <-stopping:
			stopping, c.stopping = nil, true
			term.restore()
			term.say(stopNote)
		case err := <-errs:
			if err != nil {
				return fmt.Errorf("chat: %w", err)
			}
		case ev := <-c.events:
			c.handle(ev)
		case chunk, ok := <-keys:
			var eof bool
			if ok {
				var lines []typed
				lines, eof = term.feed(chunk)
				for _, line := range lines {
					c.typed(line)
				}
			}
			if !ok && readErr != nil {
				return fmt.Errorf("chat: read input: %w", readErr)
			}
			if !ok || eof {
				keys = nil
				c.endInput()
			}
		case <-c.wake:
		}
	}
}

// endInput starts the chat's end, once the owner's input is over: it
// ends as soon as core has taken and answered what was sent, and after
// endWait at the latest.
func (c *chat) endInput() {
	c.inputOver = true
	c.term.inputOver()
	if c.settled() {
		return
	}
	c.endBy = c.clock.Now().Add(endWait)
	c.clock.AfterFunc(endWait, c.wakeUp)
	c.term.say(fmt.Sprintf("(Waiting up to %s for core to answer what you sent; Ctrl-C quits now.)", owner.Roughly(endWait)))
}

// settled says nothing the owner sent waits for core: every message is
// confirmed and answered.
func (c *chat) settled() bool {
	return len(c.outbox.waiting) == 0 && !c.answering && !c.busy
}

// ended says the chat is over: its input ended and what was sent is
// answered, or waited for long enough.
func (c *chat) ended() bool {
	return c.inputOver && (c.settled() || !c.clock.Now().Before(c.endBy))
}

// wakeUp has the loop look again at what time it is; timers call it.
func (c *chat) wakeUp() {
	select {
	case c.wake <- struct{}{}:
	default: // the loop wakes already
	}
}

// post hands an event to the loop, unless the chat is over.
func (c *chat) post(ctx context.Context, ev event) {
	select {
	case c.events <- ev:
	case <-ctx.Done():
	}
}

// read sends what is typed to keys until the input ends, and returns why
// it did when that is not the input's plain end (nor a terminal that
// hung up).
func read(ctx context.Context, in io.Reader, keys chan<- []byte) error {
	for {
		buf := make([]byte, 4096)
		n, err := in.Read(buf)
		if n > 0 {
			select {
			case keys <- buf[:n]:
			case <-ctx.Done():
				return nil
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF), errors.Is(err, syscall.EIO):
			return nil
		default:
			return err
		}
	}
}

// finish says goodbye, and what never reached core or was not answered;
// it fails with ErrUndelivered when something never reached core.
func (c *chat) finish() error {
	var err error
	switch {
	case len(c.outbox.waiting) > 0:
		c.term.say(fmt.Sprintf("(%d message(s) you typed never reached core; send them again once it is there.)", len(c.outbox.waiting)))
		err = ErrUndelivered
	case (c.answering || c.busy || c.owed) && c.stopping:
		c.term.say("(Core stopped before it answered you; it keeps what you sent and answers it when it starts again.)")
	case c.answering || c.busy || c.owed:
		c.term.say("(Core is still answering what you sent; a `shelldon chat` open when it is done shows it.)")
	}
	c.term.end("bye")
	return err
}

// prompt is the prompt for what the owner's next line can answer.
func (c *chat) prompt() string {
	switch n := len(c.requests.waiting()); n {
	case 0:
		return promptIdle
	case 1:
		if c.requests.waiting()[0].rule != "" {
			return promptOneRule
		}
		return promptOne
	default:
		return fmt.Sprintf(promptSeveral, n)
	}
}

// expire forgets the requests whose time is over, saying so: core's own
// word of it may never come to a terminal that was away then.
func (c *chat) expire() {
	for _, r := range c.requests.expire(c.clock.Now()) {
		c.term.say(expired(r))
	}
}

// armExpiry sets a timer for the next request's expiry, unless one is
// set for it already.
func (c *chat) armExpiry() {
	var next time.Time
	for _, r := range c.requests.waiting() {
		if !r.expires.IsZero() && (next.IsZero() || r.expires.Before(next)) {
			next = r.expires
		}
	}
	if next.IsZero() || next.Equal(c.expiryAt) {
		return
	}
	if c.expiryTimer != nil {
		c.expiryTimer.Stop()
	}
	c.expiryAt = next
	c.expiryTimer = c.clock.AfterFunc(next.Sub(c.clock.Now()), c.wakeUp)
}

// handle acts on what happened on the bus.
func (c *chat) handle(ev event) {
	switch ev.kind {
	case joined:
		c.connected, c.heard, c.quiet = true, true, false
		if c.told {
			c.term.say(fmt.Sprintf("(connected to core at %s)", c.opts.Socket))
		}
		c.told, c.away = false, ""
		c.resend()
	case lost:
		c.connected, c.away, c.heard = false, "", true
		c.owed = c.owed || c.busy || c.answering
		c.busy, c.answering = false, false
		c.term.setDraft("")
		c.showHeld()
		c.closedByStop = c.stopping
		if !c.stopping {
			c.told = true
			c.term.say(fmt.Sprintf("(lost core at %s; reconnecting…)", c.opts.Socket))
		}
	case unreachable:
		c.heard = true
		why := reach(c.opts.Socket, ev.err)
		if !c.stopping && why != c.away {
			c.away, c.told = why, true
			c.term.say("(" + why + ")")
		}
		if c.quiet {
			c.quiet = false
			c.term.say(notSentYet)
		}
	case received:
		c.receive(ev.env)
	}
}

// receive shows the owner what core sent.
func (c *chat) receive(env contracts.Envelope) {
	switch env.Kind {
	case contracts.KindOutbound:
		var out contracts.Outbound
		if env.Decode(&out) != nil {
			return
		}
		if !c.shown.seen(out.Key) {
			if out.Chat == TransportName {
				c.term.setDraft("") // the reply replaces its draft
			}
			c.term.say("shelldon: " + indent(visible.Text(out.Text)))
			if len(out.File) > 0 {
				c.term.say("          " + saveFile(out))
			}
			c.owed = false
			if !c.busy {
				// No turn of this terminal's runs: this is the answer to a
				// command (core answers those at once), or a note.
				c.answering = false
				c.showHeld()
			}
		}
		c.confirmReply(out.Key)
	case contracts.KindApprovalRequest:
		var req contracts.ApprovalRequest
		if env.Decode(&req) == nil {
			c.ask(req)
		}
	case contracts.KindApprovalClosed:
		var closed contracts.ApprovalClosed
		if env.Decode(&closed) == nil {
			if r := c.requests.settle(closed.Turn); r != nil {
				c.term.say(r.closing(closed.Outcome))
				c.left = c.left || !r.answered && closed.Outcome != contracts.ApprovalApproved && closed.Outcome != contracts.ApprovalDenied
			}
		}
	case contracts.KindInboundAck:
		var ack contracts.InboundAck
		if env.Decode(&ack) == nil {
			c.outbox.confirm(ack.Ref)
		}
	case contracts.KindActivity:
		var a contracts.Activity
		if env.Decode(&a) == nil && a.Chat == TransportName {
			c.busy = a.Busy
			if !a.Busy {
				c.answering = false
				c.term.setDraft("") // a turn that ended without its reply here
				c.showHeld()
			}
		}
	case contracts.KindProgress:
		var p contracts.Progress
		if env.Decode(&p) == nil && p.Chat == TransportName {
			c.showProgress(p)
		}
	case contracts.KindReplyDraft:
		var d contracts.Draft
		if env.Decode(&d) == nil && d.Chat == TransportName && c.busy {
			c.term.setDraft(d.Text)
		}
	case contracts.KindSnapshot:
		var s contracts.Snapshot
		if env.Decode(&s) != nil || s.Face == faces.Thinking {
			// The thinking face shows on every turn; the terminal needs
			// only the faces that say something.
			return
		}
		if c.busy || c.answering {
			c.held = &s
			return
		}
		c.showFace(s)
	}
}

// saveFile saves the file that came with a reply (the whole of a long
// list its text sums up) where the owner can read it, the temporary
// directory, and says where.
func saveFile(out contracts.Outbound) string {
	f, err := os.CreateTemp("", "shelldon-*-"+contracts.SafeFileName(out.FileName))
	if err == nil {
		_, err = f.Write(out.File)
		err = errors.Join(err, f.Close())
		if err != nil {
			os.Remove(f.Name())
		}
	}
	if err != nil {
		return fmt.Sprintf("(the whole of it came as a file, which could not be saved: %v)", err)
	}
	return "(the whole of it is in " + visible.Line(f.Name()) + ")"
}

// showHeld shows the face that waited for an answer, if one did.
func (c *chat) showHeld() {
	if held := c.held; held != nil {
		c.held = nil
		c.showFace(*held)
	}
}

// ask shows a request core made (or shows again) and keeps it until core
// settles it.
func (c *chat) ask(req contracts.ApprovalRequest) {
	// Core rendered the detail to be seen as it is; it is made visible
	// again here all the same, so that nothing that reaches this
	// terminal can move its cursor.
	beside := slices.ContainsFunc(c.requests.waiting(), func(w *request) bool { return w.key != req.Turn })
	r := c.requests.add(req)
	r.unread = r.unread || beside || c.left
	c.left = false
	c.show(r)
}

// show prints a request's card: its tool and id, its note, the first
// page of its detail, and how to answer it.
func (c *chat) show(r *request) {
	how := "y or n answers it"
	if len(c.requests.waiting()) > 1 {
		how = fmt.Sprintf("/yes %s or /no %s answers it", r.id(), r.id())
	}
	if !r.expires.IsZero() {
		how += ", until " + r.expires.Local().Format("15:04")
	}
	if r.rule != "" {
		always := "a"
		if len(c.requests.waiting()) > 1 {
			always = "/always " + r.id()
		}
		how += fmt.Sprintf(";\n   %s approves it and, from now on, %s without asking (a rule: /rules lists and revokes them)", always, r.rule)
	}
	c.term.say(fmt.Sprintf("── shelldon asks to use %s: %s\n%s\n   %s; anything else you type is a message, as ever.",
		r.what(), r.note, r.page(), how))
}

// showProgress prints what a turn of this terminal is doing, a status
// line for each new step; the settled word that follows the reply needs
// no line of its own.
func (c *chat) showProgress(p contracts.Progress) {
	if p.Settled {
		c.lastProgress = ""
		return
	}
	line := visible.Line(p.Line)
	if line == "" || line == c.lastProgress {
		return
	}
	c.lastProgress = line
	c.term.say("          ⏳ " + line)
}

// showFace prints the pet's face, once: a face shown again (with a new
// status line) or an at-rest face while a reaction holds is not news.
func (c *chat) showFace(s contracts.Snapshot) {
	face := s.Glyphs + "\x00" + s.Caption
	if face == c.lastFace || s.Ambient && c.clock.Now().Before(c.holdUntil) {
		return
	}
	c.lastFace, c.holdUntil = face, s.HoldUntil
	c.term.say(fmt.Sprintf("          %s  %s", visible.Line(s.Glyphs), visible.Line(s.Caption)))
}

// typed acts on a line the owner entered: an answer to a request that
// waits, a page more of one, or a message (commands too) for core.
func (c *chat) typed(line typed) {
	c.expire()
	text := strings.TrimSpace(line.text)
	name, arg, command := contracts.ParseCommand(text)
	given, word := answerWords[strings.ToLower(text)]
	switch {
	case text == "":
		return
	case command && (name == "yes" || name == "no" || name == "always"):
		c.answer(answerCommands[name], arg)
	case command && "/"+name == MoreCommand:
		c.more(arg)
	case word && len(c.requests.waiting()) > 0 && (given != always || c.ruleOffered()):
		c.answer(given, "")
	default:
		c.send(text)
		if command && (name == "help" || name == "start") {
			c.term.say(terminalHelp)
		}
	}
	if line.dropped > 0 {
		c.term.say(fmt.Sprintf("(That line was %d KiB, more than a message may hold: I sent its first %d KiB.)",
			(len(line.text)+line.dropped)>>10, maxMessage>>10))
	}
}

// ruleOffered reports whether a, alone on a line, answers: one request
// waits, and it offers a rule. Otherwise a is a message like any other.
func (c *chat) ruleOffered() bool {
	waiting := c.requests.waiting()
	return len(waiting) == 1 && waiting[0].rule != ""
}

// An answer is what the owner may say of a request.
type answer int

const (
	deny answer = iota
	approve
	// always approves and grants the rule the request offers.
	always
)

// answerWords are the lines that answer the one request that waits.
var answerWords = map[string]answer{"y": approve, "yes": approve, "n": deny, "no": deny, "a": always, "always": always}

// answerCommands are the commands that answer the request they name.
var answerCommands = map[string]answer{"yes": approve, "no": deny, "always": always}

// answer sends the owner's decision on the request id names, or on the
// one that waits when id is empty; core's word of what it came to
// (APPROVAL_CLOSED) is what the terminal then shows.
func (c *chat) answer(given answer, id string) {
	waiting := c.requests.waiting()
	var r *request
	switch named := c.requests.named(id); {
	case id == "" && len(waiting) == 1:
		r = waiting[0]
	case id == "" && len(waiting) == 0:
		c.term.say("(Nothing waits for an answer.)")
		return
	case id == "":
		c.term.say(fmt.Sprintf("(%d requests wait: answer one with /yes ID or /no ID — %s.)", len(waiting), list(waiting)))
		return
	case len(named) == 1:
		r = named[0]
	case len(named) == 0:
		c.term.say(fmt.Sprintf("(Nothing waiting is called %s. Waiting: %s.)", visible.Line(id), orNone(list(waiting))))
		return
	default:
		c.term.say(fmt.Sprintf("(%s could be %s: type more of its ID.)", visible.Line(id), list(named)))
		return
	}
	if given == always && r.rule == "" {
		c.term.say(fmt.Sprintf("(No rule can be granted for %s: answer it y or n.)", r.what()))
		return
	}
	if id == "" && r.unread {
		// A line typed without an id answers what the owner read; this
		// one they may not have.
		r.unread, r.rest = false, r.detail
		c.term.say(fmt.Sprintf("(Not answered: %s came while you had another request before you, so your answer may have been meant for that one. "+
			"Here it is again; your next answer is for it.)", r.what()))
		c.show(r)
		return
	}
	// The digest binds the answer to the request as shown here: core
	// takes it for no other version.
	env, err := contracts.NewEnvelope(contracts.KindDecision, "", contracts.Decision{Turn: r.key, Approve: given != deny, Always: given == always,
		Chat: TransportName, Digest: r.digest})
	if err == nil {
		err = c.transport.Send(env)
	}
	if err != nil {
		c.term.say(fmt.Sprintf("(Your answer was not sent: %s. %s still waits.)", c.why(err), r.what()))
		return
	}
	r.answered = true
}

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// more shows the next page of the request id names, or of the newest
// one with more to show.
func (c *chat) more(id string) {
	candidates := c.requests.waiting()
	if id != "" {
		candidates = c.requests.named(id)
	}
	for i := len(candidates) - 1; i >= 0; i-- {
		if r := candidates[i]; len(r.rest) > 0 {
			c.term.say(r.page())
			return
		}
	}
	c.term.say("(That was all of it.)")
}

// send keeps a message until core confirms it, and sends it now if core
// is there.
func (c *chat) send(text string) {
	if c.outbox.full() {
		c.term.say(fmt.Sprintf("(%d messages wait for core to take them; this one is not kept: send it again once core answers.)", len(c.outbox.waiting)))
		return
	}
	in := c.outbox.add(text)
	switch {
	case !c.connected && !c.heard:
		c.quiet = true
		return
	case !c.connected:
		c.term.say(notSentYet)
		return
	}
	c.deliver(in)
}

// confirmReply tells core that the reply key is shown: the terminal
// delivers a reply by showing it, and holds nothing past its own end, so
// a reply is its once on the screen. A core that does not hear it sends
// the reply again (shown once: c.shown), and a reply for a terminal that
// is closed waits in core for the next.
func (c *chat) confirmReply(key string) {
	if key == "" {
		return
	}
	env, err := contracts.NewEnvelope(contracts.KindOutboundAck, "", contracts.OutboundAck{Key: key})
	if err == nil {
		err = c.transport.Send(env)
	}
	if err != nil && c.opts.Logf != nil {
		c.opts.Logf("chat: core did not hear that reply %s is shown; it sends it again, shown once: %v", key, err)
	}
}

// resend sends again what core has not confirmed, in order, to a core
// just joined.
func (c *chat) resend() {
	for _, in := range append([]contracts.Inbound(nil), c.outbox.waiting...) {
		if !c.deliver(in) {
			return
		}
	}
}

// deliver sends one kept message, and reports whether the connection
// took it. A message that no connection could take (too large for a
// frame) is let go, saying so.
func (c *chat) deliver(in contracts.Inbound) bool {
	env, err := contracts.NewEnvelope(contracts.KindInbound, "", in)
	if err == nil {
		err = c.transport.Send(env)
	}
	switch {
	case err == nil:
		c.answering = true
		return true
	case errors.Is(err, bus.ErrFrameTooLarge):
		c.outbox.confirm(in.Ref)
		c.term.say(fmt.Sprintf("(Could not send that: %v.)", err))
		return true
	default:
		// Lost just now, before the chat heard of it or under the write
		// (a broken pipe): it goes with the next connection.
		return false
	}
}

// why says why core did not take something from the terminal.
func (c *chat) why(err error) string {
	switch {
	case !errors.Is(err, bus.ErrNotConnected):
		return err.Error()
	case c.away != "":
		return c.away
	default:
		return "core is not connected yet"
	}
}

// reach says why the socket cannot be reached, and what to do about it.
func reach(socket string, err error) string {
	const otherPet = "or name its state directory (`make run`'s is var: try --state-dir var)"
	switch {
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("permission denied on %s: run this as root or as core's own user, %s", socket, otherPet)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("no core is listening at %s: start it (`make run`; on a board, `systemctl start shelldon`), %s", socket, otherPet)
	default:
		return fmt.Sprintf("core is not reachable at %s (%v)", socket, err)
	}
}

// indent lines up a message's later lines under its first.
func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n          ") }
