package state

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"shelldon/atomicfile"
	"shelldon/daemon/statedir"
)

// The database's high-water mark. SQLite's write-ahead log (state.db-wal)
// holds what was written since the last checkpoint; lose it — a bad card,
// a copy of state.db alone, a garbled header — and SQLite opens the
// database as it was at that checkpoint, without a word. Two things keep
// that from passing unseen:
//
//   - after every turn core checkpoints ([Store.Checkpoint]): what the
//     turn wrote moves into state.db itself, so little lives in the log
//     alone;
//   - a small file beside the database ([statedir.Layout.HighWater]),
//     flushed to disk at every checkpoint, says how far the database had
//     come — a sequence number the database holds too, and its counts of
//     turns, history and waiting requests — and whether a core had it
//     open. Open compares: a database behind its mark, or a log gone or
//     garbled after a core that never closed the database, is a rollback,
//     kept as a notice for the owner ([Notices.Owed]) and in the mark for
//     doctor ([CheckHighWater]).

// highWaterKey is the kv key of the database's own sequence number.
const highWaterKey = "highwater"

// maxHighWaterBytes bounds what is read of the mark file.
const maxHighWaterBytes = 64 << 10

// Counts are what the owner would miss of a rollback.
type Counts struct {
	Turns   int `json:"turns"` // finished
	History int `json:"history"`
	Waiting int `json:"waiting"` // requests waiting for the owner
}

// Rollback is a database found behind its high-water mark.
type Rollback struct {
	// Noticed is when Open found it.
	Noticed time.Time `json:"noticed"`
	// Why says what was lost: the log, or the database is older.
	Why string `json:"why"`
	// Since is when the mark was written: what the database took after
	// it may be lost.
	Since time.Time `json:"since"`
	// Before is what the mark counted, After what the database holds.
	Before Counts `json:"before"`
	After  Counts `json:"after"`
}

// Lost says what the counts lost, "" when none went down: "turns 7 → 5,
// chat history 14 → 10 entries, requests waiting for you 1 → 0".
func (r Rollback) Lost() string {
	var lost []string
	for _, c := range []struct {
		what, unit    string
		before, after int
	}{
		{"turns", "", r.Before.Turns, r.After.Turns},
		{"chat history", " entries", r.Before.History, r.After.History},
		{"requests waiting for you", "", r.Before.Waiting, r.After.Waiting},
	} {
		if c.after < c.before {
			lost = append(lost, fmt.Sprintf("%s %d → %d%s", c.what, c.before, c.after, c.unit))
		}
	}
	return strings.Join(lost, ", ")
}

// highWater is the mark file's content.
type highWater struct {
	Seq    int64     `json:"seq"`
	At     time.Time `json:"at"`
	Open   bool      `json:"open"` // a core has the database open: its log may hold what state.db does not
	Counts Counts    `json:"counts"`
	// Rollback is the last rollback noticed, kept for doctor.
	Rollback *Rollback `json:"rollback,omitempty"`
}

// readHighWater reads the mark of layout; the error wraps fs.ErrNotExist
// when there is none (a state directory from before marks).
func readHighWater(layout statedir.Layout) (*highWater, error) {
	f, err := os.Open(layout.HighWater())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxHighWaterBytes))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", layout.HighWater(), err)
	}
	var m highWater
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("read %s: %w", layout.HighWater(), err)
	}
	return &m, nil
}

// walState is what is found of the write-ahead log before SQLite opens it.
type walState int

const (
	walAbsent  walState = iota // no file
	walEmpty                   // a file of no frames
	walSound                   // a header SQLite takes
	walGarbled                 // a header SQLite ignores, and with it every frame
)

// The write-ahead log's header (https://sqlite.org/fileformat.html#wal_file_format):
// 32 bytes, big-endian: a magic number whose low bit says in which byte
// order the checksums read the file, the format version, and a checksum
// of the first 24 bytes in its last 8.
const (
	walHeaderBytes = 32
	walMagic       = 0x377f0682
	walVersion     = 3007000
)

// inspectWAL says what state the write-ahead log at path is in.
func inspectWAL(path string) (walState, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return walAbsent, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	header := make([]byte, walHeaderBytes)
	n, err := io.ReadFull(f, header)
	switch {
	case n == 0 && (err == io.EOF):
		return walEmpty, nil
	case errors.Is(err, io.ErrUnexpectedEOF):
		return walGarbled, nil
	case err != nil:
		return 0, err
	}
	if walHeaderSound(header) {
		return walSound, nil
	}
	return walGarbled, nil
}

// walHeaderSound checks a write-ahead log's header as SQLite does.
func walHeaderSound(h []byte) bool {
	magic := binary.BigEndian.Uint32(h[0:4])
	if magic&^1 != walMagic || binary.BigEndian.Uint32(h[4:8]) != walVersion {
		return false
	}
	var order binary.ByteOrder = binary.LittleEndian
	if magic&1 == 1 {
		order = binary.BigEndian
	}
	var s0, s1 uint32
	for i := 0; i < 24; i += 8 {
		s0 += order.Uint32(h[i:]) + s1
		s1 += order.Uint32(h[i+4:]) + s0
	}
	return s0 == binary.BigEndian.Uint32(h[24:28]) && s1 == binary.BigEndian.Uint32(h[28:32])
}

// walLoss says what became of a log found in state: "gone" or "garbled".
func walLoss(state walState) string {
	if state == walGarbled {
		return "garbled"
	}
	return "gone"
}

// countsQuery counts what a rollback would take from the owner: the
// turns finished (the running ones through the partial index
// turns_running), the history and the requests waiting.
const countsQuery = `SELECT (SELECT count(*) FROM turns) - (SELECT count(*) FROM turns WHERE ended_at IS NULL),
	(SELECT count(*) FROM history), (SELECT count(*) FROM pending_approvals)`

// databaseMark reads the database's sequence number and counts.
func databaseMark(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (seq int64, counts Counts, err error) {
	var raw []byte
	switch err := q.QueryRowContext(ctx, `SELECT value FROM kv WHERE key = ?`, highWaterKey).Scan(&raw); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return 0, Counts{}, fmt.Errorf("read the database's high-water mark: %w", err)
	default:
		if seq, err = strconv.ParseInt(string(raw), 10, 64); err != nil {
			return 0, Counts{}, fmt.Errorf("read the database's high-water mark %q: %w", raw, err)
		}
	}
	if err := q.QueryRowContext(ctx, countsQuery).Scan(&counts.Turns, &counts.History, &counts.Waiting); err != nil {
		return 0, Counts{}, fmt.Errorf("count what the database holds: %w", err)
	}
	return seq, counts, nil
}

// behind says why a database whose sequence number is seq, and whose
// log was found in state wal, is behind the mark m; "" when it is not.
func behind(m *highWater, wal walState, seq int64) string {
	switch {
	case m.Open && wal != walSound:
		// A core writes its log before it marks the database open, and
		// never truncates it: an empty one was lost too (a reader that
		// found none made it anew).
		return "its write-ahead log (state.db-wal) was " + walLoss(wal) + " after an unclean stop"
	case seq < m.Seq:
		return "state.db was older than its high-water mark (state.db.mark)"
	}
	return ""
}

// openHighWater compares the database just opened with the mark the
// core before left, prior (nil: none), whose log was found in state wal:
// a rollback is kept as a notice for the owner and in the mark. Then it
// marks the database open. A database Open found damaged is not compared:
// the damage's notice says what it cost.
func (s *Store) openHighWater(ctx context.Context, prior *highWater, wal walState, now time.Time) error {
	seq, counts, err := databaseMark(ctx, s.db)
	if err != nil {
		return err
	}
	if prior == nil {
		prior = &highWater{}
	}
	s.seq, s.lastRollback = max(seq, prior.Seq), prior.Rollback
	if why := behind(prior, wal, seq); why != "" && s.damage == nil {
		s.rolledBack = &Rollback{Noticed: now, Why: why, Since: prior.At, Before: prior.Counts, After: counts}
		s.lastRollback = s.rolledBack
		s.Notices().owe(ctx, Notice{Rollback: s.rolledBack}, now)
	}
	return s.mark(ctx, true, now)
}

// RolledBack is the rollback Open found, or nil.
func (s *Store) RolledBack() *Rollback { return s.rolledBack }

// Checkpoint moves what the write-ahead log holds into the database file
// as far as no reader is in the way (SQLite's PASSIVE checkpoint, which
// first flushes the log to disk), and raises the high-water mark to what
// the database holds now; then it takes its reserve on the disk again,
// when it let go of it and there is room. Core calls it after every turn.
func (s *Store) Checkpoint(ctx context.Context, now time.Time) error {
	if err := s.writable("checkpoint"); err != nil {
		return err
	}
	return errors.Join(s.mark(ctx, true, now), s.keepReserve())
}

// mark raises the database's sequence number, checkpoints, and writes
// the mark file, flushed, saying whether a core has the database open.
// The file is written after the checkpoint, so that a power cut never
// leaves a mark ahead of what the disk holds.
func (s *Store) mark(ctx context.Context, open bool, now time.Time) error {
	s.marking.Lock()
	defer s.marking.Unlock()
	m := highWater{Seq: s.seq + 1, At: now, Open: open, Rollback: s.lastRollback}
	err := s.inTx(ctx, func(tx *keptTx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
			highWaterKey, []byte(strconv.FormatInt(m.Seq, 10))); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, countsQuery).Scan(&m.Counts.Turns, &m.Counts.History, &m.Counts.Waiting)
	})
	if err != nil {
		return fmt.Errorf("raise the high-water mark: %w", err)
	}
	s.seq = m.Seq
	if err := s.checkpoint(ctx); err != nil {
		return err
	}
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("write the high-water mark: %w", err)
	}
	if err := s.db.retried(func() error { return atomicfile.WriteFile(s.layout.HighWater(), data, dbMode) }); err != nil {
		return fmt.Errorf("write the high-water mark: %w", err)
	}
	return nil
}

// Checkpoints wait for no reader: a reader's snapshot (doctor, `shelldon
// turns`, the backup) keeps the frames after it in the log, and the
// checkpoint is tried again checkpointRetries times, checkpointPause apart,
// without holding the store's connection meanwhile.
const (
	checkpointRetries = 10
	checkpointPause   = 100 * time.Millisecond
)

// checkpoint moves what the log holds into the database file, as far as
// the readers let it.
func (s *Store) checkpoint(ctx context.Context) error {
	for try := 0; ; try++ {
		var busy, frames, moved int
		if err := s.db.retried(func() error {
			return s.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &moved)
		}); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		if moved >= frames || try == checkpointRetries {
			return nil
		}
		select {
		case <-time.After(checkpointPause):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// closeHighWater marks the database closed before it is: the log SQLite
// deletes on close is then not taken for lost. A mark that cannot say so
// is removed, so that the next start compares nothing rather than cry
// wolf.
func (s *Store) closeHighWater() {
	if err := s.mark(context.Background(), false, time.Now()); err != nil {
		os.Remove(s.layout.HighWater())
	}
}

// CheckHighWater compares, for doctor, the state database of layout as
// it is on disk with its high-water mark, without opening it for
// writing: last is the last rollback core noticed (nil when there was
// none), unseen one core has not noticed yet (nil when the database is
// not behind its mark), which core tells the owner of when it starts.
func CheckHighWater(ctx context.Context, layout statedir.Layout) (last, unseen *Rollback, err error) {
	m, err := readHighWater(layout)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	wal, err := inspectWAL(layout.DB() + "-wal")
	if err != nil {
		return m.Rollback, nil, err
	}
	path, err := filepath.Abs(layout.DB())
	if err != nil {
		return m.Rollback, nil, err
	}
	db, err := sql.Open("sqlite", dsn(path, url.Values{"mode": {"ro"}}))
	if err != nil {
		return m.Rollback, nil, err
	}
	defer db.Close()
	seq, counts, err := databaseMark(ctx, db)
	if err != nil {
		return m.Rollback, nil, err
	}
	if why := behind(m, wal, seq); why != "" {
		unseen = &Rollback{Why: why, Since: m.At, Before: m.Counts, After: counts}
	}
	return m.Rollback, unseen, nil
}
