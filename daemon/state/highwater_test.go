package state

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"shelldon/daemon/statedir"
	"shelldon/testhost"
)

// finishTurn records one finished turn, with its two lines of history.
func finishTurn(t *testing.T, s *Store, id string) {
	t.Helper()
	ctx := context.Background()
	if err := s.Turns().Start(ctx, TurnStart{ID: id, Kind: "chat", Started: epoch}); err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"user", "assistant"} {
		if err := s.History().Append(ctx, id, role, "words of "+id, epoch); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Turns().Finish(ctx, TurnEnd{ID: id, Ended: epoch, Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
}

// crash leaves the store as a killed core leaves it: its lock free and
// its mark saying the database is open. (SQLite still checkpoints and
// deletes the log as the last connection closes, which a kill does not
// do: the tests then lose the log themselves.)
func crash(t *testing.T, s *Store) {
	t.Helper()
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
	releaseLock(s.lock)
}

// TestARollbackIsNoticedAtOpen: a database found behind its high-water
// mark is noticed at Open, kept as a notice for the owner and recorded
// for doctor, whichever way it came behind: its log lost (gone, or its
// header garbled) after a core that never closed it, or state.db itself
// put back to an older copy. A clean stop, or a crash that keeps the log,
// is no rollback.
func TestARollbackIsNoticedAtOpen(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// lose does to the state what is under test, after two turns
		// were checkpointed and a third was written.
		lose     func(t *testing.T, s *Store, layout statedir.Layout, older string)
		why      string // "" when no rollback is to be found
		lostTurn bool   // the third turn is lost
	}{
		{"clean stop", func(t *testing.T, s *Store, _ statedir.Layout, _ string) { s.Close() }, "", false},
		{"crash, log kept", func(t *testing.T, s *Store, layout statedir.Layout, _ string) {
			wal, err := os.ReadFile(layout.DB() + "-wal")
			if err != nil {
				t.Fatal(err)
			}
			crash(t, s)
			if err := os.WriteFile(layout.DB()+"-wal", wal, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "", false},
		{"crash, log gone", func(t *testing.T, s *Store, layout statedir.Layout, _ string) {
			crash(t, s)
			os.Remove(layout.DB() + "-wal")
		}, "state.db-wal) was gone", false},
		{"crash, log garbled", func(t *testing.T, s *Store, layout statedir.Layout, _ string) {
			crash(t, s)
			if err := os.WriteFile(layout.DB()+"-wal", []byte(strings.Repeat("garbage ", 100)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "state.db-wal) was garbled", false},
		{"older state.db put back", func(t *testing.T, s *Store, layout statedir.Layout, older string) {
			s.Close()
			if err := copyFile(older, layout.DB(), dbMode); err != nil {
				t.Fatal(err)
			}
		}, "older than its high-water mark", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			layout := statedir.Layout{Root: testhost.ShortDir(t)}
			s, err := Open(layout)
			if err != nil {
				t.Fatal(err)
			}
			finishTurn(t, s, "t1")
			finishTurn(t, s, "t2")
			if err := s.Checkpoint(ctx, epoch); err != nil {
				t.Fatal(err)
			}
			older := layout.DB() + ".older"
			if err := copyFile(layout.DB(), older, dbMode); err != nil {
				t.Fatal(err)
			}
			finishTurn(t, s, "t3")
			if err := s.Checkpoint(ctx, epoch.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			tc.lose(t, s, layout, older)

			_, unseen, err := CheckHighWater(ctx, layout)
			if err != nil {
				t.Fatal(err)
			}
			if (unseen != nil) != (tc.why != "") || unseen != nil && !strings.Contains(unseen.Why, tc.why) {
				t.Errorf("before core starts, doctor finds %+v, want a rollback saying %q", unseen, tc.why)
			}
			s, err = Open(layout)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			r := s.RolledBack()
			owed, err := s.Notices().Owed(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tc.why == "" {
				if r != nil || len(owed) > 0 {
					t.Fatalf("Open found %+v and owes %+v, want no rollback", r, owed)
				}
				return
			}
			if r == nil || !strings.Contains(r.Why, tc.why) {
				t.Fatalf("Open found %+v, want a rollback saying %q", r, tc.why)
			}
			if len(owed) != 1 || owed[0].Rollback == nil || owed[0].Rollback.Why != r.Why {
				t.Errorf("the notices owed are %+v, want the rollback", owed)
			}
			if !tc.lostTurn && !r.Since.Equal(epoch.Add(time.Minute)) {
				t.Errorf("the rollback is since %v, want the last mark's %v", r.Since, epoch.Add(time.Minute))
			}
			if lost := r.Lost(); tc.lostTurn != (lost == "turns 3 → 2, chat history 6 → 4 entries") {
				t.Errorf("the rollback lost %q, want the third turn lost: %v", lost, tc.lostTurn)
			}
			if last, unseen, err := CheckHighWater(ctx, layout); err != nil || unseen != nil || last == nil || last.Why != r.Why {
				t.Errorf("after Open, doctor finds %+v (unseen %+v, %v), want the rollback Open noticed", last, unseen, err)
			}
		})
	}
}

// TestANoticeIsKeptUntilTold: what Open found for the owner — here a
// damaged database restored from its backup — stays owed across
// restarts until it is told, and only then goes.
func TestANoticeIsKeptUntilTold(t *testing.T) {
	ctx := context.Background()
	layout := statedir.Layout{Root: testhost.ShortDir(t)}
	s, err := Open(layout)
	if err != nil {
		t.Fatal(err)
	}
	finishTurn(t, s, "t1")
	if err := s.Backup(ctx); err != nil {
		t.Fatal(err)
	}
	s.Close()
	overwrite(t, layout.DB(), 0, 100)
	for start := range 2 {
		s, err = Open(layout)
		if err != nil {
			t.Fatal(err)
		}
		owed, err := s.Notices().Owed(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(owed) != 1 || owed[0].Damage == nil || owed[0].Damage.Restored.IsZero() {
			t.Fatalf("start %d: the notices owed are %+v, want the restored damage", start+1, owed)
		}
		if start == 1 {
			if err := s.Notices().Told(ctx, owed[0]); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
	}
	s, err = Open(layout)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if owed, err := s.Notices().Owed(ctx); err != nil || len(owed) > 0 {
		t.Errorf("once told, the notices owed are %+v, %v", owed, err)
	}
}

// TestWALHeader: the log's header is read as SQLite reads it.
func TestWALHeader(t *testing.T) {
	layout := statedir.Layout{Root: testhost.ShortDir(t)}
	s, err := Open(layout)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	finishTurn(t, s, "t1")
	wal := layout.DB() + "-wal"
	data, err := os.ReadFile(wal)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		file []byte
		want walState
	}{
		{"SQLite's own", data, walSound},
		{"empty", nil, walEmpty},
		{"cut inside the header", data[:20], walGarbled},
		{"a checksum off by one", append(append([]byte{}, data[:31]...), data[31]+1), walGarbled},
		{"text", []byte(strings.Repeat("not a log ", 10)), walGarbled},
	} {
		path := layout.Root + "/" + strings.ReplaceAll(tc.name, " ", "-")
		if err := os.WriteFile(path, tc.file, 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := inspectWAL(path); err != nil || got != tc.want {
			t.Errorf("%s: inspectWAL = %v, %v, want %v", tc.name, got, err, tc.want)
		}
	}
	if got, err := inspectWAL(layout.Root + "/none"); err != nil || got != walAbsent {
		t.Errorf("no file: inspectWAL = %v, %v", got, err)
	}
}
