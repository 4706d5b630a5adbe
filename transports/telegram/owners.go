package telegram

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/pairing"
)

// pairedOwnerKey is the state store's key of the owner a pairing code
// made: their Telegram user id.
const pairedOwnerKey = "telegram-paired-owner"

// What a stranger reads while the pet has no owner: nothing more, so that
// neither a wrong code nor a probe learns anything.
const notPairedReply = "not paired"

// pairedReply is what the new owner reads once their code pairs them.
const pairedReply = "Paired: you are my owner now. Say hello."

// Bounds of the replies to strangers while the pet has no owner: one a
// minute to each, at most notPairedPerMinute a minute in all.
const (
	notPairedEvery     = time.Minute
	notPairedPerMinute = 10
)

// owners are the Telegram users who may chat and tap: those the
// configuration names (telegram.allowed_users), and the one a pairing
// code made. The inbox reads it, the outbox too (to whom a reply for no
// chat goes), so it is locked.
type owners struct {
	mu         sync.RWMutex
	configured []int64
	paired     int64 // 0 for none
}

func (o *owners) allowed(id int64) bool {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return id != 0 && (id == o.paired || slices.Contains(o.configured, id))
}

// all are the owners' ids, each once.
func (o *owners) all() []int64 {
	o.mu.RLock()
	defer o.mu.RUnlock()
	ids := slices.Clone(o.configured)
	if o.paired != 0 && !slices.Contains(ids, o.paired) {
		ids = append(ids, o.paired)
	}
	return ids
}

func (o *owners) none() bool { return len(o.all()) == 0 }

func (o *owners) pair(id int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.paired = id
}

// pairer turns a stranger into the owner when they send the code
// `shelldon pair` minted, and keeps who it paired. The inbox alone uses
// it (owners aside, which are locked).
type pairer struct {
	// file is the pairing code's (statedir.Layout.Pairing); "" turns
	// pairing off.
	file   string
	store  keyValues
	owners *owners
	limit  notPairedLimiter
	clock  clock.Clock
	log    *slog.Logger
}

// keyValues is where the paired owner is kept: the state store.
type keyValues interface {
	Get(ctx context.Context, key string) ([]byte, bool, error)
	Put(ctx context.Context, key string, value []byte) error
}

// load takes up the owner an earlier pairing made.
func (p *pairer) load(ctx context.Context) error {
	raw, ok, err := p.store.Get(ctx, pairedOwnerKey)
	if err != nil || !ok {
		return err
	}
	id, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || id <= 0 {
		return fmt.Errorf("the paired owner %q is not a Telegram user id (run shelldon pair again)", raw)
	}
	p.owners.pair(id)
	return nil
}

// take reads a stranger's message as a pairing code, if one waits: its
// sender becomes the owner (replacing one paired before), and paired
// says so. reply is what the sender is answered, "" for nothing: the
// news that they are paired, or, while the pet has no owner at all,
// "not paired", within bounds.
func (p *pairer) take(ctx context.Context, from *user, text string) (paired bool, reply string) {
	if p.file == "" || from == nil {
		return false, ""
	}
	outcome, err := pairing.Try(p.file, text, p.clock.Now())
	if err != nil {
		p.log.Error("telegram: reading the pairing code", "err", err)
	}
	switch outcome {
	case pairing.Paired:
		if err := p.store.Put(ctx, pairedOwnerKey, []byte(strconv.FormatInt(from.ID, 10))); err != nil {
			// Paired for now; a restart forgets it, and the owner pairs again.
			p.log.Error("telegram: keeping the paired owner; it is forgotten at the next start", "err", err)
		}
		p.owners.pair(from.ID)
		p.log.Warn("telegram: paired a new owner with a pairing code", contracts.AuditEvent, contracts.EventPairing,
			"user_id", from.ID, "username", from.Username, "name", from.FirstName)
		return true, pairedReply
	case pairing.Spent:
		p.log.Warn("telegram: a pairing code was spent by wrong guesses; shelldon pair makes a new one",
			contracts.AuditEvent, contracts.EventPairing, "user_id", from.ID, "guesses", pairing.MaxGuesses)
	}
	if p.owners.none() && p.limit.allow(from.ID, p.clock.Now()) {
		return false, notPairedReply
	}
	return false, ""
}

// notPairedLimiter bounds the replies to strangers while unpaired. The
// inbox alone uses it.
type notPairedLimiter struct {
	last        map[int64]time.Time
	windowStart time.Time
	inWindow    int
}

func (l *notPairedLimiter) allow(id int64, now time.Time) bool {
	if now.Sub(l.windowStart) >= time.Minute {
		l.windowStart, l.inWindow = now, 0
		for user, at := range l.last {
			if now.Sub(at) >= notPairedEvery {
				delete(l.last, user)
			}
		}
	}
	if l.last == nil {
		l.last = map[int64]time.Time{}
	}
	if at, ok := l.last[id]; (ok && now.Sub(at) < notPairedEvery) || l.inWindow >= notPairedPerMinute {
		return false
	}
	l.last[id] = now
	l.inWindow++
	return true
}
