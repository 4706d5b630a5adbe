package state

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Notices are what the store owes the owner: what it found wrong with
// itself (a damaged database, a rollback, the disk full), kept until a
// transport took it.
type Notices struct{ *Store }

// Notices is the part of the store that core tells the owner from.
func (s *Store) Notices() *Notices { return &Notices{s} }

// Notice is something the store found that core must tell the owner
// (Open, a damaged database or a rollback; a write, the disk full): kept
// in the database until a transport took it ([Notices.Told]), so that a
// core stopped before it could tell leaves it to the next.
type Notice struct {
	// ID is the notice's row; negative for one that could not be kept
	// (a full disk), which lives only as long as this store.
	ID       int64     `json:"-"`
	Damage   *Damage   `json:"damage,omitempty"`
	Rollback *Rollback `json:"rollback,omitempty"`
	DiskFull *DiskFull `json:"disk_full,omitempty"`
}

// owe keeps n for the owner; one that cannot be kept is held in memory,
// so this core still tells it.
func (s *Notices) owe(ctx context.Context, n Notice, now time.Time) {
	body, err := json.Marshal(n)
	if err == nil {
		_, err = s.db.ExecContext(ctx, `INSERT INTO notices (body, at) VALUES (?, ?)`, string(body), now.UnixMilli())
	}
	if err != nil {
		s.unkeptMu.Lock()
		defer s.unkeptMu.Unlock()
		n.ID = -int64(len(s.unkept) + 1)
		s.unkept = append(s.unkept, n)
	}
	select {
	case s.owing <- struct{}{}:
	default: // core is woken already
	}
}

// Owing wakes core when the store owes the owner a notice it found while
// core runs (the disk full); what Open found waits for a transport to
// join.
func (s *Notices) Owing() <-chan struct{} { return s.owing }

// Owed returns the notices not yet told, oldest first.
func (s *Notices) Owed(ctx context.Context) ([]Notice, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, body FROM notices ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read the notices owed: %w", err)
	}
	defer rows.Close()
	var out []Notice
	for rows.Next() {
		var n Notice
		var body string
		if err := rows.Scan(&n.ID, &body); err != nil {
			return nil, fmt.Errorf("read the notices owed: %w", err)
		}
		if err := json.Unmarshal([]byte(body), &n); err != nil {
			return nil, fmt.Errorf("read notice %d: %w", n.ID, err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the notices owed: %w", err)
	}
	s.unkeptMu.Lock()
	defer s.unkeptMu.Unlock()
	return append(out, s.unkept...), nil
}

// Told forgets notice n, which a transport took, and checkpoints: a
// forgetting that lived only in SQLite's log would come back with the
// notice should that log be lost (a rollback after a kill), and the
// owner be told twice.
func (s *Notices) Told(ctx context.Context, n Notice) error {
	if err := s.writable("forget a notice"); err != nil {
		return err
	}
	if n.ID < 0 {
		s.unkeptMu.Lock()
		defer s.unkeptMu.Unlock()
		s.unkept = slices.DeleteFunc(s.unkept, func(u Notice) bool { return u.ID == n.ID })
		return nil
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM notices WHERE id = ?`, n.ID); err != nil {
		return fmt.Errorf("forget notice %d: %w", n.ID, err)
	}
	if err := s.checkpoint(ctx); err != nil {
		return fmt.Errorf("forget notice %d: %w", n.ID, err)
	}
	return nil
}
