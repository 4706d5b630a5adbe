package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"shelldon/clock"
	"shelldon/contracts"
	authority "shelldon/daemon/approval"
	"shelldon/daemon/state"
)

// Kinds of outbox item.
const (
	outMessage  = "message"  // a message; with Approval set, an approval request with its buttons
	outDocument = "document" // a file
	outSettle   = "settle"   // edit every message of a settled request in a chat to say its outcome
	outUnbutton = "unbutton" // take the buttons off one message
	outCommands = "commands" // register the owner's commands
	outUnstatus = "unstatus" // delete a turn's status message (status.go)
)

// outItem is the body of an outbox item; which fields count depends on
// its kind.
type outItem struct {
	Chat      int64  `json:"chat,omitempty"`
	MessageID int    `json:"message_id,omitempty"`
	HTML      string `json:"html,omitempty"`
	// Approval is the key of the request a message shows, or a settle
	// item settles.
	Approval string `json:"approval,omitempty"`
	// Asked is when the authority parked the request a message shows:
	// its messages are recorded as of then, so that those of an earlier
	// request under the same key (a resumed turn's next call) are told
	// apart by time even when they were sent within the same millisecond
	// as this one was parked. Zero when the status could not be read.
	Asked time.Time `json:"asked,omitzero"`
	// Always says that the request offers a rule, so its message gets
	// the third button.
	Always   bool      `json:"always,omitempty"`
	Outcome  string    `json:"outcome,omitempty"`
	At       time.Time `json:"at,omitzero"`
	FileName string    `json:"file_name,omitempty"`
	File     []byte    `json:"file,omitempty"`
}

// sendTimeout bounds one Bot API call of the outbox, so a hung connection
// holds its lane no longer than this before the call is retried.
const sendTimeout = 30 * time.Second

// stopGrace is how long a call in flight may finish once the pet stops.
const stopGrace = 3 * time.Second

// maxRetryAfter caps how long a 429 answer may hold a lane.
const maxRetryAfter = 10 * time.Minute

// undeliveredFmt tells the owner how many replies to their chat were
// given up on.
const undeliveredFmt = "I could not deliver %d message(s) to you: Telegram would not take them, so I gave up on them."

// The outbox is in lanes. Each lane goes strictly in order, and none
// waits for another: a chat's replies and files are one lane, so they
// arrive in order and a chat Telegram keeps failing holds up no other
// chat; the edits of a chat's messages are another, so that settling a
// request or taking a status message away neither waits for a reply nor
// holds one up; the command menu is a third, as it is optional. (A typing
// hint, a reaction and a status line are never queued: one lost is
// harmless, and a late one is wrong.)
const laneCommands = "commands"

func chatLane(chat int64) string { return "chat:" + strconv.FormatInt(chat, 10) }

func editLane(chat int64) string { return "edit:" + strconv.FormatInt(chat, 10) }

// laneOf is the lane an item of kind waits in.
func laneOf(kind string, item outItem) string {
	switch kind {
	case outCommands:
		return laneCommands
	case outSettle, outUnbutton, outUnstatus:
		return editLane(item.Chat)
	}
	return chatLane(item.Chat)
}

// laneChat is the chat of a chat's lane; 0, which names no chat, for
// another lane.
func laneChat(lane string) int64 {
	id, _ := strings.CutPrefix(lane, "chat:")
	chat, _ := strconv.ParseInt(id, 10, 64) // a lane of another kind does not parse
	return chat
}

// outbox sends what the transport queues, lane by lane, each item until
// Telegram takes it or it is given up on, and tells the owner of the
// replies given up on; the transport queues, the outbox sends.
type outbox struct {
	store *state.Queues
	// statuses says whether a request's message gets its buttons or its
	// outcome.
	statuses StatusReader
	// bot is the Bot API client, set once Run has made it and before the
	// send loop starts.
	bot     *bot.Bot
	clock   clock.Clock
	loc     *time.Location
	log     *slog.Logger
	backoff Backoff
	giveUp  GiveUp
	wake    chan struct{} // an item was queued
	held    held          // items the store could not queue
}

// maxHeld bounds the items the store could not queue (its disk full past
// its reserve) that the transport holds in memory, to queue once it can:
// a few turns' replies and edits. Past it the oldest is dropped, with a
// log line.
const maxHeld = 64

// held are the items the store could not queue, oldest first.
type held struct {
	mu    sync.Mutex
	items []queued
}

// enqueue queues one item at the end of its lane. One the store cannot
// queue is held and queued again before the next item, so that its lane
// keeps its order, and by the send loop once a minute, so that what
// could not be queued on a full disk is sent once there is room.
func (o *outbox) enqueue(ctx context.Context, kind string, item outItem) {
	o.held.mu.Lock()
	defer o.held.mu.Unlock()
	o.held.items = append(o.held.items, queued{kind, item})
	if o.queueHeldLocked(ctx) > 0 {
		poke(o.wake) // so that the send loop tries them again
	}
}

// queueHeld queues the items held, and returns how many are left.
func (o *outbox) queueHeld(ctx context.Context) int {
	o.held.mu.Lock()
	defer o.held.mu.Unlock()
	return o.queueHeldLocked(ctx)
}

// queueHeldLocked queues the items held, oldest first, up to the first
// the store could not take, and returns how many are left; t.held.mu is
// held. An item the outbox can never hold is dropped.
func (o *outbox) queueHeldLocked(ctx context.Context) int {
	items := o.held.items
	queuedAny := false
queue:
	for ; len(items) > 0; items = items[1:] {
		q := items[0]
		body, err := json.Marshal(q.item)
		if err == nil {
			_, err = o.store.Enqueue(ctx, TransportName, laneOf(q.kind, q.item), q.kind, body, o.clock.Now())
			if err != nil && !errors.Is(err, state.ErrOutboxItemTooBig) {
				o.log.Warn("telegram: could not queue a message; it is held, and queued once the store takes it",
					"kind", q.kind, "chat", q.item.Chat, "held", len(items), "err", err)
				break queue
			}
		}
		if err != nil {
			o.log.Error("telegram: a message the outbox cannot hold is dropped", "kind", q.kind, "chat", q.item.Chat, "err", err)
			continue
		}
		queuedAny = true
	}
	if over := len(items) - maxHeld; over > 0 {
		o.log.Error("telegram: more messages could not be queued than are held; the oldest are lost", "lost", over, "held", maxHeld)
		items = items[over:]
	}
	o.held.items = slices.Clone(items)
	if queuedAny {
		poke(o.wake)
	}
	return len(items)
}

// queued is one item of the outbox, before it is stored.
type queued struct {
	kind string
	item outItem
}

// replyItems are the items of reply out in chat: its text in pieces
// Telegram takes, then its file.
func replyItems(chat int64, out contracts.Outbound) []queued {
	var items []queued
	for _, piece := range renderReply(out.Text, maxMessage) {
		items = append(items, queued{outMessage, outItem{Chat: chat, HTML: piece}})
	}
	if len(out.File) > 0 {
		// The whole of what the text sums up, after it.
		items = append(items, queued{outDocument, outItem{Chat: chat, FileName: fileName(out.FileName, "shelldon", ""), File: capFile(out.File)}})
	}
	return items
}

// takeReply queues the reply out, which core keeps until the transport
// confirms holding it, and confirms it: every piece at once, under its
// key, so that the reply sent again (core restarted before it heard the
// confirmation) is queued once. A reply that could not be queued is not
// confirmed: core sends it again.
func (t *Transport) takeReply(ctx context.Context, out contracts.Outbound) {
	var entries []state.OutboxEntry
	var err error
	for _, chat := range t.chats(out.Chat) {
		for _, it := range replyItems(chat, out) {
			body, merr := json.Marshal(it.item)
			err = errors.Join(err, merr)
			entries = append(entries, state.OutboxEntry{Lane: laneOf(it.kind, it.item), Kind: it.kind, Body: body})
		}
	}
	taken := false
	if err == nil {
		taken, err = t.store.TakeReply(ctx, TransportName, out.Key, entries, t.clock.Now())
	}
	if err != nil {
		t.log.Error("telegram: could not queue a reply; core sends it again", "key", out.Key, "err", err)
		return
	}
	if !taken {
		t.log.Info("telegram: a reply came again that is queued already", "key", out.Key)
	}
	poke(t.out.wake)
	if err := t.toCore(contracts.KindOutboundAck, contracts.OutboundAck{Key: out.Key}); err != nil {
		t.log.Warn("telegram: core did not hear that a reply is queued; it sends it again, and it is queued once", "key", out.Key, "err", err)
	}
}

// settle queues the edits that show a request's outcome on every message
// that shows it, in the edit lane of each chat it was shown in.
func (o *outbox) settle(ctx context.Context, turn, outcome string, at time.Time) {
	msgs, err := o.store.ApprovalMessages(ctx, TransportName, turn)
	if err != nil {
		o.log.Error("telegram: a settled request keeps its buttons", "turn", turn, "err", err)
		return
	}
	var chats []int64
	for _, m := range msgs {
		chat, err := strconv.ParseInt(m.Chat, 10, 64)
		if err != nil {
			o.log.Error("telegram: a request's message has an unreadable chat", "turn", turn, "chat", m.Chat)
			continue
		}
		if !slices.Contains(chats, chat) {
			chats = append(chats, chat)
			o.enqueue(ctx, outSettle, outItem{Chat: chat, Approval: turn, Outcome: outcome, At: at})
		}
	}
}

// sendLoop runs a sender for each lane that has something to do, until
// ctx is done; a sender ends when its lane has nothing left.
func (o *outbox) sendLoop(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	running := map[string]chan struct{}{} // lane → what wakes its sender
	ended := make(chan string)
	for {
		// Before the lanes are read, so that a lane it queues into runs.
		held := o.queueHeld(ctx)
		lanes, err := o.store.OutboxLanes(ctx, TransportName)
		var retry <-chan struct{}
		stopRetry := func() {}
		if err != nil && ctx.Err() == nil {
			o.log.Error("telegram: reading the outbox", "err", err)
		}
		if (err != nil || held > 0) && ctx.Err() == nil {
			retry, stopRetry = after(o.clock, o.backoff.Max)
		}
		for _, lane := range lanes {
			if _, ok := running[lane]; ok {
				continue
			}
			wake := make(chan struct{}, 1)
			running[lane] = wake
			wg.Go(func() {
				o.runLane(ctx, lane, wake)
				select {
				case ended <- lane:
				case <-ctx.Done():
				}
			})
		}
		// A lane whose sender ended is looked at again: an item may have
		// come just as it found the lane empty.
		select {
		case <-ctx.Done():
		case <-o.wake:
			for _, wake := range running {
				poke(wake)
			}
		case lane := <-ended:
			delete(running, lane)
		case <-retry:
		}
		stopRetry()
		if ctx.Err() != nil {
			return
		}
	}
}

// runLane sends one lane's items in order until it has nothing left to do
// or ctx is done. An item that fails for a reason that may pass is tried
// again after a wait, and holds the items of its lane behind it; one that
// Telegram refuses for good, or that keeps failing past the bounds of
// GiveUp, is dropped. Once nothing is queued, the owner is told of the
// replies dropped.
func (o *outbox) runLane(ctx context.Context, lane string, wake <-chan struct{}) {
	fails := 0 // failures in a row, whatever their kind: they set the backoff
	var tellAfter time.Time
	for ctx.Err() == nil {
		it, queued, err := o.store.NextOutbox(ctx, TransportName, lane)
		if err != nil {
			if ctx.Err() == nil {
				o.log.Error("telegram: reading the outbox", "lane", lane, "err", err)
			}
			wait(ctx, o.clock, wake, o.backoff.Max)
			continue
		}
		if !queued {
			owed, err := o.store.Undelivered(ctx, TransportName, lane)
			switch {
			case err != nil:
				o.log.Error("telegram: counting the replies given up on", "lane", lane, "err", err)
				wait(ctx, o.clock, wake, o.backoff.Max)
				continue
			case owed == 0:
				return
			}
			if d := tellAfter.Sub(o.clock.Now()); d > 0 {
				wait(ctx, o.clock, wake, d)
				continue
			}
			if retryIn, told := o.tellUndelivered(ctx, lane, owed, fails+1); told {
				fails = 0
			} else {
				fails++
				tellAfter = o.clock.Now().Add(retryIn)
			}
			continue
		}
		if d := it.NotBefore.Sub(o.clock.Now()); d > 0 {
			wait(ctx, o.clock, wake, o.bounded(ctx, it, d))
			continue
		}
		var item outItem
		if err = json.Unmarshal(it.Body, &item); err == nil {
			err = o.deliver(ctx, it.Kind, item)
		} else {
			err = fmt.Errorf("%w: %w", errUnsendable, err)
		}
		if err == nil {
			fails = 0
			// Recorded even when the pet is stopping, so the item is
			// not sent again after the restart.
			if err := o.store.Sent(context.WithoutCancel(ctx), it.ID); err != nil {
				o.log.Error("telegram: a sent item stays queued and may be sent twice", "item", it.ID, "err", err)
			}
			continue
		}
		if ctx.Err() != nil {
			return
		}
		fails++
		o.failed(ctx, it, item, err, fails)
	}
}

// longestWait is the longest wait the outbox ever sets on an item: a
// 429's, or the backoff's.
func (o *outbox) longestWait() time.Duration { return max(maxRetryAfter, o.backoff.Max) }

// bounded is the wait d of item it, which its stored time asks for,
// bounded by longestWait from now: a longer one was read off a clock that
// has been set back since, and would hold the item's lane that much
// longer. The item is held to the bound in the store too, so that the
// next start waits no longer.
func (o *outbox) bounded(ctx context.Context, it state.OutboxItem, d time.Duration) time.Duration {
	longest := o.longestWait()
	if d <= longest {
		return d
	}
	o.log.Warn("telegram: an item was held past any wait the outbox sets (the clock was set back?); it waits no longer than that from now",
		"item", it.ID, "lane", it.Lane, "held_for", d.Round(time.Second), "now_for", longest)
	if err := o.store.Hold(ctx, it.ID, o.clock.Now().Add(longest)); err != nil {
		o.log.Error("telegram: holding an item", "item", it.ID, "err", err)
	}
	return longest
}

// failed decides what becomes of an item Telegram did not take: it is
// tried again later, or given up on.
func (o *outbox) failed(ctx context.Context, it state.OutboxItem, item outItem, err error, fails int) {
	how, retryIn := classify(err)
	if retryIn == 0 {
		retryIn = o.backoff.delay(fails)
	}
	attempts := it.Attempts
	if how == failAnswered {
		attempts++
	}
	age := o.clock.Now().Sub(it.Created)
	switch {
	case how == failRefused:
		o.drop(ctx, it, item, "refused", err)
		return
	case attempts >= o.giveUp.Attempts:
		o.drop(ctx, it, item, fmt.Sprintf("failed %d times", attempts), err)
		return
	case age >= o.giveUp.Age:
		o.drop(ctx, it, item, fmt.Sprintf("still failing %v after it was queued", age.Round(time.Second)), err)
		return
	}
	until := o.clock.Now().Add(retryIn)
	var perr error
	if how == failAnswered {
		_, perr = o.store.Postpone(ctx, it.ID, until)
	} else {
		perr = o.store.Hold(ctx, it.ID, until)
	}
	if perr != nil {
		o.log.Error("telegram: postponing an item", "item", it.ID, "err", perr)
	}
	o.log.Warn("telegram: sending failed; will retry", "kind", it.Kind, "lane", it.Lane, "failed_attempts", attempts,
		"in", retryIn.Round(time.Millisecond), "err", err)
}

// drop gives up on an item, with a log line; a reply or a file is counted
// so that the owner of its chat is told.
func (o *outbox) drop(ctx context.Context, it state.OutboxItem, item outItem, why string, err error) {
	tell := ""
	if (it.Kind == outMessage || it.Kind == outDocument) && item.Chat != 0 {
		tell = chatLane(item.Chat)
	}
	if it.Kind == outCommands && lacksMethod(err) {
		o.log.Info("telegram: the Bot API server has no setMyCommands; the command menu is left as it is", "err", err)
	} else {
		o.log.Error("telegram: gave up sending; dropped", "kind", it.Kind, "lane", it.Lane, "item", it.ID, "why", why, "err", err)
	}
	if err := o.store.GiveUp(ctx, it.ID, tell); err != nil {
		o.log.Error("telegram: dropping an item", "item", it.ID, "err", err)
	}
}

// tellUndelivered tells the owner of a chat's lane how many replies were
// given up on. It returns false when it must be tried again, and after
// how long.
func (o *outbox) tellUndelivered(ctx context.Context, lane string, owed, fails int) (time.Duration, bool) {
	chat := laneChat(lane) // only a chat's lane counts replies
	err := o.call(ctx, func(ctx context.Context) error {
		_, err := o.bot.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat, Text: fmt.Sprintf(undeliveredFmt, owed)})
		return err
	})
	switch how, retryIn := classify(err); {
	case err == nil:
		o.log.Info("telegram: told the owner of the replies given up on", "chat", chat, "count", owed)
	case ctx.Err() != nil:
		return 0, false
	case how == failRefused:
		// The chat blocked the bot, or is gone: nobody to tell.
		o.log.Warn("telegram: could not tell the owner of the replies given up on; forgotten", "chat", chat, "count", owed, "err", err)
	default:
		if retryIn == 0 {
			retryIn = o.backoff.delay(fails)
		}
		o.log.Warn("telegram: telling the owner of the replies given up on failed; will retry", "chat", chat,
			"in", retryIn.Round(time.Millisecond), "err", err)
		return retryIn, false
	}
	if err := o.store.ToldUndelivered(context.WithoutCancel(ctx), TransportName, lane, owed); err != nil {
		o.log.Error("telegram: the owner may be told twice of replies given up on", "chat", chat, "err", err)
	}
	return 0, true
}

// wait returns when wake fires, after d on clk (0: no timeout), or when
// ctx is done.
func wait(ctx context.Context, clk clock.Clock, wake <-chan struct{}, d time.Duration) {
	var timeout <-chan struct{}
	if d > 0 {
		fired, stop := after(clk, d)
		defer stop()
		timeout = fired
	}
	select {
	case <-ctx.Done():
	case <-wake:
	case <-timeout:
	}
}

// after is closed after d on clk; stop releases it.
func after(clk clock.Clock, d time.Duration) (<-chan struct{}, func()) {
	fired := make(chan struct{})
	timer := clk.AfterFunc(d, func() { close(fired) })
	return fired, func() { timer.Stop() }
}

// errUnsendable marks an item the transport cannot make into a call: an
// unreadable body, an unknown kind. Trying again would not help.
var errUnsendable = errors.New("not an item the transport can send")

// failure is how a Bot API call failed, which says what to do next.
type failure int

const (
	// failAnswered: Telegram answered with an error that may pass (a 5xx,
	// a token refused until the owner fixes it): retried, and counted
	// against GiveUp.Attempts.
	failAnswered failure = iota
	// failRefused: Telegram refused the call for good (bad HTML, a chat
	// that blocked the bot, a message gone): the same call would be
	// refused again.
	failRefused
	// failWait: Telegram asked for a wait (429).
	failWait
	// failAway: no answer from Telegram (the network, a timeout, a proxy's
	// page instead of the Bot API's): retried, and counted only by age.
	failAway
)

// classify says how err failed, and how long Telegram asked to wait (0
// when it did not say).
func classify(err error) (failure, time.Duration) {
	var (
		tooMany *bot.TooManyRequestsError
		migrate *bot.MigrateError
		urlErr  *url.Error
		netErr  net.Error
		syntax  *json.SyntaxError
	)
	switch {
	case errors.As(err, &tooMany):
		return failWait, min(time.Duration(tooMany.RetryAfter)*time.Second, maxRetryAfter)
	case errors.Is(err, bot.ErrorBadRequest), errors.Is(err, bot.ErrorForbidden), errors.Is(err, bot.ErrorNotFound),
		errors.As(err, &migrate), errors.Is(err, errUnsendable):
		return failRefused, 0
	case errors.As(err, &urlErr), errors.As(err, &netErr), errors.Is(err, context.DeadlineExceeded), errors.As(err, &syntax):
		return failAway, 0
	}
	return failAnswered, 0
}

// lacksMethod tells whether the Bot API server does not offer the method
// called: Telegram answers 404, some servers 400 "method not found".
func lacksMethod(err error) bool {
	return errors.Is(err, bot.ErrorNotFound) ||
		errors.Is(err, bot.ErrorBadRequest) && strings.Contains(strings.ToLower(err.Error()), "method not found")
}

// Backoff bounds the waits between retries after network errors: the
// wait doubles from Min up to Max, with jitter so that a fleet of pets
// does not hammer a recovering server in step.
type Backoff struct {
	Min, Max time.Duration
}

// delay is the wait before the given attempt (from 1): half of the
// doubled wait, plus a random part of the other half.
func (b Backoff) delay(attempt int) time.Duration {
	d := b.Min
	for i := 1; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	half := d / 2
	return half + rand.N(half+1)
}

// deliver makes the Bot API calls of one item.
func (o *outbox) deliver(ctx context.Context, kind string, item outItem) error {
	return o.call(ctx, func(ctx context.Context) error {
		switch kind {
		case outMessage:
			return o.sendMessage(ctx, item)
		case outDocument:
			_, err := o.bot.SendDocument(ctx, &bot.SendDocumentParams{
				ChatID:   item.Chat,
				Document: &models.InputFileUpload{Filename: item.FileName, Data: bytes.NewReader(item.File)},
			})
			return err
		case outSettle:
			return o.settleMessages(ctx, item)
		case outUnstatus:
			return o.unstatus(ctx, item)
		case outUnbutton:
			_, err := o.bot.EditMessageReplyMarkup(ctx, &bot.EditMessageReplyMarkupParams{ChatID: item.Chat, MessageID: item.MessageID})
			if notModified(err) {
				return nil
			}
			return err
		case outCommands:
			cmds := make([]models.BotCommand, 0, len(contracts.Commands))
			for _, c := range contracts.Commands {
				cmds = append(cmds, models.BotCommand{Command: c.Name, Description: c.Description})
			}
			_, err := o.bot.SetMyCommands(ctx, &bot.SetMyCommandsParams{Commands: cmds})
			return err
		}
		return fmt.Errorf("%w: kind %q", errUnsendable, kind)
	})
}

// call makes the Bot API calls of do, bounded by sendTimeout. A call in
// flight when the pet stops is let finish, for a moment: cut off,
// Telegram may have shown the message without the pet knowing, and it
// would be sent again after the restart.
func (o *outbox) call(parent context.Context, do func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), sendTimeout)
	defer cancel()
	stopping := context.AfterFunc(parent, func() { o.clock.AfterFunc(stopGrace, cancel) })
	defer stopping()
	return do(ctx)
}

// sendMessage sends a message; an approval request gets its buttons
// while the authority waits on it, or, when it was settled while queued,
// its outcome instead.
func (o *outbox) sendMessage(ctx context.Context, item outItem) error {
	params := &bot.SendMessageParams{ChatID: item.Chat, Text: item.HTML, ParseMode: models.ParseModeHTML}
	if item.Approval != "" {
		status, err := o.statuses.Status(ctx, item.Approval)
		switch {
		case err != nil:
			return fmt.Errorf("read request %s: %w", item.Approval, err)
		case status.State == authority.Settled:
			params.Text = settled(item.HTML, status.Outcome, status.At, o.loc)
		case status.State == authority.Unknown:
			params.Text = settled(item.HTML, contracts.ApprovalGone, o.clock.Now(), o.loc)
		default:
			if kb, err := approvalKeyboard(item.Approval, item.Always); err != nil {
				o.log.Error("telegram: a request without buttons", "turn", item.Approval, "err", err)
			} else {
				params.ReplyMarkup = kb
			}
		}
	}
	msg, err := o.bot.SendMessage(ctx, params)
	if err != nil {
		return err
	}
	if params.ReplyMarkup != nil {
		if err := o.store.RecordApprovalMessage(ctx, state.ApprovalMessage{
			Transport: TransportName, Turn: item.Approval, Chat: fmt.Sprint(item.Chat), MessageID: int64(msg.ID), HTML: item.HTML, At: askedOr(item.Asked, o.clock.Now()),
		}); err != nil {
			o.log.Error("telegram: the request's message will keep its buttons after a decision", "turn", item.Approval, "err", err)
		}
		// Settled while this was being sent: the edits that settle it,
		// in a lane of their own, may have looked for its messages before
		// this one was recorded. A second edit of the same message changes
		// nothing.
		if status, err := o.statuses.Status(ctx, item.Approval); err == nil && status.State == authority.Settled {
			o.enqueue(ctx, outSettle, outItem{Chat: item.Chat, Approval: item.Approval, Outcome: status.Outcome, At: status.At})
		}
	}
	return nil
}

// settleMessages edits every message showing a settled request in the
// item's chat: the same text, with the outcome, and no buttons. An item
// queued before the outbox had lanes names no chat, and settles the
// messages of every chat.
func (o *outbox) settleMessages(ctx context.Context, item outItem) error {
	msgs, err := o.store.ApprovalMessages(ctx, TransportName, item.Approval)
	if err != nil {
		return fmt.Errorf("read the messages of request %s: %w", item.Approval, err)
	}
	for _, m := range msgs {
		chat, err := strconv.ParseInt(m.Chat, 10, 64)
		if err != nil {
			o.log.Error("telegram: a request's message has an unreadable chat", "turn", item.Approval, "chat", m.Chat)
			continue
		}
		if item.Chat != 0 && chat != item.Chat {
			continue
		}
		_, err = o.bot.EditMessageText(ctx, &bot.EditMessageTextParams{
			ChatID: chat, MessageID: int(m.MessageID), ParseMode: models.ParseModeHTML,
			Text: settled(m.HTML, item.Outcome, item.At, o.loc),
		})
		switch {
		case err == nil, notModified(err):
		case errors.Is(err, bot.ErrorBadRequest):
			// Deleted by the owner, or too old to edit: nothing to
			// take the buttons off.
			o.log.Warn("telegram: could not mark a settled request", "turn", item.Approval, "message", m.MessageID, "err", err)
		default:
			return err
		}
	}
	return nil
}

// notModified tells whether Telegram refused an edit because it changes
// nothing: the edit is done already.
func notModified(err error) bool {
	return errors.Is(err, bot.ErrorBadRequest) && strings.Contains(err.Error(), "message is not modified")
}

// askedOr is when a request was parked, or, when that is not known, now.
func askedOr(asked, now time.Time) time.Time {
	if asked.IsZero() {
		return now
	}
	return asked
}
