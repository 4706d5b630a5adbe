package state

import (
	"context"
	"fmt"
	"strings"
	"time"

	"shelldon/contracts"
)

// AddLearning records a lesson the pet drew from a turn. text and tags must
// pass contracts.CaptureLearning validation.
func (s *Store) AddLearning(ctx context.Context, turn, text string, tags []string, at time.Time) error {
	if err := s.writable("add learning"); err != nil {
		return err
	}
	if err := (contracts.CaptureLearning{Text: text, Tags: tags}).Validate(); err != nil {
		return fmt.Errorf("add learning of turn %q: %w", turn, err)
	}
	// Tags are slugs, so a comma cannot occur inside one.
	_, err := s.db.ExecContext(ctx,
		`INSERT INTO learnings (turn, text, tags, at) VALUES (?, ?, ?, ?)`,
		turn, text, strings.Join(tags, ","), at.UnixMilli())
	if err != nil {
		return fmt.Errorf("add learning of turn %q: %w", turn, err)
	}
	return nil
}
