package state

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"shelldon/atomicfile"
	"shelldon/daemon/statedir"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

var (
	// ErrReadOnly is returned by every write method of a Store opened with
	// OpenReadOnly.
	ErrReadOnly = errors.New("state opened read-only")
	// ErrNewerSchema is wrapped by Open and OpenReadOnly when the database was
	// written by a newer shelldon than this one.
	ErrNewerSchema = errors.New("state database is newer than this shelldon")
)

// Modes of what the store creates: core's alone, until the directory's
// access (statedir.Layout.Access) gives the workers what a turn needs.
const (
	dirMode  = 0o700
	fileMode = statedir.PrivateFileMode
	dbMode   = statedir.PrivateFileMode
)

//go:embed default_directive.md
var defaultDirective []byte

// Store is shelldon's state. Its methods are safe for concurrent use.
type Store struct {
	layout    statedir.Layout
	readers   statedir.Readers
	db        *preparedDB
	lock      *os.File // the state directory's lock, held while open for writing
	readOnly  bool
	recovered int
	damage    *Damage // what Open found wrong with the database, if anything
	// files serialises the read-modify-write of the memory tree's files.
	files sync.Mutex

	// The high-water mark (highwater.go): marking serialises its writes,
	// seq is the database's sequence number, lastRollback the last
	// rollback noticed (kept in the mark for doctor), rolledBack the one
	// this Open found.
	marking      sync.Mutex
	seq          int64
	lastRollback *Rollback
	rolledBack   *Rollback
	// unkept are the notices for the owner that could not be kept in the
	// database (notices.go).
	unkeptMu sync.Mutex
	unkept   []Notice
	// owing wakes core when a notice is owed while it runs ([Notices.Owing]).
	owing chan struct{}

	// The reserve on the state's disk (reserve.go): whether the store
	// holds it, and how a write found the disk full since it last did.
	reserveMu   sync.Mutex
	reserveHeld bool
	diskFull    *DiskFull

	// counted is the last answer of [Turns.CountSince] (turns.go), kept
	// until the next turn starts.
	counted turnCount
}

// ErrLocked is wrapped by Open when another process holds the state
// directory.
var ErrLocked = errors.New("another shelldon core holds the state directory")

// Open takes the state directory of layout for this process, prepares it
// and opens its database for writing: it creates the directories that are
// missing, writes a default DIRECTIVE.md and an empty about.md when there
// are none, brings the database schema up to date, and marks turns that a
// crash left running as interrupted (see Recovered). The directory's lock
// comes first: a second core on a directory another serves is refused
// with ErrLocked before it reads or writes anything, so it cannot mark the
// live core's turn interrupted on its way out. Only core reads the
// directory; [OpenFor] lets others read what they need.
func Open(layout statedir.Layout) (*Store, error) { return OpenFor(layout, statedir.NoReaders) }

// OpenFor is [Open] for a directory that readers read too: every entry is
// given the mode and group layout.Access says, at every open, so that a
// directory made or widened by an older core, or by hand, is narrowed.
func OpenFor(layout statedir.Layout, readers statedir.Readers) (s *Store, err error) {
	if layout.Root == "" {
		return nil, errors.New("open state: no state directory given")
	}
	lock, err := lockDir(layout)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", layout.Root, err)
	}
	defer func() {
		if err != nil {
			lock.Close()
		}
	}()
	if err := prepareDir(layout, readers); err != nil {
		return nil, fmt.Errorf("open state %s: %w", layout.Root, err)
	}
	path, err := filepath.Abs(layout.DB())
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", layout.Root, err)
	}
	// Create the file first so that SQLite, which gives its -wal and -shm
	// files the database's mode, keeps them private too.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, dbMode)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", layout.Root, err)
	}
	f.Close()
	// What the core before left of the mark and the log, before SQLite
	// opens the log and moves on from what it finds.
	prior, err := readHighWater(layout)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		prior = nil // an unreadable mark compares nothing; a new one replaces it
	}
	wal, err := inspectWAL(path + "-wal")
	if err != nil {
		return nil, fmt.Errorf("open state %s: look at the write-ahead log: %w", layout.Root, err)
	}
	ctx := context.Background()
	now := time.Now()
	db, damage, err := openChecked(ctx, layout, path, now)
	if err != nil {
		return nil, fmt.Errorf("open state database %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			db.Close()
		}
	}()
	if err := migrate(ctx, db); err != nil {
		return nil, fmt.Errorf("open state database %s: %w", path, err)
	}
	recovered, err := finishInterrupted(ctx, db, now)
	if err != nil {
		return nil, fmt.Errorf("open state database %s: %w", path, err)
	}
	s = &Store{layout: layout, readers: readers, db: newPreparedDB(db), lock: lock, recovered: recovered, damage: damage,
		owing: make(chan struct{}, 1)}
	s.db.room = s.roomFor
	// A reserve that cannot be taken is no reason not to start: every
	// checkpoint tries again, and says why it failed.
	s.keepReserve()
	if damage != nil {
		s.Notices().owe(ctx, Notice{Damage: damage}, now)
	}
	if err := s.openHighWater(ctx, prior, wal, now); err != nil {
		// The mark is a check, not the state: core starts without it, and
		// the next checkpoint writes it.
		os.Remove(layout.HighWater())
	}
	return s, nil
}

// openDB opens the database at path for core's writing.
func openDB(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn(path, url.Values{
		"_pragma": {"journal_mode(WAL)", "busy_timeout(5000)", "foreign_keys(1)", "synchronous(NORMAL)"},
		// Take the write lock when a transaction begins, so waiting for
		// another writer goes through busy_timeout instead of failing.
		"_txlock": {"immediate"},
	}))
	if err != nil {
		return nil, err
	}
	// One connection: core writes one thing at a time, and SQLite takes
	// one writer anyway.
	db.SetMaxOpenConns(1)
	return db, nil
}

// lockDir takes the state directory's lock file (state.lock), made with
// the directory if need be, with an exclusive flock that the kernel drops
// when the process ends however it ends. The holder's pid is written in
// it, for the refusal of the next.
func lockDir(layout statedir.Layout) (*os.File, error) {
	if err := os.MkdirAll(layout.Root, dirMode); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(layout.Lock(), os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, dbMode)
	if err != nil {
		return nil, fmt.Errorf("take the state directory's lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := io.ReadAll(io.LimitReader(f, 32))
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (pid %s); stop it first, or give this one another --state-dir", ErrLocked, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("lock %s: %w", layout.Lock(), err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// releaseLock unlocks and closes the lock file, so that the directory is
// free when it returns. Closing alone is not enough: a child that another
// goroutine is starting holds a copy of the descriptor until its exec has
// closed it (O_CLOEXEC acts only then, and the kernel finishes the close
// after the parent is already running on), and the flock lives while any
// copy of the open file does. LOCK_UN unlocks the open file itself, for
// every copy.
func releaseLock(f *os.File) {
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}

// OpenReadOnly opens the state database of layout for reading only, as
// `shelldon turns` does while core may be running. It creates nothing and
// migrates nothing: the schema must be the one this shelldon knows. A
// database that is not there wraps fs.ErrNotExist, one this user may not
// read fs.ErrPermission, and a damaged one [ErrDamaged].
func OpenReadOnly(layout statedir.Layout) (s *Store, err error) {
	path, err := filepath.Abs(layout.DB())
	if err != nil {
		return nil, fmt.Errorf("open state %s read-only: %w", layout.Root, err)
	}
	if err := readable(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("open state read-only: no database at %s (has the daemon run yet?): %w", path, err)
		}
		return nil, fmt.Errorf("open state read-only: %w", err)
	}
	db, err := sql.Open("sqlite", dsn(path, url.Values{
		"mode":    {"ro"},
		"_pragma": {"busy_timeout(5000)", "query_only(1)"},
	}))
	if err != nil {
		return nil, fmt.Errorf("open state database %s read-only: %w", path, err)
	}
	defer func() {
		if err != nil {
			db.Close()
		}
	}()
	version, err := schemaVersion(context.Background(), db)
	if damage := damageOf(err); damage != nil {
		return nil, fmt.Errorf("open state database %s read-only: it is %w: restart core (systemctl restart shelldon, or `shelldon up` again), which moves it aside and goes on from the last backup, or afresh; `shelldon doctor` says more",
			path, damage)
	}
	if err != nil {
		return nil, fmt.Errorf("open state database %s read-only: %w", path, err)
	}
	switch {
	case version > len(migrations):
		return nil, fmt.Errorf("open state database %s read-only: %w: schema version %d, this shelldon knows up to %d", path, ErrNewerSchema, version, len(migrations))
	case version < len(migrations):
		return nil, fmt.Errorf("open state database %s read-only: schema version %d is older than this shelldon's %d; start the daemon once to upgrade it", path, version, len(migrations))
	}
	return &Store{layout: layout, db: newPreparedDB(db), readOnly: true}, nil
}

// readable opens the file at path and closes it again, for the error
// the kernel gives: SQLite would say only "unable to open database file"
// of a file this user may not read.
func readable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return f.Close()
}

// dsn is the modernc.org/sqlite data source name of the database at the
// absolute path, with params. The URI form escapes any '?' or '#' in the path.
func dsn(path string, params url.Values) string {
	u := url.URL{Scheme: "file", Path: path, RawQuery: params.Encode()}
	return u.String()
}

// prepareDir creates what is missing of the state directory, seeds the
// files a turn cannot do without, and gives every entry its access.
func prepareDir(layout statedir.Layout, readers statedir.Readers) error {
	for _, dir := range []string{layout.Root, layout.MemoryDir(), layout.Workspace(), layout.Vault()} {
		if err := os.MkdirAll(dir, dirMode); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	if err := seedFile(layout.Directive(), defaultDirective); err != nil {
		return err
	}
	if err := seedFile(layout.About(), nil); err != nil {
		return err
	}
	return grant(layout.Access(readers))
}

// seedFile writes content to path unless a file is already there.
func seedFile(path string, content []byte) error {
	_, err := os.Stat(path)
	if err == nil {
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("seed %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, content, fileMode)
}

// Recovered is how many turns Open found still running, left so by a crash,
// and finished with the outcome OutcomeInterrupted.
func (s *Store) Recovered() int { return s.recovered }

// Layout is the state directory the store works in.
func (s *Store) Layout() statedir.Layout { return s.layout }

// Close closes the database, marking it closed first.
func (s *Store) Close() error {
	if !s.readOnly {
		s.closeHighWater()
	}
	err := s.db.Close()
	if s.lock != nil {
		releaseLock(s.lock)
	}
	if err != nil {
		return fmt.Errorf("close state database: %w", err)
	}
	return nil
}

// writable refuses a write on a read-only store.
func (s *Store) writable(what string) error {
	if s.readOnly {
		return fmt.Errorf("%s: %w", what, ErrReadOnly)
	}
	return nil
}

// earliestExpiry is the first expires_at (unix ms) of table, which the
// callers name by a constant; ok is false when the table is empty. An
// index on expires_at makes it one lookup.
func (s *Store) earliestExpiry(ctx context.Context, table string) (at time.Time, ok bool, err error) {
	var first sql.NullInt64
	if err := s.db.QueryRowContext(ctx, "SELECT MIN(expires_at) FROM "+table).Scan(&first); err != nil {
		return time.Time{}, false, fmt.Errorf("first expiry in %s: %w", table, err)
	}
	if !first.Valid {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(first.Int64), true, nil
}
