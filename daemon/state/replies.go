package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"shelldon/contracts"
)

// A reply is the owner's until the transport that delivers it holds it:
// core keeps each keyed reply here before it routes it, and forgets it,
// marking the messages it answers answered, only once that transport
// confirms holding it. The transport, for its part, keeps the key of each
// reply it took (TakeReply), so that a reply sent again — core restarted
// before it heard the confirmation — is queued once.

// Replies are core's replies routed and not yet confirmed by their
// transport (package handoff's ledger).
type Replies struct{ store *Store }

// Replies is the reply ledger's part of the store.
func (s *Store) Replies() *Replies { return &Replies{s} }

// KeepKeysFor is how long a transport remembers the key of a reply it
// took: longer than core sends a reply again (it gives up after as long),
// and as long as core remembers an answered message.
const KeepKeysFor = 48 * time.Hour

// KeptReply is a reply core routed whose transport has not yet confirmed
// holding it.
type KeptReply struct {
	Key       string
	Transport string
	Reply     contracts.Outbound
	// Messages are the admitted messages it answers.
	Messages []int64
	At       time.Time
}

// Keep keeps r until its transport confirms holding it
// ([Replies.Delivered]); keeping one of the same key again replaces it.
func (s *Replies) Keep(ctx context.Context, r KeptReply) error {
	if err := s.store.writable("keep a reply"); err != nil {
		return err
	}
	body, err := json.Marshal(r.Reply)
	if err != nil {
		return fmt.Errorf("keep reply %s: %w", r.Key, err)
	}
	messages, err := json.Marshal(nonNil(r.Messages))
	if err != nil {
		return fmt.Errorf("keep reply %s: %w", r.Key, err)
	}
	if _, err := s.store.db.ExecContext(ctx,
		`INSERT INTO replies (key, transport, body, messages, at) VALUES (?, ?, ?, ?, ?)
		 ON CONFLICT (key) DO UPDATE SET transport = excluded.transport, body = excluded.body, messages = excluded.messages, at = excluded.at`,
		r.Key, r.Transport, string(body), string(messages), r.At.UnixMilli()); err != nil {
		return fmt.Errorf("keep reply %s: %w", r.Key, err)
	}
	return nil
}

// Kept lists the replies no transport has confirmed, oldest first.
func (s *Replies) Kept(ctx context.Context) ([]KeptReply, error) {
	rows, err := s.store.db.QueryContext(ctx, `SELECT key, transport, body, messages, at FROM replies ORDER BY at, key`)
	if err != nil {
		return nil, fmt.Errorf("read kept replies: %w", err)
	}
	defer rows.Close()
	var out []KeptReply
	for rows.Next() {
		var (
			r              KeptReply
			body, messages string
			at             int64
		)
		if err := rows.Scan(&r.Key, &r.Transport, &body, &messages, &at); err != nil {
			return nil, fmt.Errorf("read kept replies: %w", err)
		}
		if err := errors.Join(json.Unmarshal([]byte(body), &r.Reply), json.Unmarshal([]byte(messages), &r.Messages)); err != nil {
			return nil, fmt.Errorf("read kept reply %s: %w", r.Key, err)
		}
		r.At = time.UnixMilli(at)
		out = append(out, r)
	}
	return out, rows.Err()
}

// Delivered records that the transport of reply key holds it: the
// messages it answers (those kept with it, and messages, for a reply that
// could not be kept) are answered at at, and the reply is forgotten, in
// one transaction.
func (s *Replies) Delivered(ctx context.Context, key string, messages []int64, at time.Time) error {
	if err := s.store.writable("record a reply delivered"); err != nil {
		return err
	}
	list, err := json.Marshal(nonNil(messages))
	if err != nil {
		return fmt.Errorf("record reply %s delivered: %w", key, err)
	}
	err = s.store.inTx(ctx, func(tx *keptTx) error {
		if _, err := tx.ExecContext(ctx,
			`UPDATE admitted SET answered_at = ? WHERE answered_at IS NULL AND (id IN (SELECT value FROM json_each(?))
			 OR id IN (SELECT j.value FROM replies, json_each(replies.messages) AS j WHERE replies.key = ?))`,
			at.UnixMilli(), string(list), key); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM replies WHERE key = ?`, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("record reply %s delivered: %w", key, err)
	}
	return nil
}

// OutboxEntry is one item of a batch a transport queues at once.
type OutboxEntry struct {
	Lane, Kind string
	Body       []byte
}

// TakeReply queues the items of the reply key at the end of their lanes
// of transport's outbox, in one transaction, and remembers the key for
// KeepKeysFor; taken is false when the key was taken before, and nothing
// is queued: the same reply sent again is one reply. An item longer than
// MaxOutboxBytes refuses the batch with ErrOutboxItemTooBig.
func (s *Queues) TakeReply(ctx context.Context, transport, key string, items []OutboxEntry, now time.Time) (taken bool, err error) {
	if err := s.store.writable("take a reply"); err != nil {
		return false, err
	}
	if key == "" {
		return false, fmt.Errorf("take a reply for %s: no key given", transport)
	}
	for _, it := range items {
		if err := checkOutboxItem(transport, it.Kind, it.Body); err != nil {
			return false, fmt.Errorf("take reply %s: %w", key, err)
		}
	}
	err = s.store.inTx(ctx, func(tx *keptTx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM transport_keys WHERE transport = ? AND at < ?`,
			transport, now.Add(-KeepKeysFor).UnixMilli()); err != nil {
			return fmt.Errorf("forget old keys: %w", err)
		}
		res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO transport_keys (transport, key, at) VALUES (?, ?, ?)`,
			transport, key, now.UnixMilli())
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err // taken before
		}
		taken = true
		for _, it := range items {
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO transport_outbox (transport, lane, kind, body, not_before, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
				transport, it.Lane, it.Kind, blob(it.Body), now.UnixMilli(), now.UnixMilli()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("take reply %s for %s: %w", key, transport, err)
	}
	return taken, nil
}

// nonNil is ids, or an empty list for none: JSON's [] rather than null.
func nonNil(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}
