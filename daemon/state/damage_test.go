package state

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"shelldon/daemon/statedir"
)

// damages are the ways a state.db is found broken on an SD card after a
// power cut or a bad write: cut short, its header overwritten, a page in
// the middle (a table's) turned to garbage.
var damages = []struct {
	name   string
	damage func(t *testing.T, path string)
}{
	{"truncated", func(t *testing.T, path string) {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, info.Size()/2+100); err != nil {
			t.Fatal(err)
		}
	}},
	{"header smashed", func(t *testing.T, path string) { overwrite(t, path, 0, 100) }},
	{"a page of garbage", func(t *testing.T, path string) { overwrite(t, path, 3*4096, 4096) }},
}

func overwrite(t *testing.T, path string, at, n int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	junk := make([]byte, n)
	rand.Read(junk)
	if _, err := f.WriteAt(junk, at); err != nil {
		t.Fatal(err)
	}
}

// fill gives a store enough turns and history to span many pages.
func fill(t *testing.T, s *Store, from int) {
	t.Helper()
	ctx := context.Background()
	for i := from; i < from+200; i++ {
		id := fmt.Sprintf("turn%04d", i)
		if err := s.Turns().Start(ctx, TurnStart{ID: id, Kind: "chat", Started: epoch, Preview: strings.Repeat("p", 200)}); err != nil {
			t.Fatal(err)
		}
		if err := s.History().Append(ctx, id, "user", strings.Repeat("words ", 40), epoch); err != nil {
			t.Fatal(err)
		}
	}
}

// closed closes a store and checkpoints it, so everything is in state.db.
func closed(t *testing.T, s *Store) {
	t.Helper()
	if _, err := s.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// TestADamagedDatabaseIsMovedAsideAndCoreStarts: whatever the damage, Open
// succeeds: the damaged file is moved aside, named for when, and the
// last good backup takes its place (or an empty database when there is
// none); Damage says what happened, for the owner and doctor.
func TestADamagedDatabaseIsMovedAsideAndCoreStarts(t *testing.T) {
	for _, d := range damages {
		for _, withBackup := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, backup %v", d.name, withBackup), func(t *testing.T) {
				l := statedir.Layout{Root: t.TempDir()}
				s := openStore(t, l)
				fill(t, s, 0)
				if withBackup {
					if err := s.Backup(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				fill(t, s, 1000) // lost with the damage, backup or not
				closed(t, s)
				d.damage(t, l.DB())

				again, err := Open(l)
				if err != nil {
					t.Fatalf("Open of a damaged database = %v, want core to start", err)
				}
				defer again.Close()
				damage := again.Damage()
				if damage == nil || damage.Why == "" || !strings.HasPrefix(damage.Aside, l.DamagedPrefix()) {
					t.Fatalf("Damage() = %+v, want what was wrong and where the file went", damage)
				}
				if _, err := os.Stat(damage.Aside); err != nil {
					t.Errorf("the damaged file is not where Damage says: %v", err)
				}
				if got := Damaged(l); len(got) != 1 || got[0] != damage.Aside {
					t.Errorf("Damaged() = %q, want %s", got, damage.Aside)
				}
				turns, err := again.Turns().Recent(context.Background(), 1000)
				if err != nil {
					t.Fatal(err)
				}
				want := 0
				if withBackup {
					want = 200
				}
				if len(turns) != want || withBackup == damage.Restored.IsZero() {
					t.Errorf("after recovery: %d turns, restored %v; want %d turns and a restore: %v", len(turns), damage.Restored, want, withBackup)
				}
				// The recovered database takes writes.
				if err := again.Turns().Start(context.Background(), TurnStart{ID: "after", Kind: "chat", Started: time.Now()}); err != nil {
					t.Errorf("a write after recovery = %v", err)
				}
			})
		}
	}
}

func TestASoundDatabaseIsLeftAlone(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	s := openStore(t, l)
	fill(t, s, 0)
	closed(t, s)
	again := openStore(t, l)
	if d := again.Damage(); d != nil {
		t.Errorf("Damage() of a sound database = %+v", d)
	}
	if got := Damaged(l); len(got) != 0 {
		t.Errorf("Damaged() = %q, want nothing moved aside", got)
	}
}

// BenchmarkQuickCheck is the check core makes at every start, on a
// database of about 50 MB.
func BenchmarkQuickCheck(b *testing.B) {
	l := statedir.Layout{Root: b.TempDir()}
	s, err := Open(l)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	text := strings.Repeat("a fairly long line of history, as a chatty owner writes it. ", 16)
	for i := 0; i < 50<<20/len(text); i++ {
		if err := s.History().Append(ctx, "t", "user", text, epoch); err != nil {
			b.Fatal(err)
		}
	}
	s.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	info, _ := os.Stat(l.DB())
	for b.Loop() {
		if err := quickCheck(ctx, s.db.DB); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(info.Size())/(1<<20), "MiB")
	s.Close()
}
