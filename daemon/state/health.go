package state

import (
	"context"
	"fmt"
	"time"
)

// ToolHealth is the strike count of a self-coded tool.
type ToolHealth struct {
	Name      string
	Strikes   int
	LastError string
	Updated   time.Time
}

// Strike counts one failure of a self-coded tool, in one statement, and
// returns the strikes it has now.
func (s *Store) Strike(ctx context.Context, name, why string, now time.Time) (int, error) {
	if err := s.writable("strike tool"); err != nil {
		return 0, err
	}
	var strikes int
	err := s.db.QueryRowContext(ctx,
		`INSERT INTO tool_health (name, strikes, last_error, updated_at) VALUES (?, 1, ?, ?)
		 ON CONFLICT (name) DO UPDATE SET strikes = strikes + 1, last_error = excluded.last_error, updated_at = excluded.updated_at
		 RETURNING strikes`, name, clip(why, MaxErrorRunes), now.UnixMilli()).Scan(&strikes)
	if err != nil {
		return 0, fmt.Errorf("strike tool %s: %w", name, err)
	}
	return strikes, nil
}

// ClearStrikes forgets a tool's strikes (it was restored, or replaced).
func (s *Store) ClearStrikes(ctx context.Context, name string) error {
	if err := s.writable("clear strikes"); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM tool_health WHERE name = ?`, name); err != nil {
		return fmt.Errorf("clear strikes of %s: %w", name, err)
	}
	return nil
}

// ToolHealths returns every tool's strikes, by name.
func (s *Store) ToolHealths(ctx context.Context) ([]ToolHealth, error) {
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
