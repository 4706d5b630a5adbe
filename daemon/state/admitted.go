package state

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Intake keeps the owner's messages that core admitted, each until a
// turn answers it, so that a core stopped meanwhile answers it at its
// next start.
type Intake struct{ *Store }

// Intake is intake's part of the store.
func (s *Store) Intake() *Intake { return &Intake{s} }

// Admitted is one of the owner's messages that core admitted: kept until
// a turn has answered it.
type Admitted struct {
	ID              int64
	Transport, Chat string
	// Ref is the transport's own id of the message, "" when it has none.
	Ref  string
	Text string
	At   time.Time
	// Turn is the last turn that took it up, "" while it waits for one;
	// Tries counts the turns that did (more than one when a core stopped
	// during its turn).
	Turn  string
	Tries int
}

// Admit keeps a message of the owner's until a turn answers it, and
// returns its id. A message the transport delivers again (the same ref)
// is the one kept already: its id comes back with again set, and no
// second row is made.
func (s *Intake) Admit(ctx context.Context, m Admitted) (id int64, again bool, err error) {
	if err := s.writable("admit a message"); err != nil {
		return 0, false, err
	}
	if m.Ref != "" {
		err := s.db.QueryRowContext(ctx, `SELECT id FROM admitted WHERE transport = ? AND ref = ?`, m.Transport, m.Ref).Scan(&id)
		if err == nil {
			return id, true, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return 0, false, fmt.Errorf("admit a message: %w", err)
		}
	}
	err = s.db.retried(func() error {
		return s.db.QueryRowContext(ctx,
			`INSERT INTO admitted (transport, chat, ref, text, at) VALUES (?, ?, ?, ?, ?) RETURNING id`,
			m.Transport, m.Chat, m.Ref, m.Text, m.At.UnixMilli()).Scan(&id)
	})
	if err != nil {
		return 0, false, fmt.Errorf("admit a message: %w", err)
	}
	return id, false, nil
}

// TakeUp records that turn takes up the messages ids.
func (s *Intake) TakeUp(ctx context.Context, turn string, ids []int64) error {
	return s.mark(ctx, "record the turn taking up messages", `UPDATE admitted SET turn = ?, tries = tries + 1 WHERE id IN (SELECT value FROM json_each(?))`, turn, ids)
}

// Answered records that the messages ids have their answer; they are no
// longer the owner's to lose.
func (s *Intake) Answered(ctx context.Context, ids []int64, at time.Time) error {
	return s.mark(ctx, "record messages answered", `UPDATE admitted SET answered_at = ? WHERE id IN (SELECT value FROM json_each(?))`, at.UnixMilli(), ids)
}

// mark runs query, which sets first on the admitted messages
// whose ids are in the JSON array its second argument.
func (s *Intake) mark(ctx context.Context, what, query string, first any, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if err := s.writable(what); err != nil {
		return err
	}
	// The ids go as one JSON array, so that the query is one statement,
	// kept, whatever their number.
	list, err := json.Marshal(ids)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if _, err := s.db.ExecContext(ctx, query, first, string(list)); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// Unanswered lists the messages no turn has answered, oldest first: the
// ones a stopped core left, for the next to take up. A message whose
// reply is kept ([Replies.Keep]) is not among them: it has its answer, which
// goes again.
func (s *Intake) Unanswered(ctx context.Context) ([]Admitted, error) {
	rows, err := s.db.QueryContext(ctx,
		`SELECT id, transport, chat, ref, text, at, turn, tries FROM admitted WHERE answered_at IS NULL
		 AND id NOT IN (SELECT j.value FROM replies, json_each(replies.messages) AS j) ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read unanswered messages: %w", err)
	}
	defer rows.Close()
	var out []Admitted
	for rows.Next() {
		var m Admitted
		var at int64
		if err := rows.Scan(&m.ID, &m.Transport, &m.Chat, &m.Ref, &m.Text, &at, &m.Turn, &m.Tries); err != nil {
			return nil, fmt.Errorf("read unanswered messages: %w", err)
		}
		m.At = time.UnixMilli(at)
		out = append(out, m)
	}
	return out, rows.Err()
}

// PruneAnswered drops the answered messages older than before: past that,
// a transport delivering one again is not expected.
func (s *Intake) PruneAnswered(ctx context.Context, before time.Time) error {
	if err := s.writable("prune answered messages"); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM admitted WHERE answered_at IS NOT NULL AND answered_at < ?`, before.UnixMilli()); err != nil {
		return fmt.Errorf("prune answered messages: %w", err)
	}
	return nil
}
