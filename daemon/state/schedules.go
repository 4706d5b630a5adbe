package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"shelldon/contracts"
)

// Schedules are the scheduler's data: the turns the pet is to start
// itself, once or again and again.
type Schedules struct{ *Store }

// Schedules is the scheduler's part of the store.
func (s *Store) Schedules() *Schedules { return &Schedules{s} }

// MaxSchedules caps the live schedules: each may start turns, and a model
// that proposes one per reply must not pile them up.
const MaxSchedules = 50

var (
	// ErrTooManySchedules is wrapped by [Schedules.Add] when MaxSchedules are
	// already live.
	ErrTooManySchedules = errors.New("too many schedules")
	// ErrNoSchedule is wrapped when an id names no live schedule: it never
	// existed, was cancelled, or was a one-off that has run.
	ErrNoSchedule = errors.New("no such schedule")
)

// Scheduled is a turn the pet is to start itself, once or again and again.
type Scheduled struct {
	// ID is what /schedule shows and a cancel_schedule op names; ids only
	// grow.
	ID int64
	// Text is what the pet is to do then, as if the owner had written it.
	Text string
	// Next is when it is due, to the millisecond.
	Next time.Time
	// Every is the repetition, "" for once: opaque to the store, which
	// keeps it as given (at most MaxEvery bytes); package schedule writes
	// and reads it (Every.String, ParseEvery).
	Every string
	// Transport and Chat say where the turn answers.
	Transport, Chat string
	Created         time.Time
	// LastRun is when it last ran; zero until it has.
	LastRun time.Time
	// Outside is the mark of the turn that set it, when that turn had read
	// text from outside: where the text came from (policy.MarkJoined and the rest of policy/mark.go).
	// Every turn the schedule starts carries it.
	Outside string
}

// MaxEvery bounds a schedule's repetition as stored; the longest
// schedule.Every writes is an interval's ("720h0m0s").
const MaxEvery = 32

const scheduleColumns = `id, text, next_at, every, transport, chat, created_at, last_run_at, outside`

// Add stores a schedule and returns its id; sc.ID is ignored. The
// text must be non-blank valid UTF-8 of at most contracts.MaxScheduleText
// bytes, Next must be set, and Every at most MaxEvery bytes. With
// MaxSchedules already live the schedule is refused with
// ErrTooManySchedules.
func (s *Schedules) Add(ctx context.Context, sc Scheduled) (int64, error) {
	if err := s.writable("add schedule"); err != nil {
		return 0, err
	}
	switch {
	case strings.TrimSpace(sc.Text) == "":
		return 0, errors.New("add schedule: no text")
	case len(sc.Text) > contracts.MaxScheduleText:
		return 0, fmt.Errorf("add schedule: text is %d bytes, over the cap of %d", len(sc.Text), contracts.MaxScheduleText)
	case !utf8.ValidString(sc.Text):
		return 0, errors.New("add schedule: text is not valid UTF-8")
	case sc.Next.IsZero():
		return 0, errors.New("add schedule: no time given")
	}
	if len(sc.Every) > MaxEvery || !utf8.ValidString(sc.Every) {
		return 0, fmt.Errorf("add schedule: a repetition of %d bytes, over the cap of %d or not UTF-8", len(sc.Every), MaxEvery)
	}
	var id int64
	err := s.inTx(ctx, func(tx *keptTx) error {
		var live int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schedules`).Scan(&live); err != nil {
			return fmt.Errorf("count schedules: %w", err)
		}
		if live >= MaxSchedules {
			return fmt.Errorf("%w: %d are live, at most %d; /schedule lists them, and cancel_schedule frees one", ErrTooManySchedules, live, MaxSchedules)
		}
		return tx.QueryRowContext(ctx,
			`INSERT INTO schedules (text, next_at, every, transport, chat, created_at, outside) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			sc.Text, sc.Next.UnixMilli(), sc.Every, sc.Transport, sc.Chat, sc.Created.UnixMilli(), sc.Outside).Scan(&id)
	})
	if err != nil {
		return 0, fmt.Errorf("add schedule: %w", err)
	}
	return id, nil
}

// All returns every live schedule, the soonest due first.
func (s *Schedules) All(ctx context.Context) ([]Scheduled, error) {
	schedules, err := s.query(ctx, `SELECT `+scheduleColumns+` FROM schedules ORDER BY next_at, id`)
	if err != nil {
		return nil, fmt.Errorf("read schedules: %w", err)
	}
	return schedules, nil
}

// Due returns the schedules due at now (Next at or before it),
// the longest due first.
func (s *Schedules) Due(ctx context.Context, now time.Time) ([]Scheduled, error) {
	schedules, err := s.query(ctx, `SELECT `+scheduleColumns+` FROM schedules WHERE next_at <= ? ORDER BY next_at, id`, now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("read schedules due at %s: %w", now.Format(time.RFC3339), err)
	}
	return schedules, nil
}

// Reschedule records a run of schedule id: Next becomes next, and LastRun
// becomes ran unless ran is zero (an occurrence skipped, not run). A zero
// next deletes the schedule, as a one-off that has run. A schedule
// cancelled meanwhile gets ErrNoSchedule.
func (s *Schedules) Reschedule(ctx context.Context, id int64, next, ran time.Time) error {
	if err := s.writable("reschedule"); err != nil {
		return err
	}
	var (
		res sql.Result
		err error
	)
	if next.IsZero() {
		res, err = s.db.ExecContext(ctx, `DELETE FROM schedules WHERE id = ?`, id)
	} else {
		var lastRun any
		if !ran.IsZero() {
			lastRun = ran.UnixMilli()
		}
		res, err = s.db.ExecContext(ctx, `UPDATE schedules SET next_at = ?, last_run_at = coalesce(?, last_run_at) WHERE id = ?`,
			next.UnixMilli(), lastRun, id)
	}
	if err != nil {
		return fmt.Errorf("reschedule %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("reschedule %d: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("reschedule %d: %w", id, ErrNoSchedule)
	}
	return nil
}

// Cancel deletes schedule id and returns it as it was; an id that
// names no live schedule gets ErrNoSchedule.
func (s *Schedules) Cancel(ctx context.Context, id int64) (Scheduled, error) {
	if err := s.writable("cancel schedule"); err != nil {
		return Scheduled{}, err
	}
	var sc Scheduled
	err := s.db.retried(func() (err error) {
		sc, err = scanSchedule(s.db.QueryRowContext(ctx, `DELETE FROM schedules WHERE id = ? RETURNING `+scheduleColumns, id))
		return err
	})
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Scheduled{}, fmt.Errorf("cancel schedule %d: %w", id, ErrNoSchedule)
	case err != nil:
		return Scheduled{}, fmt.Errorf("cancel schedule %d: %w", id, err)
	}
	return sc, nil
}

// NextDue is the earliest Next of all schedules, for the scheduler's
// timer; ok is false when there are none.
func (s *Schedules) NextDue(ctx context.Context) (next time.Time, ok bool, err error) {
	var earliest sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT min(next_at) FROM schedules`).Scan(&earliest); err != nil {
		return time.Time{}, false, fmt.Errorf("read next due schedule: %w", err)
	}
	if !earliest.Valid {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(earliest.Int64), true, nil
}

func (s *Schedules) query(ctx context.Context, query string, args ...any) ([]Scheduled, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var schedules []Scheduled
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			return nil, err
		}
		schedules = append(schedules, sc)
	}
	return schedules, rows.Err()
}

// scanSchedule reads the scheduleColumns of one row.
func scanSchedule(row interface{ Scan(...any) error }) (Scheduled, error) {
	var (
		sc            Scheduled
		next, created int64
		lastRun       sql.NullInt64
	)
	if err := row.Scan(&sc.ID, &sc.Text, &next, &sc.Every, &sc.Transport, &sc.Chat, &created, &lastRun, &sc.Outside); err != nil {
		return Scheduled{}, err
	}
	sc.Next = time.UnixMilli(next)
	sc.Created = time.UnixMilli(created)
	if lastRun.Valid {
		sc.LastRun = time.UnixMilli(lastRun.Int64)
	}
	return sc, nil
}
