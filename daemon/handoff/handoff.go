// Package handoff keeps each reply of the pet's turns until the transport
// that delivers it holds it: a message of the owner's is answered only
// once its reply is safe with its transport (Telegram's outbox in
// state.db, the terminal's screen), not when core routed it.
//
// Core keeps a reply in the state database (state.Replies.Keep) before it
// routes it, keyed by the messages it answers (or its turn, for a turn of
// no message's: a schedule's, a decision's), and routes it with its key;
// the transport takes a key once and confirms it (OUTBOUND_ACK), and only
// then are the messages answered (state.Replies.Delivered). A reply whose
// confirmation does not come is sent again: when its transport joins the
// bus (a restarted core, a transport that was dropped or away), and every
// minute while it is joined (its disk was full). A core killed at any
// point thus neither loses a reply — the next sends the kept one, or
// answers the message again if the reply was never kept — nor sends one
// twice: a kept reply goes again under its key, and the transport holds
// it already.
//
// The ledger is core's loop's: it is not safe for concurrent use.
package handoff

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/state"
)

// Bounds of the wait for a transport's confirmation.
const (
	// ResendAfter is how long a reply waits for its confirmation before
	// it is sent again to a transport that stayed joined.
	ResendAfter = time.Minute
	// GiveUpAfter is how long a reply is sent again: a transport away
	// longer (a terminal closed for two days) never gets it, and the
	// messages it answers are let go, with a log line. It is as long as a
	// transport remembers the keys it took (state.KeepKeysFor).
	GiveUpAfter = state.KeepKeysFor
	// maxUnkept bounds the replies the store could not keep (a full disk)
	// that the ledger holds in memory; past it the oldest is let go, and
	// the messages it answers are answered again at the next start.
	maxUnkept = 64
)

// Store is where the ledger keeps replies: the state store.
type Store interface {
	Keep(ctx context.Context, r state.KeptReply) error
	Kept(ctx context.Context) ([]state.KeptReply, error)
	Delivered(ctx context.Context, key string, messages []int64, at time.Time) error
}

// Config sets up a ledger.
type Config struct {
	Store Store
	// Send routes a reply to transport; an error says no connection of it
	// took the reply.
	Send  func(transport string, out contracts.Outbound) error
	Clock clock.Clock
	// Failed counts a write to the state that failed, as /status does;
	// it returns err.
	Failed func(what string, err error) error
	Log    *slog.Logger
}

// Ledger is the replies routed and not yet confirmed.
type Ledger struct {
	cfg     Config
	waiting map[string]*waiting
}

// waiting is one reply waiting for its transport's confirmation.
type waiting struct {
	reply state.KeptReply
	// kept says the store holds the reply; one it could not keep is only
	// here.
	kept bool
	sent time.Time
}

// New makes a ledger.
func New(cfg Config) *Ledger {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Failed == nil {
		cfg.Failed = func(_ string, err error) error { return err }
	}
	return &Ledger{cfg: cfg, waiting: map[string]*waiting{}}
}

// Load takes up the replies an earlier core kept and no transport
// confirmed: they go as their transports join.
func (l *Ledger) Load(ctx context.Context) {
	kept, err := l.cfg.Store.Kept(ctx)
	if err != nil {
		l.cfg.Log.Error("reading the replies an earlier core left unconfirmed failed; their messages are answered again", "err", err)
		return
	}
	for _, r := range kept {
		l.waiting[r.Key] = &waiting{reply: r, kept: true}
	}
	if len(kept) > 0 {
		l.cfg.Log.Warn("an earlier core left replies its transports had not confirmed; sending them again as the transports join", "count", len(kept))
	}
}

// Key names the reply of turn that answers messages: the messages' ids
// for the log, and the turn, because ids are not forever — a database
// that lost its write-ahead log, or was restored from its backup, hands
// them out again, and a transport remembers the keys it took
// (state.KeepKeysFor), so a key of ids alone would have it drop the
// reply to the next message as a duplicate. A reply is sent again under
// the key it was kept with; a message is answered by a new turn only when
// no reply of it was kept, which its transport then never had.
func Key(turn string, messages []int64) string {
	if len(messages) == 0 {
		return "t" + turn
	}
	ids := make([]string, len(messages))
	for i, id := range messages {
		ids[i] = strconv.FormatInt(id, 10)
	}
	return "m" + strings.Join(ids, ".") + "@" + turn
}

// Reply keeps out, the reply for transport that answers messages, and
// routes it with its key. A reply that cannot be kept is routed all the
// same, and held in memory until confirmed.
func (l *Ledger) Reply(ctx context.Context, transport string, out contracts.Outbound, messages []int64) {
	out.Key = Key(out.Turn, messages)
	now := l.cfg.Clock.Now()
	w := &waiting{reply: state.KeptReply{Key: out.Key, Transport: transport, Reply: out, Messages: messages, At: now}}
	err := l.cfg.Store.Keep(ctx, w.reply)
	if err := l.cfg.Failed("keep a reply", err); err != nil {
		l.cfg.Log.Error("could not keep a reply until its transport holds it; routing it anyway, held in memory", "key", out.Key, "err", err)
		l.dropUnkept()
	}
	w.kept = err == nil
	l.waiting[out.Key] = w
	l.send(w, now)
}

// dropUnkept lets go of the oldest reply held only in memory once there
// are maxUnkept: its messages stay unanswered in the store, for the next
// start.
func (l *Ledger) dropUnkept() {
	var oldest *waiting
	n := 0
	for _, w := range l.waiting {
		if w.kept {
			continue
		}
		n++
		if oldest == nil || w.reply.At.Before(oldest.reply.At) {
			oldest = w
		}
	}
	if n >= maxUnkept {
		l.cfg.Log.Error("too many replies held in memory for their transports; the oldest is let go, its messages answered again at the next start",
			"key", oldest.reply.Key, "transport", oldest.reply.Transport, "bound", maxUnkept)
		delete(l.waiting, oldest.reply.Key)
	}
}

// send routes w's reply to its transport.
func (l *Ledger) send(w *waiting, now time.Time) {
	w.sent = now
	if err := l.cfg.Send(w.reply.Transport, w.reply.Reply); err != nil {
		l.cfg.Log.Warn("a reply reached no transport; it goes again when its transport joins", "key", w.reply.Key,
			"transport", w.reply.Transport, "err", err)
	}
}

// Confirmed takes transport's word that it holds the reply key: its
// messages are answered. A word from another transport than the reply's
// is ignored: only the one that delivers it can say it holds it.
func (l *Ledger) Confirmed(ctx context.Context, transport, key string) {
	w, ok := l.waiting[key]
	switch {
	case !ok:
		l.cfg.Log.Debug("a transport confirmed a reply not waiting (confirmed before)", "transport", transport, "key", key)
		return
	case w.reply.Transport != transport:
		l.cfg.Log.Warn("a transport confirmed another's reply; ignored", "transport", transport, "key", key, "for", w.reply.Transport)
		return
	}
	delete(l.waiting, key)
	l.delivered(ctx, w, "record messages answered")
}

// delivered records w's messages answered and forgets the kept reply.
func (l *Ledger) delivered(ctx context.Context, w *waiting, what string) {
	if err := l.cfg.Failed(what, l.cfg.Store.Delivered(ctx, w.reply.Key, w.reply.Messages, l.cfg.Clock.Now())); err != nil {
		// The transport holds it, and the key: the next start sends the
		// kept reply again, which the transport takes as the one it holds.
		l.cfg.Log.Error("recording that a reply's messages are answered failed; the next start sends it again, and its transport keeps one",
			"key", w.reply.Key, "err", err)
	}
}

// Joined sends transport, which joined the bus at at, every reply of its
// that waits and was last sent before then: what went on a connection
// before may not have arrived, and what went after went on this one.
func (l *Ledger) Joined(transport string, at time.Time) {
	now := l.cfg.Clock.Now()
	for _, w := range l.sorted() {
		if w.reply.Transport == transport && !w.sent.After(at) {
			l.send(w, now)
		}
	}
}

// Retry sends again each reply unconfirmed for ResendAfter since it was
// last sent, and gives up on one waiting past GiveUpAfter.
func (l *Ledger) Retry(ctx context.Context) {
	now := l.cfg.Clock.Now()
	for _, w := range l.sorted() {
		switch {
		case now.Sub(w.reply.At) >= GiveUpAfter:
			l.cfg.Log.Error("gave up on a reply its transport never confirmed; its messages are let go", "key", w.reply.Key,
				"transport", w.reply.Transport, "waited", now.Sub(w.reply.At).Round(time.Minute))
			delete(l.waiting, w.reply.Key)
			l.delivered(ctx, w, "let go of a reply")
		case now.Sub(w.sent) >= ResendAfter:
			l.send(w, now)
		}
	}
}

// sorted are the waiting replies, oldest first, so that a chat's replies
// go again in their order.
func (l *Ledger) sorted() []*waiting {
	out := make([]*waiting, 0, len(l.waiting))
	for _, w := range l.waiting {
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b *waiting) int {
		return cmp.Or(a.reply.At.Compare(b.reply.At), cmp.Compare(a.reply.Key, b.reply.Key))
	})
	return out
}
