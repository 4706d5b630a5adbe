package state

import (
	"context"
	"fmt"
	"time"
)

// Tools are the health and use of the self-coded tools: their strikes,
// which retire a failing tool, and their calls, which order the offer.
type Tools struct{ *Store }

// Tools is the tool keeper's part of the store.
func (s *Store) Tools() *Tools { return &Tools{s} }

// ToolHealth is the strike count of a self-coded tool.
type ToolHealth struct {
	Name      string
	Strikes   int
	LastError string
	Updated   time.Time
}

// Strike counts one failure of a self-coded tool, in one statement, and
// returns the strikes it has now.
func (s *Tools) Strike(ctx context.Context, name, why string, now time.Time) (int, error) {
	if err := s.writable("strike tool"); err != nil {
		return 0, err
	}
	var strikes int
	err := s.db.retried(func() error {
		return s.db.QueryRowContext(ctx,
			`INSERT INTO tool_health (name, strikes, last_error, updated_at) VALUES (?, 1, ?, ?)
			 ON CONFLICT (name) DO UPDATE SET strikes = strikes + 1, last_error = excluded.last_error, updated_at = excluded.updated_at
			 RETURNING strikes`, name, clip(why, MaxErrorRunes), now.UnixMilli()).Scan(&strikes)
	})
	if err != nil {
		return 0, fmt.Errorf("strike tool %s: %w", name, err)
	}
	return strikes, nil
}

// ClearStrikes forgets a tool's strikes (it was restored, or replaced).
func (s *Tools) ClearStrikes(ctx context.Context, name string) error {
	if err := s.writable("clear strikes"); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM tool_health WHERE name = ?`, name); err != nil {
		return fmt.Errorf("clear strikes of %s: %w", name, err)
	}
	return nil
}

// Health returns every tool's strikes, by name.
func (s *Tools) Health(ctx context.Context) ([]ToolHealth, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, strikes, last_error, updated_at FROM tool_health ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("read tool health: %w", err)
	}
	defer rows.Close()
	var out []ToolHealth
	for rows.Next() {
		var h ToolHealth
		var updated int64
		if err := rows.Scan(&h.Name, &h.Strikes, &h.LastError, &updated); err != nil {
			return nil, fmt.Errorf("read tool health: %w", err)
		}
		h.Updated = time.UnixMilli(updated)
		out = append(out, h)
	}
	return out, rows.Err()
}

// ToolUse is how often and how lately a self-coded tool was called.
type ToolUse struct {
	Uses     int
	LastUsed time.Time
}

// maxToolUses bounds the tool_use table: the uses of the tools called
// most lately are kept, however many tools the pet wrote and threw away
// over its life.
const maxToolUses = 256

// Use counts one call of a self-coded tool, and forgets the uses
// of all but the maxToolUses tools called most lately.
func (s *Tools) Use(ctx context.Context, name string, now time.Time) error {
	if err := s.writable("count a tool's use"); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx,
		`INSERT INTO tool_use (name, uses, last_used) VALUES (?, 1, ?)
		 ON CONFLICT (name) DO UPDATE SET uses = uses + 1, last_used = excluded.last_used`,
		name, now.UnixMilli()); err != nil {
		return fmt.Errorf("count a use of tool %s: %w", name, err)
	}
	if _, err := s.db.ExecContext(ctx,
		`DELETE FROM tool_use WHERE name NOT IN (SELECT name FROM tool_use ORDER BY last_used DESC, name LIMIT ?)`,
		maxToolUses); err != nil {
		return fmt.Errorf("forget the uses of tools called long ago: %w", err)
	}
	return nil
}

// Uses returns the uses of the tools called, by name.
func (s *Tools) Uses(ctx context.Context) (map[string]ToolUse, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, uses, last_used FROM tool_use`)
	if err != nil {
		return nil, fmt.Errorf("read tool uses: %w", err)
	}
	defer rows.Close()
	out := map[string]ToolUse{}
	for rows.Next() {
		var name string
		var u ToolUse
		var last int64
		if err := rows.Scan(&name, &u.Uses, &last); err != nil {
			return nil, fmt.Errorf("read tool uses: %w", err)
		}
		u.LastUsed = time.UnixMilli(last)
		out[name] = u
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read tool uses: %w", err)
	}
	return out, nil
}
