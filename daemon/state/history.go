package state

import (
	"context"
	"fmt"
	"time"

	"shelldon/contracts"
)

// AppendHistory adds one message of the conversation with the owner.
// role is contracts.ChatUser or contracts.ChatAssistant.
func (s *Store) AppendHistory(ctx context.Context, turn, role, text string, at time.Time) error {
	if err := s.writable("append history"); err != nil {
		return err
	}
	if role != contracts.ChatUser && role != contracts.ChatAssistant {
		return fmt.Errorf("append history of turn %q: role %q is neither %q nor %q", turn, role, contracts.ChatUser, contracts.ChatAssistant)
	}
	_, err := s.db.ExecContext(ctx,
		`INSERT INTO history (turn, role, text, at) VALUES (?, ?, ?, ?)`,
		turn, role, text, at.UnixMilli())
	if err != nil {
		return fmt.Errorf("append history of turn %q: %w", turn, err)
	}
	return nil
}

// RecentHistory returns the last n messages of the conversation, oldest first.
func (s *Store) RecentHistory(ctx context.Context, n int) ([]contracts.HistoryEntry, error) {
	if n <= 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx,
		`SELECT role, text, at FROM (SELECT id, role, text, at FROM history ORDER BY id DESC LIMIT ?) ORDER BY id`, n)
	if err != nil {
		return nil, fmt.Errorf("read recent history: %w", err)
	}
	defer rows.Close()
	var entries []contracts.HistoryEntry
	for rows.Next() {
		var (
			e  contracts.HistoryEntry
			at int64
		)
		if err := rows.Scan(&e.Role, &e.Text, &at); err != nil {
			return nil, fmt.Errorf("read recent history: %w", err)
		}
		e.At = time.UnixMilli(at)
		entries = append(entries, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read recent history: %w", err)
	}
	return entries, nil
}
