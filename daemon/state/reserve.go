package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ReserveBytes is the room the store keeps in reserve on the state's disk:
// a file of this size (statedir.Layout.Reserve), taken when there is room
// and let go of the first time a write finds the disk full, so that the
// pet goes on answering from it while the owner frees space. While the
// disk is full the log is checkpointed often (fullDiskCheckpointPages),
// so that what the pet writes reuses the room the log and the database
// free: a reply of 200 KiB (kept as history, as the reply, and in 50
// pieces in the outbox) took 448 KiB of the reserve, and /status and a
// short turn after it nothing more (TestAFullDiskOverTelegramIsToldAndCaughtUp).
// 2 MiB is four such replies, and leaves room for SQLite's log to grow
// by its checkpoint interval when the reserve is let go of; it costs 2
// MiB of the card, a thirty-second of what statedir.LowFree warns at.
const ReserveBytes = 2 << 20

// reserveMargin is the room past the reserve the disk must have free for
// the store to take its reserve again: taking it must not fill the disk
// it was let go of for.
const reserveMargin = ReserveBytes

// While the disk is full, SQLite's log is moved into the database every
// fullDiskCheckpointPages pages written, rather than every
// defaultCheckpointPages (SQLite's default), so that it is written over
// from its start again before it grows into the reserve: between the
// checkpoints after turns, the outbox's sent pieces alone write some
// 12 KiB of log each.
const (
	fullDiskCheckpointPages = 64
	defaultCheckpointPages  = 1000
)

// sqliteFull is SQLite's primary result code for a write that found the
// disk full (SQLITE_FULL, https://sqlite.org/rescode.html).
const sqliteFull = 13

// DiskFull is what the store tells the owner when a write found the
// state's disk full: once, until the store holds its reserve again.
type DiskFull struct {
	At time.Time `json:"at"`
	// Reserve is the room let go of for the writes to come; 0 when the
	// store held none (the disk was short of room when it started).
	Reserve int64 `json:"reserve"`
}

// isDiskFull says whether err is a write that found the disk full.
func isDiskFull(err error) bool {
	var coded interface{ Code() int }
	return errors.Is(err, syscall.ENOSPC) || errors.As(err, &coded) && coded.Code()&0xff == sqliteFull
}

// roomFor deals with a write's error err: when it found the disk full,
// the store lets go of its reserve and owes the owner a word, once until
// it holds the reserve again. It returns whether it let go of the
// reserve now, so that the write is worth trying again.
func (s *Store) roomFor(err error) bool {
	if !isDiskFull(err) {
		return false
	}
	s.reserveMu.Lock()
	released := false
	if s.reserveHeld {
		released = os.Remove(s.layout.Reserve()) == nil
		s.reserveHeld = !released
	}
	tell := s.diskFull == nil
	if tell {
		s.diskFull = &DiskFull{At: time.Now()}
		if released {
			s.diskFull.Reserve = ReserveBytes
		}
	}
	full := *s.diskFull
	s.reserveMu.Unlock()
	if released {
		s.checkpointEvery(fullDiskCheckpointPages)
	}
	if tell {
		// After the reserve is let go of, so that it is kept; past it
		// (the notice's own write failing) it is held in memory.
		s.Notices().owe(context.Background(), Notice{DiskFull: &full}, full.At)
	}
	return released
}

// DiskFull is how the store found the state's disk full, or nil when no
// write found it full since the store last held its reserve.
func (s *Store) DiskFull() *DiskFull {
	s.reserveMu.Lock()
	defer s.reserveMu.Unlock()
	if s.diskFull == nil {
		return nil
	}
	full := *s.diskFull
	return &full
}

// keepReserve takes the reserve when the store does not hold it and the
// disk has room for it and reserveMargin besides. A disk short of that
// room is no error: the reserve is taken at a later checkpoint.
func (s *Store) keepReserve() error {
	wasFull, err := s.takeReserve()
	if wasFull {
		// Outside the lock: a write that finds the disk full takes it.
		s.checkpointEvery(defaultCheckpointPages)
	}
	return err
}

// takeReserve is keepReserve's taking, under the reserve's lock; it says
// whether it took the reserve back after the disk was found full.
func (s *Store) takeReserve() (wasFull bool, err error) {
	s.reserveMu.Lock()
	defer s.reserveMu.Unlock()
	if s.reserveHeld {
		return false, nil
	}
	path := s.layout.Reserve()
	held := int64(0)
	if info, err := os.Lstat(path); err == nil && info.Mode().IsRegular() {
		held = info.Size() // a reserve an earlier core kept, or part of one
	}
	free, err := s.layout.Free()
	if err != nil {
		return false, fmt.Errorf("keep a reserve on the state's disk: %w", err)
	}
	if free+held < ReserveBytes+reserveMargin {
		return false, nil
	}
	err = preallocate(path, ReserveBytes)
	if isDiskFull(err) {
		os.Remove(path)
		return false, nil
	}
	if err != nil {
		os.Remove(path)
		return false, fmt.Errorf("keep a reserve on the state's disk: %w", err)
	}
	wasFull = s.diskFull != nil
	s.reserveHeld, s.diskFull = true, nil
	return wasFull, nil
}

// checkpointEvery has SQLite move its log into the database every pages
// pages written. The store's one connection keeps it; a connection
// opened afresh has SQLite's default, which only costs room.
func (s *Store) checkpointEvery(pages int) {
	s.db.ExecContext(context.Background(), "PRAGMA wal_autocheckpoint = "+strconv.Itoa(pages))
}

// preallocate makes the file at path size bytes long, its blocks taken on
// the disk (fallocate, or zeros written where the file system has no
// fallocate), and flushed.
func preallocate(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, fileMode)
	if err != nil {
		return err
	}
	defer f.Close()
	err = unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) {
		err = writeZeros(f, size)
	}
	if err != nil {
		return err
	}
	return f.Sync()
}

// writeZeros writes size zero bytes to f from its start.
func writeZeros(f *os.File, size int64) error {
	block := make([]byte, 64<<10)
	for at := int64(0); at < size; at += int64(len(block)) {
		if _, err := f.WriteAt(block[:min(int64(len(block)), size-at)], at); err != nil {
			return err
		}
	}
	return nil
}
