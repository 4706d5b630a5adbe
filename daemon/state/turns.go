package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"shelldon/contracts"
)

// Turns are the records of the turns: when each ran, how it ended, its
// worker and the tokens it spent, which /status, `shelldon turns`, the
// daily token cap and the schedules' budget read.
type Turns struct{ store *Store }

// Turns is the turn driver's part of the store.
func (s *Store) Turns() *Turns { return &Turns{s} }

// OutcomeInterrupted is the outcome of a turn that was still running when
// core stopped; Open gives it to every such turn.
const OutcomeInterrupted = "interrupted"

// Caps on what a turn row keeps.
const (
	MaxPreviewRunes = 80
	MaxErrorRunes   = 1000
	// MaxTurnProviders is how many providers' usage a turn keeps (the
	// row's totals count them all), and MaxProviderRunes how much of a
	// provider's name.
	MaxTurnProviders = 16
	MaxProviderRunes = 64
)

// UnknownProvider is the provider a turn's tokens are kept under when
// nobody said which answered: a turn from before providers were recorded.
const UnknownProvider = "(unknown)"

// ErrNoTurn is wrapped when a turn id names no recorded turn.
var ErrNoTurn = errors.New("no such turn")

// TurnStart is a turn as it begins.
type TurnStart struct {
	ID   string
	Kind string // what started it: a chat message, a resumed approval, ...
	// Started is when core admitted the turn.
	Started time.Time
	// Preview is the start of the owner's message; it is kept to
	// MaxPreviewRunes on one line.
	Preview   string
	WorkerPID int
}

// TurnEnd is how a turn finished.
type TurnEnd struct {
	ID      string
	Ended   time.Time
	Outcome string
	// Error says why the turn failed, or which bound cut it short, if
	// one did; kept to MaxErrorRunes.
	Error string
	// ModelTime is how long the worker waited on the broker.
	ModelTime time.Duration
	// WorkerPeak is the worker's memory high-water mark in bytes: the
	// larger of what it reported and what its launcher measured; 0 when
	// neither knows.
	WorkerPeak int64
	// WorkerCPU is the CPU time the worker used, as its launcher measured.
	WorkerCPU time.Duration
	// WorkerExit is how the worker ended in the launcher's words
	// (success, exit-code, signal, timeout, oom-kill); empty when it is
	// not known.
	WorkerExit string
	// WorkerJoin is how long the worker took from launch to joining the
	// bus: a process's start, or a unit's start job and then the process's.
	WorkerJoin time.Duration
	// Usage is what the turn's model calls cost per provider that
	// answered them, as the providers counted; the row keeps its total
	// too. Negative counts are kept as 0.
	Usage contracts.UsageByProvider
}

// TurnRecord is a recorded turn.
type TurnRecord struct {
	ID      string
	Kind    string
	Started time.Time
	// Ended is zero while the turn runs.
	Ended     time.Time
	Outcome   string
	Error     string
	Preview   string
	ModelTime time.Duration
	// Total is from Started to Ended; zero while the turn runs.
	Total      time.Duration
	WorkerPID  int
	WorkerPeak int64 // bytes
	WorkerCPU  time.Duration
	WorkerExit string
	WorkerJoin time.Duration
	// The tokens of the turn's model calls, and the same per provider
	// that answered them, in the order they first answered (a turn from
	// before providers were recorded has one, UnknownProvider).
	PromptTokens, CompletionTokens int
	Usage                          contracts.UsageByProvider
}

// Start records that a turn began.
func (s *Turns) Start(ctx context.Context, t TurnStart) error {
	if err := s.store.writable("start turn"); err != nil {
		return err
	}
	if t.ID == "" || t.Kind == "" {
		return fmt.Errorf("start turn %q: id and kind are required (kind %q)", t.ID, t.Kind)
	}
	preview := clip(strings.Join(strings.Fields(t.Preview), " "), MaxPreviewRunes)
	_, err := s.store.db.ExecContext(ctx,
		`INSERT INTO turns (id, kind, started_at, prompt_preview, worker_pid) VALUES (?, ?, ?, ?, ?)`,
		t.ID, t.Kind, t.Started.UnixMilli(), preview, t.WorkerPID)
	s.store.counted.forget() // also after an error: the row may be in
	if err != nil {
		return fmt.Errorf("start turn %q: %w", t.ID, err)
	}
	return nil
}

// SetWorker records the process id of the turn's worker, known only
// once systemd has started it.
func (s *Turns) SetWorker(ctx context.Context, id string, pid int) error {
	if err := s.store.writable("set turn worker"); err != nil {
		return err
	}
	res, err := s.store.db.ExecContext(ctx, `UPDATE turns SET worker_pid = ? WHERE id = ?`, pid, id)
	if err != nil {
		return fmt.Errorf("set worker of turn %q: %w", id, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("set worker of turn %q: %w", id, ErrNoTurn)
	}
	return nil
}

// Finish records how a turn ended, with its usage per provider.
// Finishing a turn that already finished changes nothing and is not an
// error, because a timeout and a late result may both try.
func (s *Turns) Finish(ctx context.Context, t TurnEnd) error {
	if err := s.store.writable("finish turn"); err != nil {
		return err
	}
	if t.Outcome == "" {
		return fmt.Errorf("finish turn %q: no outcome", t.ID)
	}
	usage := keptUsage(t.Usage)
	total := usage.Total()
	ended := t.Ended.UnixMilli()
	err := s.store.inTx(ctx, func(tx *keptTx) error {
		res, err := tx.ExecContext(ctx,
			`UPDATE turns SET ended_at = ?, outcome = ?, error = ?, model_ms = ?, total_ms = MAX(0, ? - started_at), worker_peak_kb = ?,
			 worker_cpu_ms = ?, worker_exit = ?, worker_join_ms = ?, prompt_tokens = ?, completion_tokens = ?
			 WHERE id = ? AND ended_at IS NULL`,
			ended, t.Outcome, clip(t.Error, MaxErrorRunes), t.ModelTime.Milliseconds(), ended, t.WorkerPeak>>10,
			t.WorkerCPU.Milliseconds(), t.WorkerExit, t.WorkerJoin.Milliseconds(), total.PromptTokens, total.CompletionTokens, t.ID)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			var exists bool
			if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM turns WHERE id = ?)`, t.ID).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				return ErrNoTurn
			}
			return nil
		}
		for i, p := range usage[:min(len(usage), MaxTurnProviders)] {
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO turn_usage (turn, seq, provider, started_at, prompt_tokens, completion_tokens)
				 SELECT id, ?, ?, started_at, ?, ? FROM turns WHERE id = ?`,
				i, p.Provider, p.Usage.PromptTokens, p.Usage.CompletionTokens, t.ID); err != nil {
				return fmt.Errorf("keep its usage: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("finish turn %q: %w", t.ID, err)
	}
	return nil
}

// keptUsage is usage as a turn keeps it: no negative count, every
// provider named.
func keptUsage(usage contracts.UsageByProvider) contracts.UsageByProvider {
	var kept contracts.UsageByProvider
	for _, p := range usage {
		name := clip(p.Provider, MaxProviderRunes)
		if name == "" {
			name = UnknownProvider
		}
		kept = kept.Add(name, contracts.Usage{PromptTokens: max(0, p.Usage.PromptTokens), CompletionTokens: max(0, p.Usage.CompletionTokens)})
	}
	return kept
}

// usageSinceQuery sums the tokens per provider of the turns started at or
// after its one argument, reading only the covering index
// turn_usage_by_start.
const usageSinceQuery = `SELECT provider, SUM(prompt_tokens), SUM(completion_tokens) FROM turn_usage WHERE started_at >= ?
	GROUP BY provider ORDER BY provider`

// UsageSince sums the tokens of the turns started at or after t, per
// provider, in the order of the providers' names (a turn from before
// providers were recorded counts under UnknownProvider).
func (s *Turns) UsageSince(ctx context.Context, t time.Time) (contracts.UsageByProvider, error) {
	rows, err := s.store.db.QueryContext(ctx, usageSinceQuery, t.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("sum the tokens since %v: %w", t, err)
	}
	defer rows.Close()
	var sums contracts.UsageByProvider
	for rows.Next() {
		var p contracts.ProviderUsage
		if err := rows.Scan(&p.Provider, &p.Usage.PromptTokens, &p.Usage.CompletionTokens); err != nil {
			return nil, fmt.Errorf("sum the tokens since %v: %w", t, err)
		}
		sums = append(sums, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sum the tokens since %v: %w", t, err)
	}
	return sums, nil
}

// CountSince counts the turns started at or after t. The panel's strip
// asks it at every refresh, also idle, with the same t all day: a
// writable store answers again from its last count until a turn starts
// (only [Turns.Start] adds turns, and only the writer starts them), so
// an idle minute runs no SQL.
func (s *Turns) CountSince(ctx context.Context, t time.Time) (int, error) {
	c := &s.store.counted
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ok && c.since.Equal(t) && !s.store.readOnly {
		return c.n, nil
	}
	var n int
	if err := s.store.db.QueryRowContext(ctx, `SELECT count(*) FROM turns WHERE started_at >= ?`, t.UnixMilli()).Scan(&n); err != nil {
		return 0, fmt.Errorf("count turns since %v: %w", t, err)
	}
	c.since, c.n, c.ok = t, n, true
	return n, nil
}

// turnCount is a count of turns started since a time.
type turnCount struct {
	mu    sync.Mutex
	since time.Time
	n     int
	ok    bool // false: count again
}

// forget makes the next count ask the database.
func (c *turnCount) forget() {
	c.mu.Lock()
	c.ok = false
	c.mu.Unlock()
}

// OfKindSince counts the turns of kind started at or after t, and
// gives the latest start of a turn of that kind ever, zero if none: what
// a schedule.Budget weighs.
func (s *Turns) OfKindSince(ctx context.Context, kind string, t time.Time) (count int, last time.Time, err error) {
	var latest sql.NullInt64
	err = s.store.db.QueryRowContext(ctx,
		`SELECT (SELECT count(*) FROM turns WHERE kind = ? AND started_at >= ?), (SELECT max(started_at) FROM turns WHERE kind = ?)`,
		kind, t.UnixMilli(), kind).Scan(&count, &latest)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("count %s turns since %s: %w", kind, t.Format(time.RFC3339), err)
	}
	if latest.Valid {
		last = time.UnixMilli(latest.Int64)
	}
	return count, last, nil
}

// Recent returns the n most recently started turns, newest first.
func (s *Turns) Recent(ctx context.Context, n int) ([]TurnRecord, error) {
	if n <= 0 {
		return nil, nil
	}
	rows, err := s.store.db.QueryContext(ctx,
		`SELECT id, kind, started_at, ended_at, outcome, error, prompt_preview, model_ms, total_ms, worker_pid, worker_peak_kb,
		 worker_cpu_ms, worker_exit, worker_join_ms, prompt_tokens, completion_tokens
		 FROM turns ORDER BY started_at DESC, rowid DESC LIMIT ?`, n)
	if err != nil {
		return nil, fmt.Errorf("read recent turns: %w", err)
	}
	defer rows.Close()
	var turns []TurnRecord
	for rows.Next() {
		var (
			t                                                TurnRecord
			started, modelMS, totalMS, peakKB, cpuMS, joinMS int64
			ended                                            sql.NullInt64
			outcome                                          sql.NullString
		)
		if err := rows.Scan(&t.ID, &t.Kind, &started, &ended, &outcome, &t.Error, &t.Preview, &modelMS, &totalMS, &t.WorkerPID, &peakKB, &cpuMS, &t.WorkerExit, &joinMS,
			&t.PromptTokens, &t.CompletionTokens); err != nil {
			return nil, fmt.Errorf("read recent turns: %w", err)
		}
		t.Started = time.UnixMilli(started)
		if ended.Valid {
			t.Ended = time.UnixMilli(ended.Int64)
			t.Total = time.Duration(totalMS) * time.Millisecond
		}
		t.Outcome = outcome.String
		t.ModelTime = time.Duration(modelMS) * time.Millisecond
		t.WorkerPeak = peakKB << 10
		t.WorkerCPU = time.Duration(cpuMS) * time.Millisecond
		t.WorkerJoin = time.Duration(joinMS) * time.Millisecond
		turns = append(turns, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read recent turns: %w", err)
	}
	if err := s.readUsage(ctx, turns); err != nil {
		return nil, fmt.Errorf("read recent turns: %w", err)
	}
	return turns, nil
}

// readUsage fills in each turn's usage per provider.
func (s *Turns) readUsage(ctx context.Context, turns []TurnRecord) error {
	if len(turns) == 0 {
		return nil
	}
	at := map[string]int{}
	for i, t := range turns {
		at[t.ID] = i
	}
	// The turns listed are the newest, so every row of theirs started no
	// earlier than the oldest of them: the index on the start finds them.
	rows, err := s.store.db.QueryContext(ctx,
		`SELECT turn, provider, prompt_tokens, completion_tokens FROM turn_usage WHERE started_at >= ? ORDER BY turn, seq`,
		turns[len(turns)-1].Started.UnixMilli())
	if err != nil {
		return fmt.Errorf("read their usage: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			turn string
			p    contracts.ProviderUsage
		)
		if err := rows.Scan(&turn, &p.Provider, &p.Usage.PromptTokens, &p.Usage.CompletionTokens); err != nil {
			return fmt.Errorf("read their usage: %w", err)
		}
		if i, ok := at[turn]; ok {
			turns[i].Usage = append(turns[i].Usage, p)
		}
	}
	return rows.Err()
}

// finishInterruptedQuery ends the turns still marked running, at its first
// and third argument with the outcome of its second. It runs at every
// start, so it finds them through the partial index turns_running rather
// than a scan of every turn the pet ever had.
const finishInterruptedQuery = `UPDATE turns SET ended_at = ?, outcome = ?, error = 'core stopped before the turn finished', total_ms = MAX(0, ? - started_at)
	WHERE ended_at IS NULL`

// finishInterrupted ends every turn still marked running, which at Open can
// only be one a crash left behind, and returns how many there were.
func finishInterrupted(ctx context.Context, db *sql.DB, now time.Time) (int, error) {
	at := now.UnixMilli()
	res, err := db.ExecContext(ctx, finishInterruptedQuery, at, OutcomeInterrupted, at)
	if err != nil {
		return 0, fmt.Errorf("finish interrupted turns: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("finish interrupted turns: %w", err)
	}
	return int(n), nil
}

// clip keeps at most limit characters of s, made valid UTF-8.
func clip(s string, limit int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	return string([]rune(s)[:limit])
}
