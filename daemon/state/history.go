package state

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"shelldon/contracts"
)

// History is the conversation with the owner, each message of it in
// order, which a turn is given the newest of.
type History struct{ *Store }

// History is the conversation's part of the store.
func (s *Store) History() *History { return &History{s} }

// Append adds one message of the conversation with the owner.
// role is contracts.ChatUser or contracts.ChatAssistant.
func (s *History) Append(ctx context.Context, turn, role, text string, at time.Time) error {
	if err := s.writable("append history"); err != nil {
		return err
	}
	if role != contracts.ChatUser && role != contracts.ChatAssistant {
		return fmt.Errorf("append history of turn %q: role %q is neither %q nor %q", turn, role, contracts.ChatUser, contracts.ChatAssistant)
	}
	_, err := s.db.ExecContext(ctx,
		`INSERT INTO history (turn, role, text, at) VALUES (?, ?, ?, ?)`,
		turn, role, capEntry(text), at.UnixMilli())
	if err != nil {
		return fmt.Errorf("append history of turn %q: %w", turn, err)
	}
	return nil
}

// MaxHistoryEntryBytes caps one message of the history as it is kept: an
// oversized message or answer has its turn, but it does not follow every
// later turn into its prompt.
const MaxHistoryEntryBytes = 16 << 10

// MaxHistoryBytes caps the history a turn is given, newest first: however
// the messages are sized, the turn's input stays far below the bus's
// frame limit.
const MaxHistoryBytes = 96 << 10

// capEntry cuts text to MaxHistoryEntryBytes at a character boundary,
// saying so.
func capEntry(text string) string {
	if len(text) <= MaxHistoryEntryBytes {
		return text
	}
	cut := MaxHistoryEntryBytes
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + fmt.Sprintf("\n[… cut: the message was %d KiB; only its first %d KiB are kept in the history]", len(text)>>10, MaxHistoryEntryBytes>>10)
}

// Recent returns the last n messages of the conversation, oldest
// first, as many of the newest as fit in MaxHistoryBytes.
func (s *History) Recent(ctx context.Context, n int) ([]contracts.HistoryEntry, error) {
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
	size := 0
	for i := len(entries) - 1; i >= 0; i-- {
		size += len(entries[i].Text)
		if size > MaxHistoryBytes {
			return entries[i+1:], nil
		}
	}
	return entries, nil
}
