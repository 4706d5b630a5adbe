package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// OutcomeInterrupted is the outcome of a turn that was still running when
// core stopped; Open gives it to every such turn.
const OutcomeInterrupted = "interrupted"

// Caps on what a turn row keeps.
const (
	MaxPreviewRunes = 80
	MaxErrorRunes   = 1000
)

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
	// PromptTokens and CompletionTokens are what the turn's model calls
	// cost, summed as the providers counted them; 0 where none said.
	PromptTokens, CompletionTokens int
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
	// The tokens of the turn's model calls.
	PromptTokens, CompletionTokens int
}

// StartTurn records that a turn began.
func (s *Store) StartTurn(ctx context.Context, t TurnStart) error {
	if err := s.writable("start turn"); err != nil {
		return err
	}
	if t.ID == "" || t.Kind == "" {
		return fmt.Errorf("start turn %q: id and kind are required (kind %q)", t.ID, t.Kind)
	}
	preview := clip(strings.Join(strings.Fields(t.Preview), " "), MaxPreviewRunes)
	_, err := s.db.ExecContext(ctx,
		`INSERT INTO turns (id, kind, started_at, prompt_preview, worker_pid) VALUES (?, ?, ?, ?, ?)`,
		t.ID, t.Kind, t.Started.UnixMilli(), preview, t.WorkerPID)
	if err != nil {
		return fmt.Errorf("start turn %q: %w", t.ID, err)
	}
	return nil
}

// SetTurnWorker records the process id of the turn's worker, known only
// once systemd has started it.
func (s *Store) SetTurnWorker(ctx context.Context, id string, pid int) error {
	if err := s.writable("set turn worker"); err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, `UPDATE turns SET worker_pid = ? WHERE id = ?`, pid, id)
	if err != nil {
		return fmt.Errorf("set worker of turn %q: %w", id, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("set worker of turn %q: %w", id, ErrNoTurn)
	}
	return nil
}

// FinishTurn records how a turn ended. Finishing a turn that already
// finished changes nothing and is not an error, because a timeout and a
// late result may both try.
func (s *Store) FinishTurn(ctx context.Context, t TurnEnd) error {
	if err := s.writable("finish turn"); err != nil {
		return err
	}
	if t.Outcome == "" {
		return fmt.Errorf("finish turn %q: no outcome", t.ID)
	}
	ended := t.Ended.UnixMilli()
	res, err := s.db.ExecContext(ctx,
		`UPDATE turns SET ended_at = ?, outcome = ?, error = ?, model_ms = ?, total_ms = MAX(0, ? - started_at), worker_peak_kb = ?,
		 worker_cpu_ms = ?, worker_exit = ?, worker_join_ms = ?, prompt_tokens = ?, completion_tokens = ?
		 WHERE id = ? AND ended_at IS NULL`,
		ended, t.Outcome, clip(t.Error, MaxErrorRunes), t.ModelTime.Milliseconds(), ended, t.WorkerPeak>>10,
		t.WorkerCPU.Milliseconds(), t.WorkerExit, t.WorkerJoin.Milliseconds(), t.PromptTokens, t.CompletionTokens, t.ID)
	if err != nil {
		return fmt.Errorf("finish turn %q: %w", t.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("finish turn %q: %w", t.ID, err)
	}
	if n > 0 {
		return nil
	}
	var exists bool
	err = s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM turns WHERE id = ?)`, t.ID).Scan(&exists)
	switch {
	case err != nil:
		return fmt.Errorf("finish turn %q: %w", t.ID, err)
	case !exists:
		return fmt.Errorf("finish turn %q: %w", t.ID, ErrNoTurn)
	}
	return nil
}

// TurnsSince counts the turns started at or after t.
func (s *Store) TurnsSince(ctx context.Context, t time.Time) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM turns WHERE started_at >= ?`, t.UnixMilli()).Scan(&n); err != nil {
		return 0, fmt.Errorf("count turns since %v: %w", t, err)
	}
	return n, nil
}

// RecentTurns returns the n most recently started turns, newest first.
func (s *Store) RecentTurns(ctx context.Context, n int) ([]TurnRecord, error) {
	if n <= 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx,
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
	return turns, nil
}

// finishInterrupted ends every turn still marked running, which at Open can
// only be one a crash left behind, and returns how many there were.
func finishInterrupted(ctx context.Context, db *sql.DB, now time.Time) (int, error) {
	at := now.UnixMilli()
	res, err := db.ExecContext(ctx,
		`UPDATE turns SET ended_at = ?, outcome = ?, error = 'core stopped before the turn finished', total_ms = MAX(0, ? - started_at)
		 WHERE ended_at IS NULL`,
		at, OutcomeInterrupted, at)
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
