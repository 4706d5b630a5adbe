package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"shelldon/contracts"
	"shelldon/daemon/state"
)

// Kinds of outbox item.
const (
	outMessage  = "message"  // a message; with Approval set, an approval request with its buttons
	outDocument = "document" // a file
	outSettle   = "settle"   // edit every message of a settled request to say its outcome
	outUnbutton = "unbutton" // take the buttons off one message
	outCommands = "commands" // register the owner's commands
)

// outItem is the body of an outbox item; which fields count depends on
// its kind.
type outItem struct {
	Chat      int64  `json:"chat,omitempty"`
	MessageID int    `json:"message_id,omitempty"`
	HTML      string `json:"html,omitempty"`
	// Approval is the key of the request a message shows, or a settle
	// item settles.
	Approval string    `json:"approval,omitempty"`
	Outcome  string    `json:"outcome,omitempty"`
	At       time.Time `json:"at,omitzero"`
	FileName string    `json:"file_name,omitempty"`
	File     []byte    `json:"file,omitempty"`
}

// sendTimeout bounds one Bot API call of the outbox, so a hung connection
// holds the queue no longer than this before the call is retried.
const sendTimeout = 30 * time.Second

// stopGrace is how long a call in flight may finish once the pet stops.
const stopGrace = 3 * time.Second

// maxRetryAfter caps how long a 429 answer may hold the queue.
const maxRetryAfter = 10 * time.Minute

// enqueue queues one item; the sender delivers items strictly in order.
func (t *Transport) enqueue(ctx context.Context, kind string, item outItem) {
	body, err := json.Marshal(item)
	if err == nil {
		_, err = t.store.Enqueue(ctx, TransportName, kind, body, t.clock.Now())
	}
	if err != nil {
		t.log.Error("telegram: could not queue a message; it is lost", "kind", kind, "chat", item.Chat, "err", err)
		return
	}
	select {
	case t.outWake <- struct{}{}:
	default:
	}
}

// sendLoop delivers the outbox in order until ctx is done. An item that
// fails for a reason that may pass (no network, a 429, Telegram down) is
// tried again after a wait, and holds the items behind it; one that
// Telegram refuses for good is logged and dropped.
func (t *Transport) sendLoop(ctx context.Context) {
	for {
		item, ok, err := t.store.NextOutbox(ctx, TransportName)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			t.log.Error("telegram: reading the outbox", "err", err)
			t.wait(ctx, t.outWake, t.backoff.Max)
			continue
		case !ok:
			t.wait(ctx, t.outWake, 0)
			continue
		}
		if d := item.NotBefore.Sub(t.clock.Now()); d > 0 {
			t.wait(ctx, nil, d)
			continue
		}
		err = t.deliver(ctx, item)
		if err == nil {
			// Recorded even when the pet is stopping, so the item is
			// not sent again after the restart.
			if err := t.store.Sent(context.WithoutCancel(ctx), item.ID); err != nil {
				t.log.Error("telegram: a sent item stays queued and may be sent twice", "item", item.ID, "err", err)
			}
			continue
		}
		if ctx.Err() != nil {
			return
		}
		retry, after := t.retryable(err, item.Attempts+1)
		if !retry {
			t.log.Error("telegram: Telegram refused a message for good; dropped", "kind", item.Kind, "item", item.ID, "err", err)
			if err := t.store.Sent(ctx, item.ID); err != nil {
				t.log.Error("telegram: dropping a refused item", "item", item.ID, "err", err)
			}
			continue
		}
		attempts, perr := t.store.Postpone(ctx, item.ID, t.clock.Now().Add(after))
		if perr != nil {
			t.log.Error("telegram: postponing an item", "item", item.ID, "err", perr)
		}
		t.log.Warn("telegram: sending failed; will retry", "kind", item.Kind, "attempt", attempts, "in", after.Round(time.Millisecond), "err", err)
	}
}

// wait returns when wake fires, after d (0: no timeout), or when ctx is done.
func (t *Transport) wait(ctx context.Context, wake <-chan struct{}, d time.Duration) {
	var timeout <-chan struct{}
	if d > 0 {
		fired := make(chan struct{})
		timer := t.clock.AfterFunc(d, func() { close(fired) })
		defer timer.Stop()
		timeout = fired
	}
	select {
	case <-ctx.Done():
	case <-wake:
	case <-timeout:
	}
}

// retryable says whether a failed call may succeed later, and when to try.
func (t *Transport) retryable(err error, attempt int) (bool, time.Duration) {
	var tooMany *bot.TooManyRequestsError
	switch {
	case errors.As(err, &tooMany):
		return true, min(time.Duration(tooMany.RetryAfter)*time.Second, maxRetryAfter)
	case errors.Is(err, bot.ErrorBadRequest), errors.Is(err, bot.ErrorForbidden), errors.Is(err, bot.ErrorNotFound):
		// Bad HTML, a chat that blocked the bot, a message gone: the
		// same request will be refused again.
		return false, 0
	}
	// The network, Telegram's own trouble, or a token refused until the
	// owner fixes it: keep the queue and try again.
	return true, t.backoff.delay(attempt)
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
func (t *Transport) deliver(parent context.Context, it state.OutboxItem) error {
	var item outItem
	if err := json.Unmarshal(it.Body, &item); err != nil {
		t.log.Error("telegram: an unreadable outbox item; dropped", "item", it.ID, "err", err)
		return nil
	}
	// A call in flight when the pet stops is let finish, for a moment:
	// cut off, Telegram may have shown the message without the pet
	// knowing, and it would be sent again after the restart.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), sendTimeout)
	defer cancel()
	stopping := context.AfterFunc(parent, func() { t.clock.AfterFunc(stopGrace, cancel) })
	defer stopping()
	switch it.Kind {
	case outMessage:
		return t.sendMessage(ctx, item)
	case outDocument:
		_, err := t.bot.SendDocument(ctx, &bot.SendDocumentParams{
			ChatID:   item.Chat,
			Document: &models.InputFileUpload{Filename: item.FileName, Data: bytes.NewReader(item.File)},
		})
		return err
	case outSettle:
		return t.settleMessages(ctx, item)
	case outUnbutton:
		_, err := t.bot.EditMessageReplyMarkup(ctx, &bot.EditMessageReplyMarkupParams{ChatID: item.Chat, MessageID: item.MessageID})
		if notModified(err) {
			return nil
		}
		return err
	case outCommands:
		cmds := make([]models.BotCommand, 0, len(contracts.Commands))
		for _, c := range contracts.Commands {
			cmds = append(cmds, models.BotCommand{Command: c.Name, Description: c.Description})
		}
		_, err := t.bot.SetMyCommands(ctx, &bot.SetMyCommandsParams{Commands: cmds})
		return err
	}
	t.log.Error("telegram: an outbox item of an unknown kind; dropped", "item", it.ID, "kind", it.Kind)
	return nil
}

// sendMessage sends a message; an approval request gets its buttons, or,
// when it was settled while queued, its outcome instead.
func (t *Transport) sendMessage(ctx context.Context, item outItem) error {
	params := &bot.SendMessageParams{ChatID: item.Chat, Text: item.HTML, ParseMode: models.ParseModeHTML}
	if item.Approval != "" {
		status, found, err := t.store.ApprovalStatusOf(ctx, TransportName, item.Approval)
		if err != nil {
			return fmt.Errorf("read request %s: %w", item.Approval, err)
		}
		if found && status.State == state.ApprovalClosed {
			params.Text = settled(item.HTML, status.Outcome, status.At, t.loc)
		} else if kb, err := approvalKeyboard(item.Approval); err != nil {
			t.log.Error("telegram: a request without buttons", "turn", item.Approval, "err", err)
		} else {
			params.ReplyMarkup = kb
		}
	}
	msg, err := t.bot.SendMessage(ctx, params)
	if err != nil {
		return err
	}
	if params.ReplyMarkup != nil {
		if err := t.store.RecordApprovalMessage(ctx, state.ApprovalMessage{
			Transport: TransportName, Turn: item.Approval, Chat: fmt.Sprint(item.Chat), MessageID: int64(msg.ID), HTML: item.HTML,
		}); err != nil {
			t.log.Error("telegram: the request's message will keep its buttons after a decision", "turn", item.Approval, "err", err)
		}
	}
	return nil
}

// settleMessages edits every message showing a settled request: the
// same text, with the outcome, and no buttons.
func (t *Transport) settleMessages(ctx context.Context, item outItem) error {
	msgs, err := t.store.ApprovalMessages(ctx, TransportName, item.Approval)
	if err != nil {
		return fmt.Errorf("read the messages of request %s: %w", item.Approval, err)
	}
	for _, m := range msgs {
		chat, err := strconv.ParseInt(m.Chat, 10, 64)
		if err != nil {
			t.log.Error("telegram: a request's message has an unreadable chat", "turn", item.Approval, "chat", m.Chat)
			continue
		}
		_, err = t.bot.EditMessageText(ctx, &bot.EditMessageTextParams{
			ChatID: chat, MessageID: int(m.MessageID), ParseMode: models.ParseModeHTML,
			Text: settled(m.HTML, item.Outcome, item.At, t.loc),
		})
		switch {
		case err == nil, notModified(err):
		case errors.Is(err, bot.ErrorBadRequest):
			// Deleted by the owner, or too old to edit: nothing to
			// take the buttons off.
			t.log.Warn("telegram: could not mark a settled request", "turn", item.Approval, "message", m.MessageID, "err", err)
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
