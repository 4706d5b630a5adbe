package state

import (
	"context"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"shelldon/daemon/procmem"
)

// anonymousKB is the process's resident anonymous memory (RssAnon).
func anonymousKB(t *testing.T) int64 {
	t.Helper()
	bytes, ok := procmem.Self("RssAnon")
	if !ok {
		t.Fatal("/proc/self/status has no RssAnon")
	}
	return bytes >> 10
}

// TestFreedSQLiteMemoryGoesBack: after the backup and another connection
// have read a few megabytes of the database and closed, the memory SQLite
// freed is returned to the kernel by ReturnFreedMemory, not kept by
// libc's allocator for reuse (up to 4 MiB a size class), which the Go
// collector cannot reach: core kept it between turns for good.
func TestFreedSQLiteMemoryGoesBack(t *testing.T) {
	s := newStore(t)
	db := rawDB(t, s.layout)
	ctx := context.Background()
	for _, q := range []string{
		`CREATE TABLE ballast(id INTEGER PRIMARY KEY, v TEXT)`,
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 12000)
		 INSERT INTO ballast(v) SELECT printf('%.300c', 'x') FROM n`,
	} {
		_, err := db.ExecContext(ctx, q)
		mustDo(t, err)
	}
	var n int
	mustDo(t, db.QueryRowContext(ctx, `SELECT count(*) FROM ballast WHERE v LIKE '%y%'`).Scan(&n))
	mustDo(t, db.Close())
	mustDo(t, s.Backup(ctx))
	debug.FreeOSMemory()
	before := anonymousKB(t)
	mustDo(t, ReturnFreedMemory())
	after := anonymousKB(t)
	t.Logf("anonymous memory %d → %d kB", before, after)
	if freed := before - after; freed < 1024 {
		t.Errorf("ReturnFreedMemory returned %d kB of what two closed connections freed, want at least 1024 (anonymous memory %d → %d kB)", freed, before, after)
	}
}

// TestReleaseMemoryEmptiesThePageCache: the store's one connection keeps
// the pages it read in its cache (up to SQLite's 2 MB), live memory that
// ReturnFreedMemory alone cannot return. On the arm64 VM, after 200 turns
// over Telegram, core held 1.7 MB more anonymous memory idle than on this
// machine; ReleaseMemory empties the cache first.
func TestReleaseMemoryEmptiesThePageCache(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for _, q := range []string{
		`CREATE TABLE ballast(id INTEGER PRIMARY KEY, v TEXT)`,
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 12000)
		 INSERT INTO ballast(v) SELECT printf('%.300c', 'x') FROM n`,
	} {
		_, err := s.db.ExecContext(ctx, q)
		mustDo(t, err)
	}
	var n int
	mustDo(t, s.db.QueryRowContext(ctx, `SELECT count(*) FROM ballast WHERE v LIKE '%y%'`).Scan(&n))
	debug.FreeOSMemory()
	mustDo(t, ReturnFreedMemory())
	before := anonymousKB(t)
	mustDo(t, s.ReleaseMemory())
	after := anonymousKB(t)
	t.Logf("anonymous memory %d → %d kB", before, after)
	if freed := before - after; freed < 1024 {
		t.Errorf("ReleaseMemory returned %d kB of the page cache that reading 4 MB filled, want at least 1024 (anonymous memory %d → %d kB)", freed, before, after)
	}
	// The store reads on as before, its pages from the kernel's cache.
	mustDo(t, s.db.QueryRowContext(ctx, `SELECT count(*) FROM ballast`).Scan(&n))
	if n != 12000 {
		t.Errorf("after ReleaseMemory the store counts %d rows, want 12000", n)
	}
}

// TestReleaseMemoryLeavesNothingRunning: ReleaseMemory runs as a step of
// core's release, just before the release lets go of the binary's pages,
// so nothing of it may run on after it returns. A statement run under a
// context that can end has the driver watch the context from a goroutine
// of its own, which ends only after the statement does: it mapped back
// 0.4 MB of core's binary after each release, held until the next.
func TestReleaseMemoryLeavesNothingRunning(t *testing.T) {
	s := newStore(t)
	mustDo(t, s.ReleaseMemory()) // the statement's first run prepares it
	// One P: a goroutine the call left runnable cannot run before the
	// look below, which stops the world to take every goroutine's stack.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	mustDo(t, s.ReleaseMemory())
	stacks := make([]byte, 1<<20)
	stacks = stacks[:runtime.Stack(stacks, true)]
	for _, g := range strings.Split(string(stacks), "\n\n") {
		if strings.Contains(g, "modernc.org/sqlite") {
			t.Errorf("after ReleaseMemory returned, a goroutine of the SQLite driver runs on:\n%s", g)
		}
	}
}
