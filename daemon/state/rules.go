package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Rules are the approval authority's standing rules: the shapes of call
// the owner let run without asking, until each expires.
type Rules struct{ store *Store }

// Rules is the approval authority's part of the store for the rules the
// owner granted.
func (s *Store) Rules() *Rules { return &Rules{s} }

// MaxRules bounds the rules the owner may hold at once: each is a
// standing permission, and a list longer than this is one nobody reads.
const MaxRules = 32

var (
	// ErrNoRule is wrapped when no rule has the id asked for.
	ErrNoRule = errors.New("no such rule")
	// ErrTooManyRules is wrapped by [Rules.Grant] when MaxRules are held.
	ErrTooManyRules = errors.New("too many rules")
)

// Rule is one rule the owner granted: a shape of call (Tool, Pattern,
// as package policy states it) that runs without asking, said in Words,
// until Expires.
type Rule struct {
	ID      int64
	Tool    string
	Pattern string
	Words   string
	Granted time.Time
	Expires time.Time
	// Uses counts the calls it let through.
	Uses int
}

const ruleColumns = `id, tool, pattern, words, granted_at, expires_at, uses`

// Grant keeps r and returns it with its id. Granting a shape that is
// already a rule renews that rule (its words and times) and keeps its id
// and count; a new one past MaxRules is refused.
func (s *Rules) Grant(ctx context.Context, r Rule) (Rule, error) {
	if err := s.store.writable("grant a rule"); err != nil {
		return Rule{}, err
	}
	if r.Tool == "" || r.Pattern == "" || !r.Expires.After(r.Granted) {
		return Rule{}, fmt.Errorf("grant a rule: %q of %s needs a tool, a pattern and an expiry after its grant", r.Words, r.Tool)
	}
	var kept Rule
	err := s.store.inTx(ctx, func(tx *keptTx) error {
		var held int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM rules WHERE NOT (tool = ? AND pattern = ?)`, r.Tool, r.Pattern).Scan(&held); err != nil {
			return err
		}
		if held >= MaxRules {
			return fmt.Errorf("%w: %d are held, the most there may be; revoke one with /rules revoke N first", ErrTooManyRules, held)
		}
		row := tx.QueryRowContext(ctx, `INSERT INTO rules (tool, pattern, words, granted_at, expires_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (tool, pattern) DO UPDATE SET words = excluded.words, granted_at = excluded.granted_at, expires_at = excluded.expires_at
			RETURNING `+ruleColumns, r.Tool, r.Pattern, r.Words, r.Granted.UnixMilli(), r.Expires.UnixMilli())
		var err error
		kept, err = scanRule(row)
		return err
	})
	if err != nil {
		return Rule{}, fmt.Errorf("grant a rule: %w", err)
	}
	return kept, nil
}

// All lists the rules held, oldest first, expired ones included until
// Expire drops them.
func (s *Rules) All(ctx context.Context) ([]Rule, error) {
	rows, err := s.store.db.QueryContext(ctx, `SELECT `+ruleColumns+` FROM rules ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list rules: %w", err)
	}
	return scanRules(rows)
}

// Use counts one call the rule id let through.
func (s *Rules) Use(ctx context.Context, id int64) error {
	if err := s.store.writable("count a rule's use"); err != nil {
		return err
	}
	res, err := s.store.db.ExecContext(ctx, `UPDATE rules SET uses = uses + 1 WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("count a use of rule %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("count a use of rule %d: %w", id, ErrNoRule)
	}
	return nil
}

// Revoke drops the rule id and returns it.
func (s *Rules) Revoke(ctx context.Context, id int64) (Rule, error) {
	if err := s.store.writable("revoke a rule"); err != nil {
		return Rule{}, err
	}
	var r Rule
	err := s.store.db.retried(func() (err error) {
		r, err = scanRule(s.store.db.QueryRowContext(ctx, `DELETE FROM rules WHERE id = ? RETURNING `+ruleColumns, id))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return Rule{}, fmt.Errorf("revoke rule %d: %w", id, ErrNoRule)
	}
	if err != nil {
		return Rule{}, fmt.Errorf("revoke rule %d: %w", id, err)
	}
	return r, nil
}

// Expire drops every rule whose time has come at now and returns
// them.
func (s *Rules) Expire(ctx context.Context, now time.Time) ([]Rule, error) {
	if err := s.store.writable("expire rules"); err != nil {
		return nil, err
	}
	rows, err := s.store.db.QueryContext(ctx, `DELETE FROM rules WHERE expires_at <= ? RETURNING `+ruleColumns, now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("expire rules: %w", err)
	}
	return scanRules(rows)
}

// NextExpiry is when the first rule expires; ok is false when there is
// none.
func (s *Rules) NextExpiry(ctx context.Context) (at time.Time, ok bool, err error) {
	return s.store.earliestExpiry(ctx, "rules")
}

func scanRules(rows *sql.Rows) ([]Rule, error) {
	defer rows.Close()
	var out []Rule
	for rows.Next() {
		r, err := scanRule(rows)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func scanRule(row interface{ Scan(...any) error }) (Rule, error) {
	var r Rule
	var granted, expires int64
	if err := row.Scan(&r.ID, &r.Tool, &r.Pattern, &r.Words, &granted, &expires, &r.Uses); err != nil {
		return Rule{}, err
	}
	r.Granted, r.Expires = time.UnixMilli(granted), time.UnixMilli(expires)
	return r, nil
}
