package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"shelldon/daemon/statedir"
)

// ErrDamaged is wrapped by OpenReadOnly and CheckFile when SQLite finds
// the database file damaged; the message says what to do.
var ErrDamaged = errors.New("damaged")

// The primary result codes with which SQLite says a file is not a sound
// database (https://sqlite.org/rescode.html); the extended codes keep
// them in their low byte.
const (
	sqliteCorrupt = 11 // SQLITE_CORRUPT: "database disk image is malformed"
	sqliteNotADB  = 26 // SQLITE_NOTADB: "file is not a database"
)

// damageOf returns err, from reading the database, as [ErrDamaged] when
// SQLite says the file is damaged, and nil when it says anything else.
func damageOf(err error) error {
	var coded interface{ Code() int }
	if !errors.As(err, &coded) {
		return nil
	}
	switch coded.Code() & 0xff {
	case sqliteCorrupt, sqliteNotADB:
		return fmt.Errorf("%w (%v)", ErrDamaged, err)
	}
	return nil
}

// Damage says what Open found wrong with the database and what it did
// about it, for core to tell the owner and doctor to report.
type Damage struct {
	// Why is what SQLite said of the damaged file.
	Why string
	// Aside is where the damaged file was moved (with its -wal and -shm).
	Aside string
	// Restored is when the backup now in its place was made; zero when
	// no sound backup was there and the database starts empty.
	Restored time.Time
}

// Damage is what Open found wrong with the database, or nil.
func (s *Store) Damage() *Damage { return s.damage }

// quickCheck runs SQLite's quick_check: the structure of every table and
// index, in a time that grows with the file (see BENCHMARKS.md). A file
// that is not a database at all fails to answer.
func quickCheck(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, "PRAGMA quick_check")
	if err != nil {
		return err
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return err
		}
		if line != "ok" {
			problems = append(problems, line)
		}
		if len(problems) == 5 {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// openChecked opens the database at path and checks it. A damaged one —
// truncated, its header smashed, pages of garbage — is moved aside, and
// the last good backup put in its place if it checks sound, else an
// empty database: core starts either way, and says what happened.
func openChecked(ctx context.Context, layout statedir.Layout, path string, now time.Time) (*sql.DB, *Damage, error) {
	db, err := openDB(path)
	if err != nil {
		return nil, nil, err
	}
	why := quickCheck(ctx, db)
	if why == nil {
		return db, nil, nil
	}
	db.Close()
	damage := &Damage{Why: why.Error(), Aside: layout.DamagedPrefix() + now.UTC().Format("20060102T150405Z")}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Rename(path+suffix, damage.Aside+suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("move the damaged database aside: %w", err)
		}
	}
	if made, err := restoreBackup(ctx, layout, path); err == nil {
		damage.Restored = made
	}
	db, err = openDB(path)
	if err != nil {
		return nil, nil, err
	}
	if err := quickCheck(ctx, db); err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("the database put in place of the damaged one does not check either: %w", err)
	}
	return db, damage, nil
}

// restoreBackup copies the backup to path if it checks sound, and says
// when it was made.
func restoreBackup(ctx context.Context, layout statedir.Layout, path string) (time.Time, error) {
	info, err := os.Stat(layout.Backup())
	if err != nil {
		return time.Time{}, err
	}
	backup, err := sql.Open("sqlite", dsn(layout.Backup(), url.Values{"mode": {"ro"}}))
	if err != nil {
		return time.Time{}, err
	}
	err = quickCheck(ctx, backup)
	backup.Close()
	if err != nil {
		return time.Time{}, fmt.Errorf("the backup is damaged too: %w", err)
	}
	if err := copyFile(layout.Backup(), path, dbMode); err != nil {
		return time.Time{}, err
	}
	return info.ModTime(), nil
}

// copyFile copies from to to, synced, through a temporary name.
func copyFile(from, to string, mode os.FileMode) (err error) {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := to + ".tmp"
	dst, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, to)
}

// Backup writes a copy of the database to the backup file, for Open to
// recover from damage: VACUUM INTO a temporary file, which only reads the
// live database (writes go on meanwhile, as WAL allows), checked, then
// renamed into place, so a crash mid-way leaves the last good backup.
func (s *Store) Backup(ctx context.Context) error {
	if err := s.writable("back up"); err != nil {
		return err
	}
	dst := s.layout.Backup()
	tmp := dst + ".tmp"
	os.Remove(tmp)
	src, err := filepath.Abs(s.layout.DB())
	if err != nil {
		return fmt.Errorf("back up: %w", err)
	}
	// A connection of its own, reading: the store's one connection stays
	// free for core while the copy is made. Its page cache is 64 KiB, not
	// SQLite's 2 MB: VACUUM INTO reads each page once, and the memory
	// SQLite's allocator took for a full cache stayed with core after the
	// connection closed (1.2 MB of an idle core's 8).
	reader, err := sql.Open("sqlite", dsn(src, url.Values{"mode": {"ro"}, "_pragma": {"cache_size(-64)"}}))
	if err != nil {
		return fmt.Errorf("back up: %w", err)
	}
	defer reader.Close()
	if _, err := reader.ExecContext(ctx, "VACUUM INTO ?", tmp); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("back up the state database: %w", err)
	}
	if err := os.Chmod(tmp, dbMode); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("back up: %w", err)
	}
	if f, err := os.Open(tmp); err == nil {
		f.Sync()
		f.Close()
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("back up: %w", err)
	}
	return nil
}

// Damaged lists the damaged databases moved aside in the state
// directory, oldest first, for doctor.
func Damaged(layout statedir.Layout) []string {
	found, _ := filepath.Glob(layout.DamagedPrefix() + "*")
	var out []string
	for _, f := range found {
		if !strings.HasSuffix(f, "-wal") && !strings.HasSuffix(f, "-shm") {
			out = append(out, f)
		}
	}
	return out
}

// CheckFile checks the state database of layout as it is on disk,
// without opening it for writing: nil when it is sound, an error wrapping
// fs.ErrNotExist when there is none yet, fs.ErrPermission when this user
// may not read it, [ErrDamaged] when it is damaged, and whatever else
// kept it from being checked.
func CheckFile(ctx context.Context, layout statedir.Layout) error {
	path, err := filepath.Abs(layout.DB())
	if err != nil {
		return err
	}
	if err := readable(path); err != nil {
		return err
	}
	db, err := sql.Open("sqlite", dsn(path, url.Values{"mode": {"ro"}}))
	if err != nil {
		return err
	}
	defer db.Close()
	if err := quickCheck(ctx, db); err != nil {
		var coded interface{ Code() int }
		if !errors.As(err, &coded) {
			return fmt.Errorf("%w: %v", ErrDamaged, err) // quick_check answered, listing what is wrong
		}
		if damage := damageOf(err); damage != nil {
			return damage
		}
		return err
	}
	return nil
}
