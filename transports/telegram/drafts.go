package telegram

import (
	"context"
	"hash/crc32"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"shelldon/contracts"
)

// draftEvery is how often one chat's draft may change. Core passes a
// turn's draft on up to four times a second; Telegram takes about one
// call a second in a chat, and the replies must keep their room. Drafts
// that come faster are dropped: each carries the whole text so far, so
// the next one (or the reply) shows what a dropped one held.
const draftEvery = time.Second

// draftTimeout bounds one draft call: a late draft is worth nothing.
const draftTimeout = 5 * time.Second

// draftBoard streams the draft of a turn's reply into the owner's
// private chats with sendMessageDraft, while the reply is written. A
// draft is a preview Telegram shows for a moment: it is never queued,
// never retried and never stored, and the reply is sent as a message of
// its own as always. A server without the method (an older Bot API, a
// proxy) is asked once; then the owner sees the reply when it is whole,
// as before streaming.
type draftBoard struct {
	t           *Transport
	unsupported atomic.Bool

	mu    sync.Mutex
	chats map[int64]*chatDraft // one per owner's chat
	wg    sync.WaitGroup
}

// chatDraft is where one chat's draft stands: the turn it is of, when
// the last one went, and whether one is on its way.
type chatDraft struct {
	turn     string
	sentAt   time.Time
	inFlight bool
}

// show takes core's draft d for chat.
func (b *draftBoard) show(ctx context.Context, chat int64, d contracts.Draft) {
	if chat <= 0 || b.unsupported.Load() {
		return // drafts are for private chats only
	}
	now := b.t.clock.Now()
	b.mu.Lock()
	st := b.chats[chat]
	if st == nil {
		st = &chatDraft{}
		b.chats[chat] = st
	}
	if st.turn != d.Turn {
		st.turn, st.sentAt = d.Turn, time.Time{}
	}
	if st.inFlight || now.Sub(st.sentAt) < draftEvery {
		b.mu.Unlock()
		return
	}
	st.inFlight, st.sentAt = true, now
	b.mu.Unlock()
	b.wg.Go(func() {
		defer func() {
			b.mu.Lock()
			st.inFlight = false
			b.mu.Unlock()
		}()
		b.send(ctx, chat, d)
	})
}

// send makes one draft call: the last piece of the text as a reply would
// be cut into messages, since a draft previews the message being written.
func (b *draftBoard) send(ctx context.Context, chat int64, d contracts.Draft) {
	ctx, cancel := context.WithTimeout(ctx, draftTimeout)
	defer cancel()
	pieces := renderReply(d.Text, maxMessage)
	text := ""
	if len(pieces) > 0 {
		text = pieces[len(pieces)-1]
	}
	_, err := b.t.bot.SendMessageDraft(ctx, &bot.SendMessageDraftParams{ChatID: chat, DraftID: draftID(d.Turn), Text: text, ParseMode: models.ParseModeHTML})
	switch {
	case err == nil:
	case lacksMethod(err):
		if !b.unsupported.Swap(true) {
			b.t.log.Info("telegram: the Bot API server does not take drafts; replies show when whole", "err", err)
		}
	default:
		b.t.log.Info("telegram: a draft was dropped", "chat", chat, "err", err)
	}
}

// draftID is a turn's draft's id: the same for every draft of the turn,
// so Telegram animates one growing text, and never zero.
func draftID(turn string) string {
	return strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(turn))|1), 10)
}
