package state

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shelldon/daemon/statedir"
	"shelldon/testhost"
)

// TestAFullDiskIsMetFromTheReserve fills the state's disk (a 6 MiB tmpfs)
// under an open store. The write that finds it full is kept all the
// same, from the reserve the store lets go of; the owner is owed one
// notice, however many writes find the disk full; once space is back the
// next checkpoint takes the reserve again, and the next time the disk
// fills there is a notice again.
func TestAFullDiskIsMetFromTheReserve(t *testing.T) {
	dir := testhost.SmallDisk(t, 6<<20, 0o700)
	layout := statedir.Layout{Root: dir}
	s, err := Open(layout)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	reserved := func() bool {
		info, err := os.Stat(layout.Reserve())
		return err == nil && info.Size() == ReserveBytes
	}
	if !reserved() {
		t.Fatal("no reserve kept at open")
	}

	for episode := range 2 {
		filler := filepath.Join(dir, "filler")
		testhost.FillDisk(t, filler)
		// Writes of a history entry each, until one is past the room
		// SQLite's log had, and then a few more.
		long := strings.Repeat("a long answer ", MaxHistoryEntryBytes/14)
		writes, after := 0, 0
		for ; after < 3 && writes < 200; writes++ {
			if err := s.History().Append(ctx, "t1", "assistant", long, time.Now()); err != nil {
				t.Fatalf("episode %d: write %d on a full disk failed, with the reserve to go on from: %v", episode, writes, err)
			}
			if s.DiskFull() != nil {
				after++
			}
		}
		t.Logf("episode %d: %d writes of %d KiB, the last %d after the disk was found full", episode, writes, MaxHistoryEntryBytes>>10, after)
		if reserved() {
			t.Errorf("episode %d: the reserve is still held on a full disk", episode)
		}
		full := s.DiskFull()
		if full == nil || full.Reserve != ReserveBytes {
			t.Errorf("episode %d: DiskFull = %+v, want the reserve let go of", episode, full)
		}
		select {
		case <-s.Notices().Owing():
		default:
			t.Errorf("episode %d: core was not woken to tell the owner", episode)
		}
		owed, err := s.Notices().Owed(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(owed) != 1 || owed[0].DiskFull == nil {
			t.Fatalf("episode %d: owed %+v, want one notice of the full disk", episode, owed)
		}
		if err := s.Notices().Told(ctx, owed[0]); err != nil {
			t.Fatal(err)
		}

		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		if err := s.Checkpoint(ctx, time.Now()); err != nil {
			t.Fatalf("episode %d: checkpoint with space back: %v", episode, err)
		}
		if !reserved() || s.DiskFull() != nil {
			t.Errorf("episode %d: with space back, the reserve is held %v and DiskFull is %+v", episode, reserved(), s.DiskFull())
		}
	}
}
