package state

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"shelldon/contracts"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"shelldon/daemon/statedir"
	"shelldon/testhost"
)

func openStore(t *testing.T, layout statedir.Layout) *Store {
	t.Helper()
	s, err := Open(layout)
	if err != nil {
		t.Fatalf("Open(%s) = %v", layout.Root, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newStore(t *testing.T) *Store {
	t.Helper()
	return openStore(t, statedir.Layout{Root: filepath.Join(t.TempDir(), "state")})
}

// rawDB opens the database behind the store's back, as another tool would.
func rawDB(t *testing.T, layout statedir.Layout) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(layout.DB(), url.Values{"_pragma": {"busy_timeout(5000)"}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func userVersion(t *testing.T, db *sql.DB) int {
	t.Helper()
	v, err := schemaVersion(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestOpenPreparesTheDirectory(t *testing.T) {
	s := newStore(t)
	l := s.Layout()
	for _, dir := range []string{l.Root, l.MemoryDir(), l.Vault(), l.Workspace()} {
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			t.Errorf("Open did not create directory %s: %v", dir, err)
		}
	}
	// Only core reads a directory opened for no other reader.
	for _, w := range l.Access(statedir.NoReaders) {
		info, err := os.Lstat(w.Path)
		if err != nil {
			continue // made later: the socket, the tool store, a backup…
		}
		if got := info.Mode() &^ fs.ModeType; got != w.Mode {
			t.Errorf("%s has mode %v, want %v (%s)", w.Path, got, w.Mode, w.Who)
		}
	}
	if info, err := os.Stat(l.DB()); err != nil || info.Mode().Perm()&^dbMode != 0 {
		t.Errorf("state.db mode = %v, %v, want at most %v", info.Mode().Perm(), err, os.FileMode(dbMode))
	}

	var mode string
	if err := s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v, want wal", mode, err)
	}
	var fk int
	if err := s.db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys = %d, %v, want 1", fk, err)
	}

	directive, err := l.ReadDirective()
	if err != nil {
		t.Fatalf("ReadDirective after Open: %v", err)
	}
	for _, want := range []string{"shelldon", "THOUGHT:", "FACE:", "```ops", "remember", "rewrite_about", "add_face", "capture_learning", "secret"} {
		if !strings.Contains(directive, want) {
			t.Errorf("default DIRECTIVE.md does not mention %q", want)
		}
	}
	if about, err := l.ReadAbout(); about != "" || err != nil {
		t.Errorf("seeded about.md = %q, %v, want empty", about, err)
	}
}

func TestOpenKeepsExistingFiles(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	if err := os.WriteFile(l.Directive(), []byte("be a cat\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.About(), []byte("likes tea\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(l.Vault(), 0o755); err != nil {
		t.Fatal(err)
	}
	openStore(t, l)
	for path, want := range map[string]string{l.Directive(): "be a cat\n", l.About(): "likes tea\n"} {
		if got, _ := os.ReadFile(path); string(got) != want {
			t.Errorf("Open rewrote %s to %q, want %q kept", path, got, want)
		}
	}
	if info, _ := os.Stat(l.Vault()); info.Mode().Perm() != 0o700 {
		t.Errorf("a vault made with mode 0755 was left at %v, want 0700", info.Mode().Perm())
	}
}

func TestOpenFailures(t *testing.T) {
	base := t.TempDir()
	plain := filepath.Join(base, "plain")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dbIsDir := filepath.Join(base, "dbdir")
	if err := os.MkdirAll(filepath.Join(dbIsDir, "state.db"), 0o750); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		root string
	}{
		{"no root", ""},
		{"root is a file", plain},
		{"database is a directory", dbIsDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(statedir.Layout{Root: tt.root})
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) = nil error, want one", tt.root)
			}
			if !strings.Contains(err.Error(), "state") {
				t.Errorf("Open(%q) = %q, want it to say what it was opening", tt.root, err)
			}
		})
	}
}

func TestMigrationsAreIdempotent(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	ctx := context.Background()
	first, err := Open(l)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.History().Append(ctx, "t1", "user", "hello", time.UnixMilli(1000)); err != nil {
		t.Fatal(err)
	}
	first.Close()

	for i := range 3 {
		s, err := Open(l)
		if err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		if v := userVersion(t, s.db.DB); v != len(migrations) {
			t.Errorf("reopen %d: user_version = %d, want %d", i, v, len(migrations))
		}
		got, err := s.History().Recent(ctx, 10)
		if err != nil || len(got) != 1 || got[0].Text != "hello" {
			t.Errorf("reopen %d: history = %v, %v, want the one message kept", i, got, err)
		}
		s.Close()
	}
}

func TestAppendedMigrationRunsOnce(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	openStore(t, l).Close()

	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = append(migrations[:len(migrations):len(migrations)], `CREATE TABLE extra (x INTEGER)`)

	for i := range 2 {
		s, err := Open(l)
		if err != nil {
			t.Fatalf("open %d with an appended migration: %v", i, err)
		}
		if v := userVersion(t, s.db.DB); v != len(migrations) {
			t.Errorf("open %d: user_version = %d, want %d", i, v, len(migrations))
		}
		if _, err := s.db.Exec(`INSERT INTO extra (x) VALUES (1)`); err != nil {
			t.Errorf("open %d: the appended table is missing: %v", i, err)
		}
		s.Close()
	}
}

// TestUpgradeFromFirstSchema opens a database made by the first release
// (schema version 1) with today's code: its turns survive and take the
// launcher's figures and the tokens from then on.
func TestUpgradeFromFirstSchema(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	ctx := context.Background()
	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = migrations[:1]
	openStore(t, l).Close()
	// A turn as the first release wrote it, in its own words.
	start := time.UnixMilli(1_700_000_000_000)
	if _, err := rawDB(t, l).Exec(`INSERT INTO turns (id, kind, started_at, ended_at, outcome, worker_peak_kb) VALUES ('old', 'chat', ?, ?, 'ok', 8192)`,
		start.UnixMilli(), start.Add(time.Second).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	migrations = saved

	s := openStore(t, l)
	defer s.Close()
	if err := s.Turns().Start(ctx, TurnStart{ID: "new", Kind: "chat", Started: start.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Turns().Finish(ctx, TurnEnd{ID: "new", Ended: start.Add(61 * time.Second), Outcome: "ok", WorkerCPU: 20 * time.Millisecond, WorkerExit: "success",
		Usage: contracts.UsageByProvider{{Provider: "openrouter", Usage: contracts.Usage{PromptTokens: 900, CompletionTokens: 30}}}}); err != nil {
		t.Fatalf("Turns().Finish after the upgrade = %v", err)
	}
	turns, err := s.Turns().Recent(ctx, 2)
	if err != nil || len(turns) != 2 {
		t.Fatalf("Turns().Recent after the upgrade = %+v, %v", turns, err)
	}
	if n := turns[0]; n.ID != "new" || n.WorkerExit != "success" || n.WorkerCPU != 20*time.Millisecond || n.PromptTokens != 900 || n.CompletionTokens != 30 {
		t.Errorf("new turn = %+v, want the launcher's figures and the tokens", n)
	}
	if o := turns[1]; o.ID != "old" || o.Outcome != "ok" || o.WorkerPeak != 8<<20 || o.WorkerExit != "" || o.WorkerCPU != 0 || o.PromptTokens != 0 || o.CompletionTokens != 0 {
		t.Errorf("old turn after the upgrade = %+v, want it as it was, with empty new figures", o)
	}
}

func TestFailedMigrationRollsBack(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	openStore(t, l).Close()

	saved := migrations
	t.Cleanup(func() { migrations = saved })
	// The first statement succeeds, the second fails: neither may stay.
	migrations = append(migrations[:len(migrations):len(migrations)], `CREATE TABLE half (x INTEGER); CREATE TABLE history (x INTEGER)`)

	if s, err := Open(l); err == nil {
		s.Close()
		t.Fatal("Open with a failing migration = nil error, want one")
	} else if !strings.Contains(err.Error(), fmt.Sprintf("migrate to version %d", len(saved)+1)) {
		t.Errorf("Open with a failing migration = %q, want it to name the step", err)
	}
	db := rawDB(t, l)
	if v := userVersion(t, db); v != len(saved) {
		t.Errorf("user_version after a failed step = %d, want %d", v, len(saved))
	}
	if _, err := db.Exec(`SELECT * FROM half`); err == nil {
		t.Error("a failed migration step left its first table behind")
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	openStore(t, l).Close()
	db := rawDB(t, l)
	if _, err := db.Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	if s, err := Open(l); !errors.Is(err, ErrNewerSchema) {
		if err == nil {
			s.Close()
		}
		t.Errorf("Open of a version 99 database = %v, want ErrNewerSchema", err)
	} else if !strings.Contains(err.Error(), "99") {
		t.Errorf("Open of a version 99 database = %q, want it to give the version", err)
	}
	if s, err := OpenReadOnly(l); !errors.Is(err, ErrNewerSchema) {
		if err == nil {
			s.Close()
		}
		t.Errorf("OpenReadOnly of a version 99 database = %v, want ErrNewerSchema", err)
	}
}

func TestInterruptedTurnsAreRecovered(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	ctx := context.Background()
	s := openStore(t, l)
	if s.Recovered() != 0 {
		t.Errorf("Recovered() of a new store = %d, want 0", s.Recovered())
	}
	start := time.Now().Add(-time.Minute)
	for _, id := range []string{"done", "lost-1", "lost-2"} {
		if err := s.Turns().Start(ctx, TurnStart{ID: id, Kind: "chat", Started: start}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Turns().Finish(ctx, TurnEnd{ID: "done", Ended: start.Add(time.Second), Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	s.Close() // as good as a crash for the two running turns

	again := openStore(t, l)
	if got := again.Recovered(); got != 2 {
		t.Errorf("Recovered() after a crash with 2 running turns = %d, want 2", got)
	}
	turns, err := again.Turns().Recent(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, turn := range turns {
		wantOutcome := OutcomeInterrupted
		if turn.ID == "done" {
			wantOutcome = "ok"
		}
		if turn.Outcome != wantOutcome || turn.Ended.IsZero() {
			t.Errorf("turn %s after recovery: outcome %q, ended %v, want %q and an end", turn.ID, turn.Outcome, turn.Ended, wantOutcome)
		}
	}
	again.Close()
	if third := openStore(t, l); third.Recovered() != 0 {
		t.Errorf("Recovered() on the next open = %d, want 0", third.Recovered())
	}
}

func TestReadOnlyStore(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	ctx := context.Background()
	if s, err := OpenReadOnly(l); err == nil {
		s.Close()
		t.Fatal("OpenReadOnly without a database = nil error, want one")
	} else if !strings.Contains(err.Error(), l.DB()) {
		t.Errorf("OpenReadOnly without a database = %q, want it to name %s", err, l.DB())
	}

	writer := openStore(t, l)
	if err := writer.Turns().Start(ctx, TurnStart{ID: "t1", Kind: "chat", Started: time.UnixMilli(1000), Preview: "hi"}); err != nil {
		t.Fatal(err)
	}

	reader, err := OpenReadOnly(l)
	if err != nil {
		t.Fatalf("OpenReadOnly while the writer is open: %v", err)
	}
	defer reader.Close()
	turns, err := reader.Turns().Recent(ctx, 10)
	if err != nil || len(turns) != 1 || turns[0].ID != "t1" {
		t.Fatalf("reader Turns().Recent = %v, %v, want t1", turns, err)
	}

	// Rows the writer adds after the reader opened are seen too.
	if err := writer.Turns().Start(ctx, TurnStart{ID: "t2", Kind: "chat", Started: time.UnixMilli(2000)}); err != nil {
		t.Fatal(err)
	}
	if err := writer.History().Append(ctx, "t2", "user", "later", time.UnixMilli(2000)); err != nil {
		t.Fatal(err)
	}
	turns, err = reader.Turns().Recent(ctx, 10)
	if err != nil || len(turns) != 2 || turns[0].ID != "t2" {
		t.Fatalf("reader Turns().Recent after a new write = %v, %v, want t2 first", turns, err)
	}
	history, err := reader.History().Recent(ctx, 10)
	if err != nil || len(history) != 1 || history[0].Text != "later" {
		t.Errorf("reader History().Recent = %v, %v, want the writer's message", history, err)
	}

	writes := map[string]error{
		"Turns().Start":     reader.Turns().Start(ctx, TurnStart{ID: "t3", Kind: "chat", Started: time.Now()}),
		"Turns().SetWorker": reader.Turns().SetWorker(ctx, "t1", 7),
		"Turns().Finish":    reader.Turns().Finish(ctx, TurnEnd{ID: "t1", Ended: time.Now(), Outcome: "ok"}),
		"History().Append":  reader.History().Append(ctx, "t1", "user", "x", time.Now()),
		"Keep":              reader.Memories().Keep(ctx, "t1", Memory{Notes: []contracts.Remember{{Text: "x"}}}, time.Now()),
		"AddFaces":          reader.Memories().AddFaces(contracts.AddFace{Name: "party", Glyphs: "(^o^)/"}),
	}
	if _, err := reader.db.Exec(`DELETE FROM turns`); err == nil {
		t.Error("the read-only connection accepted a DELETE")
	}
	for name, err := range writes {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("read-only %s = %v, want ErrReadOnly", name, err)
		}
	}

	// With the writer gone (and its WAL checkpointed away), reading still works.
	writer.Close()
	reader.Close()
	late, err := OpenReadOnly(l)
	if err != nil {
		t.Fatalf("OpenReadOnly after the writer closed: %v", err)
	}
	defer late.Close()
	if turns, err := late.Turns().Recent(ctx, 10); err != nil || len(turns) != 2 {
		t.Errorf("Turns().Recent after the writer closed = %v, %v, want 2 turns", turns, err)
	}
}

func TestDSNEscapesThePath(t *testing.T) {
	root := filepath.Join(t.TempDir(), "odd ?name#1%")
	s := openStore(t, statedir.Layout{Root: root})
	if err := s.History().Append(context.Background(), "t", "user", "hi", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "state.db")); err != nil {
		t.Errorf("the database is not where the layout says: %v", err)
	}
}

// TestEachReaderReadsWhatItNeedsAndNoMore opens a state directory as an
// older core left it on a board (root:shelldon, the memory tree and the
// workspace set-group-ID and readable by that group, which the panel's
// and the broker's users are in) for workers of their own group. Then a
// real second user in the state group (the panel's, say) can read
// neither the memory tree, nor about.md, nor anything of the workspace,
// the owner's .env included; a worker (that user with the workers' group
// too) reads about.md and the workspace, and still not the memory tree;
// about.md and the faces rewritten later stay the workers' alone.
func TestEachReaderReadsWhatItNeedsAndNoMore(t *testing.T) {
	testhost.Root(t)
	cat := testhost.Tool(t, "cat", "coreutils")
	const stateGroup, workerGroup = 4242, 4243
	parent := testhost.ShortDir(t)
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	l := statedir.Layout{Root: filepath.Join(parent, "state")}
	older := map[string]string{"memory/pets.md": "- has a cat named Tom", "workspace/.env": "OPENAI_API_KEY=sk-secret", "workspace/todo.txt": "milk", "about.md": "lives in Lyon"}
	for _, dir := range []string{l.Root, l.MemoryDir(), l.Workspace()} {
		mustDo(t, os.Mkdir(dir, 0o750))
		mustDo(t, os.Chown(dir, 0, stateGroup))
		mustDo(t, os.Chmod(dir, 0o750|os.ModeSetgid))
	}
	for name, content := range older {
		path := filepath.Join(l.Root, name)
		mustDo(t, os.WriteFile(path, []byte(content), 0o640))
		mustDo(t, os.Chown(path, 0, stateGroup))
	}
	s, err := OpenFor(l, statedir.Readers{WorkerGID: workerGroup})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustDo(t, s.Memories().Keep(context.Background(), "t1", Memory{About: "lives in Lyon, has a cat"}, time.Now()))
	mustDo(t, s.Memories().AddFaces(contracts.AddFace{Name: "sly", Glyphs: "(¬‿¬)"}))

	read := func(groups []uint32, path string) error {
		cmd := exec.Command(cat, path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: groups}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, bytes.TrimSpace(out))
		}
		return nil
	}
	panel, worker := []uint32{stateGroup}, []uint32{stateGroup, workerGroup}
	for _, tt := range []struct {
		who    string
		groups []uint32
		path   string
		reads  bool
	}{
		{"the panel", panel, l.MemoryTopic("pets"), false},
		{"the panel", panel, l.About(), false},
		{"the panel", panel, l.Faces(), false},
		{"the panel", panel, filepath.Join(l.Workspace(), ".env"), false},
		{"the panel", panel, filepath.Join(l.Workspace(), "todo.txt"), false},
		{"a worker", worker, l.MemoryTopic("pets"), false},
		{"a worker", worker, l.DB(), false},
		{"a worker", worker, l.About(), true},
		{"a worker", worker, l.Faces(), true},
		{"a worker", worker, l.Directive(), true},
		{"a worker", worker, filepath.Join(l.Workspace(), "todo.txt"), true},
	} {
		if err := read(tt.groups, tt.path); (err == nil) != tt.reads {
			t.Errorf("%s (uid 65534, groups %v) reading %s: %v; want it to read: %v", tt.who, tt.groups, tt.path, err, tt.reads)
		}
	}
}

// TestASecondOpenIsRefusedBeforeItTouchesAnything: while one core holds
// the state directory, another's Open fails with ErrLocked — and leaves
// the first core's running turn as it was, where it once marked it
// interrupted on its way out.
func TestASecondOpenIsRefusedBeforeItTouchesAnything(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	first := openStore(t, l)
	ctx := context.Background()
	if err := first.Turns().Start(ctx, TurnStart{ID: "live", Kind: "chat", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(l); !errors.Is(err, ErrLocked) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("a second Open = %v, want ErrLocked", err)
	} else if !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("the refusal %q does not name the holder", err)
	}
	turns, err := first.Turns().Recent(ctx, 1)
	if err != nil || len(turns) != 1 || !turns[0].Ended.IsZero() || turns[0].Outcome != "" {
		t.Errorf("the live turn after a refused second open = %+v, %v; want it still running", turns, err)
	}
	first.Close()
	if s, err := Open(l); err != nil {
		t.Errorf("Open after the first closed = %v", err)
	} else {
		s.Close()
	}
}

// TestTheLockIsFreeWhenCloseReturns: a process that starts children
// while its core stops (the test binary, the pet's `up` restarting core)
// can reopen the state directory the moment Close returns. A child forked
// but not yet exec'd holds a copy of every descriptor, the lock's too, and
// the flock lives while any copy does.
func TestTheLockIsFreeWhenCloseReturns(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	stop := make(chan struct{})
	var forks sync.WaitGroup
	for range 4 {
		forks.Add(1)
		go func() {
			defer forks.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				exec.Command("/bin/true").Run()
			}
		}()
	}
	defer func() { close(stop); forks.Wait() }()
	for i := range 300 {
		lock, err := lockDir(l)
		if err != nil {
			t.Fatalf("take %d: %v", i, err)
		}
		releaseLock(lock)
	}
}
