package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// What a transport — the Telegram bot inside core, or another — keeps
// across restarts, keyed by its name: the updates taken from its server
// (so none is handled twice or lost), the replies it must still send, in
// lanes (so none is lost while the server is unreachable, and one chat's
// trouble holds up no other), how many it gave up on (so the owner is
// told), where it showed approval requests (so those messages can be
// updated once the owner decides), and the senders it ignored.

// MaxOutboxBytes caps the body of one outbox item. A reply is at most a
// few hundred KB; anything bigger is a bug, and would sit at the head of
// the queue on every attempt.
const MaxOutboxBytes = 1 << 20

// maxSenderRunes caps how much of an ignored sender's name is kept: the
// name comes from strangers.
const maxSenderRunes = 200

var (
	// ErrOutboxItemTooBig is wrapped by Enqueue when a body is longer than
	// MaxOutboxBytes.
	ErrOutboxItemTooBig = errors.New("outbox item too big")
	// ErrNoOutboxItem is wrapped by Postpone and Hold when no outbox item
	// has the id: it was sent or given up on, or never enqueued.
	ErrNoOutboxItem = errors.New("no such outbox item")
)

// InboxItem is one update taken from a transport's server and not yet
// handled.
type InboxItem struct {
	// ID is the server's update id, positive.
	ID   int64
	Body []byte
}

// Receive stores items and sets transport's offset to the highest of
// their ids, in one transaction: once it returns, the server may be told
// they were received. The offset is the last batch's, even below an
// earlier one's: Telegram starts its ids again lower after a quiet week,
// and a confirmation past the old ids would make it forget the new ones. An item whose id is already stored stays as it was.
// Ids must be positive; a batch with any other is refused whole.
func (s *Queues) Receive(ctx context.Context, transport string, items []InboxItem) error {
	if err := s.store.writable("receive updates"); err != nil {
		return err
	}
	if transport == "" {
		return errors.New("receive updates: no transport named")
	}
	if len(items) == 0 {
		return nil
	}
	var highest int64
	for _, it := range items {
		if it.ID <= 0 {
			return fmt.Errorf("receive updates of %s: update id %d is not positive", transport, it.ID)
		}
		highest = max(highest, it.ID)
	}
	err := s.store.inTx(ctx, func(tx *keptTx) error {
		for _, it := range items {
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO transport_inbox (transport, id, body) VALUES (?, ?, ?)`,
				transport, it.ID, blob(it.Body)); err != nil {
				return fmt.Errorf("store update %d: %w", it.ID, err)
			}
		}
		_, err := tx.ExecContext(ctx,
			`INSERT INTO transport_offsets (transport, highest_id) VALUES (?, ?)
			 ON CONFLICT (transport) DO UPDATE SET highest_id = excluded.highest_id`,
			transport, highest)
		if err != nil {
			return fmt.Errorf("set offset to %d: %w", highest, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("receive updates of %s: %w", transport, err)
	}
	return nil
}

// Offset is the highest update id of the last batch received for
// transport, 0 if none.
// Handling an update does not lower it.
func (s *Queues) Offset(ctx context.Context, transport string) (int64, error) {
	var highest int64
	err := s.store.db.QueryRowContext(ctx, `SELECT highest_id FROM transport_offsets WHERE transport = ?`, transport).Scan(&highest)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("read offset of %s: %w", transport, err)
	}
	return highest, nil
}

// Unhandled returns up to limit of transport's stored updates, lowest id
// first.
func (s *Queues) Unhandled(ctx context.Context, transport string, limit int) ([]InboxItem, error) {
	if limit <= 0 {
		return nil, nil
	}
	// No LIMIT ?: SQLite compiles a statement again whenever a bound LIMIT
	// changes, and limit does. The rows come in the primary key's order,
	// so reading stops after limit of them with no more work.
	rows, err := s.store.db.QueryContext(ctx, `SELECT id, body FROM transport_inbox WHERE transport = ? ORDER BY id`, transport)
	if err != nil {
		return nil, fmt.Errorf("read unhandled updates of %s: %w", transport, err)
	}
	defer rows.Close()
	var items []InboxItem
	for len(items) < limit && rows.Next() {
		var it InboxItem
		if err := rows.Scan(&it.ID, &it.Body); err != nil {
			return nil, fmt.Errorf("read unhandled updates of %s: %w", transport, err)
		}
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read unhandled updates of %s: %w", transport, err)
	}
	return items, nil
}

// Handled forgets a handled update. The offset stays, so the update is
// not taken again; forgetting one already forgotten does nothing.
func (s *Queues) Handled(ctx context.Context, transport string, id int64) error {
	if err := s.store.writable("forget handled update"); err != nil {
		return err
	}
	if _, err := s.store.db.ExecContext(ctx, `DELETE FROM transport_inbox WHERE transport = ? AND id = ?`, transport, id); err != nil {
		return fmt.Errorf("forget handled update %d of %s: %w", id, transport, err)
	}
	return nil
}

// OutboxItem is something a transport must still send.
type OutboxItem struct {
	// ID gives the sending order within a lane: lower first.
	ID        int64
	Transport string
	// Lane is the queue the item waits in, in the transport's terms (one
	// chat's replies, say): items of a lane go in order, and a lane never
	// waits for another.
	Lane string
	// Kind says what Body is, in the transport's terms.
	Kind string
	Body []byte
	// Attempts counts the failed attempts Postpone was told of.
	Attempts int
	// NotBefore is when the next attempt may be made, to the millisecond.
	NotBefore time.Time
	Created   time.Time
}

const outboxColumns = `id, transport, lane, kind, body, attempts, not_before, created_at`

// Enqueue adds an item at the end of one lane of transport's outbox, to
// be sent from now on, and returns its id. A body longer than
// MaxOutboxBytes is refused with ErrOutboxItemTooBig.
func (s *Queues) Enqueue(ctx context.Context, transport, lane, kind string, body []byte, now time.Time) (int64, error) {
	if err := s.store.writable("enqueue"); err != nil {
		return 0, err
	}
	if err := checkOutboxItem(transport, kind, body); err != nil {
		return 0, fmt.Errorf("enqueue: %w", err)
	}
	var id int64
	err := s.store.db.retried(func() error {
		return s.store.db.QueryRowContext(ctx,
			`INSERT INTO transport_outbox (transport, lane, kind, body, not_before, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id`,
			transport, lane, kind, blob(body), now.UnixMilli(), now.UnixMilli()).Scan(&id)
	})
	if err != nil {
		return 0, fmt.Errorf("enqueue %s for %s: %w", kind, transport, err)
	}
	return id, nil
}

// checkOutboxItem refuses an item the outbox cannot hold: no transport,
// no kind, or a body longer than MaxOutboxBytes (ErrOutboxItemTooBig).
func checkOutboxItem(transport, kind string, body []byte) error {
	switch {
	case transport == "":
		return errors.New("no transport named")
	case kind == "":
		return fmt.Errorf("no kind given for %s", transport)
	case len(body) > MaxOutboxBytes:
		return fmt.Errorf("%s for %s: %w: %d bytes, at most %d", kind, transport, ErrOutboxItemTooBig, len(body), MaxOutboxBytes)
	}
	return nil
}

// OutboxLanes names transport's lanes that have something to do: items
// queued, or replies given up on that the owner was not yet told of.
func (s *Queues) OutboxLanes(ctx context.Context, transport string) ([]string, error) {
	rows, err := s.store.db.QueryContext(ctx,
		`SELECT DISTINCT lane FROM transport_outbox WHERE transport = ?
		 UNION SELECT lane FROM transport_undelivered WHERE transport = ? ORDER BY lane`, transport, transport)
	if err != nil {
		return nil, fmt.Errorf("read outbox lanes of %s: %w", transport, err)
	}
	defer rows.Close()
	var lanes []string
	for rows.Next() {
		var lane string
		if err := rows.Scan(&lane); err != nil {
			return nil, fmt.Errorf("read outbox lanes of %s: %w", transport, err)
		}
		lanes = append(lanes, lane)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read outbox lanes of %s: %w", transport, err)
	}
	return lanes, nil
}

// NextOutbox returns the oldest item of one of transport's lanes,
// whatever its NotBefore; ok is false when the lane is empty. A lane goes
// strictly in order, so the caller waits for NotBefore itself rather
// than sending a later item of the lane.
func (s *Queues) NextOutbox(ctx context.Context, transport, lane string) (item OutboxItem, ok bool, err error) {
	var notBefore, created int64
	err = s.store.db.QueryRowContext(ctx, `SELECT `+outboxColumns+` FROM transport_outbox WHERE transport = ? AND lane = ? ORDER BY id LIMIT 1`, transport, lane).
		Scan(&item.ID, &item.Transport, &item.Lane, &item.Kind, &item.Body, &item.Attempts, &notBefore, &created)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return OutboxItem{}, false, nil
	case err != nil:
		return OutboxItem{}, false, fmt.Errorf("read outbox lane %q of %s: %w", lane, transport, err)
	}
	item.NotBefore = time.UnixMilli(notBefore)
	item.Created = time.UnixMilli(created)
	return item, true, nil
}

// Postpone counts a failed attempt at item id, sets when the next may be
// made, and returns how many attempts have failed. An id that names no
// item gets ErrNoOutboxItem.
func (s *Queues) Postpone(ctx context.Context, id int64, until time.Time) (int, error) {
	if err := s.store.writable("postpone outbox item"); err != nil {
		return 0, err
	}
	var attempts int
	err := s.store.db.retried(func() error {
		return s.store.db.QueryRowContext(ctx,
			`UPDATE transport_outbox SET attempts = attempts + 1, not_before = ? WHERE id = ? RETURNING attempts`,
			ceilMilli(until), id).Scan(&attempts)
	})
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, fmt.Errorf("postpone outbox item %d: %w", id, ErrNoOutboxItem)
	case err != nil:
		return 0, fmt.Errorf("postpone outbox item %d: %w", id, err)
	}
	return attempts, nil
}

// Hold sets when the next attempt at item id may be made without counting
// a failed one: the server asked for a wait, or could not be reached,
// which says nothing against the item. An id that names no item gets
// ErrNoOutboxItem.
func (s *Queues) Hold(ctx context.Context, id int64, until time.Time) error {
	if err := s.store.writable("hold outbox item"); err != nil {
		return err
	}
	res, err := s.store.db.ExecContext(ctx, `UPDATE transport_outbox SET not_before = ? WHERE id = ?`, ceilMilli(until), id)
	if err != nil {
		return fmt.Errorf("hold outbox item %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	switch {
	case err != nil:
		return fmt.Errorf("hold outbox item %d: %w", id, err)
	case n == 0:
		return fmt.Errorf("hold outbox item %d: %w", id, ErrNoOutboxItem)
	}
	return nil
}

// ceilMilli is t in unix milliseconds, rounded up: a wait a server asked
// for (a 429's retry_after) is never shortened by the column's precision.
func ceilMilli(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.After(time.UnixMilli(ms)) {
		ms++
	}
	return ms
}

// Sent removes an item once delivered. Removing one already gone does
// nothing.
func (s *Queues) Sent(ctx context.Context, id int64) error {
	if err := s.store.writable("remove sent outbox item"); err != nil {
		return err
	}
	if _, err := s.store.db.ExecContext(ctx, `DELETE FROM transport_outbox WHERE id = ?`, id); err != nil {
		return fmt.Errorf("remove sent outbox item %d: %w", id, err)
	}
	return nil
}

// GiveUp removes an item that will not be delivered and, when tell names
// a lane, counts it there as undelivered, in one transaction: the owner
// is to be told of every reply lost, and of none twice. Giving up on an
// item already gone does nothing.
func (s *Queues) GiveUp(ctx context.Context, id int64, tell string) error {
	if err := s.store.writable("give up on outbox item"); err != nil {
		return err
	}
	err := s.store.inTx(ctx, func(tx *keptTx) error {
		var transport string
		err := tx.QueryRowContext(ctx, `DELETE FROM transport_outbox WHERE id = ? RETURNING transport`, id).Scan(&transport)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return err
		case tell == "":
			return nil
		}
		_, err = tx.ExecContext(ctx,
			`INSERT INTO transport_undelivered (transport, lane, count) VALUES (?, ?, 1)
			 ON CONFLICT (transport, lane) DO UPDATE SET count = count + 1`, transport, tell)
		return err
	})
	if err != nil {
		return fmt.Errorf("give up on outbox item %d: %w", id, err)
	}
	return nil
}

// Undelivered is how many replies of transport's lane were given up on
// and not yet told of.
func (s *Queues) Undelivered(ctx context.Context, transport, lane string) (int, error) {
	var n int
	err := s.store.db.QueryRowContext(ctx, `SELECT count FROM transport_undelivered WHERE transport = ? AND lane = ?`, transport, lane).Scan(&n)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("count undelivered replies of %s lane %q: %w", transport, lane, err)
	}
	return n, nil
}

// ToldUndelivered takes n off the replies of transport's lane not yet
// told of, once the owner was told of n; any given up on meanwhile stay
// counted.
func (s *Queues) ToldUndelivered(ctx context.Context, transport, lane string, n int) error {
	if err := s.store.writable("forget undelivered replies"); err != nil {
		return err
	}
	err := s.store.inTx(ctx, func(tx *keptTx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE transport_undelivered SET count = count - ? WHERE transport = ? AND lane = ?`,
			n, transport, lane); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM transport_undelivered WHERE transport = ? AND lane = ? AND count <= 0`, transport, lane)
		return err
	})
	if err != nil {
		return fmt.Errorf("forget %d undelivered replies of %s lane %q: %w", n, transport, lane, err)
	}
	return nil
}

// OutboxLen is how many items transport must still send.
func (s *Queues) OutboxLen(ctx context.Context, transport string) (int, error) {
	var n int
	if err := s.store.db.QueryRowContext(ctx, `SELECT count(*) FROM transport_outbox WHERE transport = ?`, transport).Scan(&n); err != nil {
		return 0, fmt.Errorf("count outbox of %s: %w", transport, err)
	}
	return n, nil
}

// ApprovalMessage is one message a transport sent showing an approval
// request.
type ApprovalMessage struct {
	Transport, Turn string
	Chat            string
	MessageID       int64
	// HTML is the message's text as sent, for editing it later.
	HTML string
	// At is when the request it shows was parked (when the transport
	// could read that; else when it was sent), to the millisecond: the
	// messages of an earlier request under the same key are older.
	At time.Time
}

// RecordApprovalMessage remembers one message showing a request; there
// may be several (asking again, as /pending does, shows it anew).
func (s *Queues) RecordApprovalMessage(ctx context.Context, m ApprovalMessage) error {
	if err := s.store.writable("record approval message"); err != nil {
		return err
	}
	if err := checkApprovalKey(m.Transport, m.Turn); err != nil {
		return fmt.Errorf("record approval message: %w", err)
	}
	_, err := s.store.db.ExecContext(ctx, `INSERT INTO approval_messages (transport, turn, chat, message_id, html, at) VALUES (?, ?, ?, ?, ?, ?)`,
		m.Transport, m.Turn, m.Chat, m.MessageID, m.HTML, m.At.UnixMilli())
	if err != nil {
		return fmt.Errorf("record approval message %d of %q on %s: %w", m.MessageID, m.Turn, m.Transport, err)
	}
	return nil
}

// ApprovalMessages returns the messages recorded for a request, in the
// order recorded.
func (s *Queues) ApprovalMessages(ctx context.Context, transport, turn string) ([]ApprovalMessage, error) {
	rows, err := s.store.db.QueryContext(ctx,
		`SELECT transport, turn, chat, message_id, html, at FROM approval_messages WHERE transport = ? AND turn = ? ORDER BY id`, transport, turn)
	if err != nil {
		return nil, fmt.Errorf("read approval messages of %q on %s: %w", turn, transport, err)
	}
	defer rows.Close()
	var messages []ApprovalMessage
	for rows.Next() {
		var (
			m  ApprovalMessage
			at int64
		)
		if err := rows.Scan(&m.Transport, &m.Turn, &m.Chat, &m.MessageID, &m.HTML, &at); err != nil {
			return nil, fmt.Errorf("read approval messages of %q on %s: %w", turn, transport, err)
		}
		m.At = time.UnixMilli(at)
		messages = append(messages, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read approval messages of %q on %s: %w", turn, transport, err)
	}
	return messages, nil
}

// ForgetApprovalMessages forgets the messages of transport that showed
// the request of turn and were sent before before; turn "" forgets those
// of every request: a pet runs for months, and the table must not grow
// without bound. It returns how many went.
func (s *Queues) ForgetApprovalMessages(ctx context.Context, transport, turn string, before time.Time) (int, error) {
	if err := s.store.writable("forget approval messages"); err != nil {
		return 0, err
	}
	res, err := s.store.db.ExecContext(ctx, `DELETE FROM approval_messages WHERE transport = ? AND (? = '' OR turn = ?) AND at < ?`,
		transport, turn, turn, before.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("forget approval messages of %q on %s sent before %s: %w", turn, transport, before.Format(time.RFC3339), err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("forget approval messages of %q on %s: %w", turn, transport, err)
	}
	return int(n), nil
}

// checkApprovalKey refuses a request that names no transport or no turn.
func checkApprovalKey(transport, turn string) error {
	switch {
	case transport == "":
		return fmt.Errorf("request %q names no transport", turn)
	case turn == "":
		return fmt.Errorf("request on %s names no turn", transport)
	}
	return nil
}

// Stranger is a sender whose updates a transport ignored.
type Stranger struct {
	Transport, Sender string
	// Count is how many of its updates were ignored.
	Count int64
	// Last is when the latest was, to the millisecond.
	Last time.Time
}

// CountStranger counts one ignored update from sender at now. The sender's
// name is kept to its first 200 characters.
func (s *Queues) CountStranger(ctx context.Context, transport, sender string, now time.Time) error {
	if err := s.store.writable("count stranger"); err != nil {
		return err
	}
	if transport == "" {
		return errors.New("count stranger: no transport named")
	}
	sender = clip(sender, maxSenderRunes)
	_, err := s.store.db.ExecContext(ctx,
		`INSERT INTO ignored_senders (transport, sender, count, last_at) VALUES (?, ?, 1, ?)
		 ON CONFLICT (transport, sender) DO UPDATE SET count = count + 1, last_at = excluded.last_at`,
		transport, sender, now.UnixMilli())
	if err != nil {
		return fmt.Errorf("count stranger %q on %s: %w", sender, transport, err)
	}
	return nil
}

// Strangers returns at most limit ignored senders of every transport, the
// most recently heard from first.
func (s *Queues) Strangers(ctx context.Context, limit int) ([]Stranger, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.store.db.QueryContext(ctx,
		`SELECT transport, sender, count, last_at FROM ignored_senders ORDER BY last_at DESC, transport, sender LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("read strangers: %w", err)
	}
	defer rows.Close()
	var strangers []Stranger
	for rows.Next() {
		var (
			st   Stranger
			last int64
		)
		if err := rows.Scan(&st.Transport, &st.Sender, &st.Count, &last); err != nil {
			return nil, fmt.Errorf("read strangers: %w", err)
		}
		st.Last = time.UnixMilli(last)
		strangers = append(strangers, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read strangers: %w", err)
	}
	return strangers, nil
}

// StrangerTotal is how many updates were ignored in all, and from how
// many senders.
func (s *Queues) StrangerTotal(ctx context.Context) (updates int64, senders int, err error) {
	if err := s.store.db.QueryRowContext(ctx, `SELECT coalesce(sum(count), 0), count(*) FROM ignored_senders`).Scan(&updates, &senders); err != nil {
		return 0, 0, fmt.Errorf("count strangers: %w", err)
	}
	return updates, senders, nil
}

// inTx runs fn in one transaction, committed when fn returns nil and
// rolled back otherwise. fn must use tx alone: the store has a single
// connection, which tx holds. A transaction that found the disk full is
// run again once room is made for it (SQLite rolled it back whole), so
// fn may run twice: what it keeps of its results it assigns, never adds
// to.
func (s *Store) inTx(ctx context.Context, fn func(tx *keptTx) error) error {
	return s.db.retried(func() error { return s.tx(ctx, fn) })
}

// tx runs fn in one transaction, for inTx.
func (s *Store) tx(ctx context.Context, fn func(tx *keptTx) error) (err error) {
	sqlTx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	tx := &keptTx{tx: sqlTx, db: s.db}
	defer func() {
		if err != nil {
			sqlTx.Rollback()
		}
		tx.keepMissed(ctx)
	}()
	if err := fn(tx); err != nil {
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// blob is b as a column value: never NULL, which a nil slice would be.
func blob(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
