package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"shelldon/contracts"
)

// The status message of a turn that runs tools: one message per turn,
// sent once the turn has been at work for a while, edited as its steps
// go, deleted when its reply has been sent.
const (
	// statusAfter is how long after a turn's first tool step its status
	// message appears. A quick step and the model's answer after it (a
	// second or so) come within it, so quick turns stay quiet, with
	// "typing…" showing meanwhile; a command or a fetch that takes longer
	// gets a line.
	statusAfter = 1500 * time.Millisecond
	// statusEvery is how often one chat's status message may change.
	// Telegram takes about one message a second in a chat and twenty a
	// minute in a group, edits counted; one change every three seconds
	// stays within both and leaves room for the replies. Lines that come
	// faster are skipped: only the latest shows.
	statusEvery = 3 * time.Second
	// statusTimeout bounds one call for a status message: a late line is
	// worth nothing, so it is dropped rather than waited for.
	statusTimeout = 10 * time.Second
	// maxStatusLife takes away a status whose settling never came (core
	// stopped mid-turn with the transport still up).
	maxStatusLife = maxTyping
	// maxStatusKept bounds the status messages remembered across a
	// restart, one per chat.
	maxStatusKept = 64
)

// statusKey is where the status messages showing are remembered (in the
// key-value table of core's store), so that the next start deletes the
// ones a stop left: a status saying "running…" for ever says something
// false.
const statusKey = "telegram.status"

// statusPrefix begins every status message.
const statusPrefix = "⏳ "

// statusBoard keeps the status message of each chat whose turn runs
// tools. Each chat's message has a sender of its own, so that a slow
// call in one chat holds up no other, and none of them is in the outbox:
// a status call that fails is dropped, never retried ahead of a reply,
// and a reply never waits for one. Only the deletion that settles a
// status is queued (in the chat's edit lane), since a status left
// showing would be wrong.
type statusBoard struct {
	t *Transport

	mu    sync.Mutex
	chats map[int64]*status
	wg    sync.WaitGroup
}

// status is the status of one turn in one chat: what core said last,
// and whether the turn is over.
type status struct {
	turn    string
	line    string
	settled bool
	wake    chan struct{}
}

// show takes core's progress for chat.
func (b *statusBoard) show(ctx context.Context, chat int64, p contracts.Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.chats[chat]
	if st != nil && st.turn != p.Turn {
		// A new turn: the old one's status goes, whatever became of it.
		st.settled = true
		poke(st.wake)
		delete(b.chats, chat)
		st = nil
	}
	if st == nil {
		if p.Settled {
			return // never shown here
		}
		st = &status{turn: p.Turn, wake: make(chan struct{}, 1)}
		b.chats[chat] = st
		b.wg.Go(func() { b.keep(ctx, chat, st) })
	}
	if p.Settled {
		st.settled = true
	} else {
		st.line = p.Line
	}
	poke(st.wake)
}

// keep shows st in chat until the turn settles: the message once the
// turn has been at work for statusAfter, an edit at most every
// statusEvery, and the deletion at the end.
func (b *statusBoard) keep(ctx context.Context, chat int64, st *status) {
	t := b.t
	started := t.clock.Now()
	due := started.Add(statusAfter) // when the message may next be sent or edited
	var message int                 // its id, once sent
	var shown string                // what it shows
	defer func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.chats[chat] == st {
			delete(b.chats, chat)
		}
	}()
	for ctx.Err() == nil {
		b.mu.Lock()
		line, settled := st.line, st.settled
		b.mu.Unlock()
		now := t.clock.Now()
		switch {
		case settled || now.Sub(started) >= maxStatusLife:
			if message != 0 {
				b.remove(ctx, chat, message)
			}
			return
		case now.Before(due):
			wait(ctx, b.t.clock, st.wake, due.Sub(now))
			continue
		case line == shown:
			wait(ctx, b.t.clock, st.wake, started.Add(maxStatusLife).Sub(now))
			continue
		}
		text := statusPrefix + html.EscapeString(line)
		var err error
		if message == 0 {
			message, err = b.send(ctx, chat, text)
		} else {
			err = b.edit(ctx, chat, message, text)
		}
		// Shown or dropped: either way this line is done with, and the
		// next waits for its turn.
		shown, due = line, t.clock.Now().Add(statusEvery)
		if err != nil {
			if _, retryIn := classify(err); retryIn > statusEvery {
				due = t.clock.Now().Add(retryIn) // Telegram asked for a longer wait
			}
			t.log.Info("telegram: a status line was dropped", "chat", chat, "err", err)
		}
	}
}

// send sends a chat's status message and remembers it, so that a restart
// does not leave it showing.
func (b *statusBoard) send(ctx context.Context, chat int64, text string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	msg, err := b.t.bot.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat, Text: text, ParseMode: models.ParseModeHTML})
	if err != nil {
		return 0, err
	}
	// Sent is showing: it is remembered even when the transport is
	// stopping now, or the next start would leave it saying "running…".
	b.remember(context.WithoutCancel(ctx), func(kept map[int64]int) bool {
		if len(kept) >= maxStatusKept {
			return false
		}
		kept[chat] = msg.ID
		return true
	})
	return msg.ID, nil
}

// edit changes a chat's status message; one that changes nothing is done.
func (b *statusBoard) edit(ctx context.Context, chat int64, message int, text string) error {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	_, err := b.t.bot.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: chat, MessageID: message, Text: text, ParseMode: models.ParseModeHTML})
	if notModified(err) {
		return nil
	}
	return err
}

// remove queues the deletion of a chat's status message, which the
// outbox carries out and retries, and forgets it: the outbox remembers it
// now.
func (b *statusBoard) remove(ctx context.Context, chat int64, message int) {
	ctx = context.WithoutCancel(ctx) // a stopping transport still queues it
	b.t.out.enqueue(ctx, outUnstatus, outItem{Chat: chat, MessageID: message})
	b.remember(ctx, func(kept map[int64]int) bool {
		if kept[chat] != message {
			return false
		}
		delete(kept, chat)
		return true
	})
}

// tidy queues the deletion of the status messages an earlier start left
// showing: it stopped before their turns settled.
func (b *statusBoard) tidy(ctx context.Context) {
	b.remember(ctx, func(kept map[int64]int) bool {
		for chat, message := range kept {
			b.t.log.Info("telegram: deleting a status message a stop left", "chat", chat, "message", message)
			b.t.out.enqueue(ctx, outUnstatus, outItem{Chat: chat, MessageID: message})
		}
		clear(kept)
		return true
	})
}

// remember changes the status messages remembered, under the board's
// lock, as change says, and stores them when it reports a change.
func (b *statusBoard) remember(ctx context.Context, change func(kept map[int64]int) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	kept := map[int64]int{}
	raw, found, err := b.t.store.Get(ctx, statusKey)
	if err == nil && found {
		var byChat map[string]int
		err = json.Unmarshal(raw, &byChat)
		for chat, message := range byChat {
			if id, perr := strconv.ParseInt(chat, 10, 64); perr == nil {
				kept[id] = message
			}
		}
	}
	if err != nil {
		b.t.log.Warn("telegram: reading the status messages showing", "err", err)
	}
	if !change(kept) {
		return
	}
	byChat := make(map[string]int, len(kept))
	for chat, message := range kept {
		byChat[strconv.FormatInt(chat, 10)] = message
	}
	raw, err = json.Marshal(byChat)
	if err == nil {
		err = b.t.store.Put(ctx, statusKey, raw)
	}
	if err != nil {
		b.t.log.Warn("telegram: a status message may outlive a restart", "err", err)
	}
}

// unstatus deletes a status message; one already gone is done. Where
// Telegram will not delete it, it is edited to say the turn is over.
func (o *outbox) unstatus(ctx context.Context, item outItem) error {
	_, err := o.bot.DeleteMessage(ctx, &bot.DeleteMessageParams{ChatID: item.Chat, MessageID: item.MessageID})
	switch {
	case err == nil, errors.Is(err, bot.ErrorBadRequest) && strings.Contains(err.Error(), "message to delete not found"):
		return nil
	case errors.Is(err, bot.ErrorBadRequest):
		_, err = o.bot.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: item.Chat, MessageID: item.MessageID, Text: statusDone})
		if notModified(err) {
			return nil
		}
	}
	return err
}

// statusDone is what a status message Telegram would not delete says
// instead.
const statusDone = "✓ done"
