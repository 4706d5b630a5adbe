package state

import (
	"context"
	"runtime/debug"
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
