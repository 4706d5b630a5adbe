package telegram

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
)

// seenEmoji is the reaction that tells the owner their message is safe
// with the pet: core has kept it, and will answer it across a restart.
const seenEmoji = "👀"

// Bounds of the reactions, which are never queued: one lost is harmless,
// and a late one says nothing.
const (
	reactTimeout = 10 * time.Second
	// reactQueue bounds the reactions waiting to be set; past it one is
	// dropped rather than wait.
	reactQueue = 16
)

// reactions sets 👀 on the owner's messages once core has kept them,
// off the path of everything else: a reaction Telegram is slow to take
// holds up no message, no reply and no other chat's reaction for longer
// than reactTimeout. Where Telegram refuses them — a Bot API server
// without setMessageReaction, a chat that takes no reactions — it says so
// once in the log and asks no more: for the process, or for the chat.
type reactions struct {
	set func(ctx context.Context, msg ownerMessage) error
	log func(msg string, args ...any)

	queue chan ownerMessage
	mu    sync.Mutex
	off   bool           // none are set: telegram.react is off, or the server has no method
	shy   map[int64]bool // chats that refused a reaction
}

func newReactions(enabled bool, set func(context.Context, ownerMessage) error, log func(string, ...any)) *reactions {
	return &reactions{set: set, log: log, queue: make(chan ownerMessage, reactQueue), off: !enabled, shy: map[int64]bool{}}
}

// seen asks for the reaction on msg, without waiting.
func (r *reactions) seen(msg ownerMessage) {
	if !r.wanted(msg.chat) {
		return
	}
	select {
	case r.queue <- msg:
	default: // a burst past the queue: those messages go without
	}
}

func (r *reactions) wanted(chat int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.off && !r.shy[chat]
}

// run sets the reactions asked for until ctx is done.
func (r *reactions) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case msg := <-r.queue:
			if !r.wanted(msg.chat) {
				continue
			}
			callCtx, cancel := context.WithTimeout(ctx, reactTimeout)
			err := r.set(callCtx, msg)
			cancel()
			r.refused(msg.chat, err)
		}
	}
}

// refused takes what Telegram answered a reaction in chat.
func (r *reactions) refused(chat int64, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err == nil:
	case lacksMethod(err):
		r.off = true
		r.log("telegram: this Bot API server sets no reactions; the owner's messages go without 👀", "err", err)
	case errors.Is(err, bot.ErrorBadRequest), errors.Is(err, bot.ErrorForbidden):
		// REACTION_INVALID where a chat takes no reactions, or another
		// refusal the same call would get again.
		r.shy[chat] = true
		r.log("telegram: Telegram refused a reaction in this chat; its messages go without 👀", "chat", chat, "err", err)
	default:
		// A 429, a 5xx, the network: this one goes without, the next
		// is tried, and none is retried.
	}
}

// setSeen is the Bot API call of a reaction.
func (t *Transport) setSeen(ctx context.Context, msg ownerMessage) error {
	_, err := t.bot.SetMessageReaction(ctx, &bot.SetMessageReactionParams{
		ChatID: msg.chat, MessageID: msg.id,
		Reaction: []models.ReactionType{{Type: models.ReactionTypeTypeEmoji, ReactionTypeEmoji: &models.ReactionTypeEmoji{Emoji: seenEmoji}}},
	})
	return err
}
