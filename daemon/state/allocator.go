package state

import (
	"context"
	"fmt"
	"sync"
	"time"
	_ "unsafe" // go:linkname

	"modernc.org/memory"
)

// SQLite, translated to Go by modernc.org, allocates its page caches and
// statements with modernc.org/libc's malloc, one memory.Allocator for the
// whole process outside the Go heap. An empty region of that allocator is
// kept for reuse, up to 4 MiB committed per size class, and libc offers no
// malloc_trim: after the backup's reading connection closes, or a turn's
// statements are finalised, core kept up to 4 MB of anonymous memory it
// would not use again until the next busy stretch (this package's
// TestFreedSQLiteMemoryGoesBack). libc's allocator and the mutex its
// malloc and free take are reached by name; the names are those of the
// modernc.org/libc pinned in go.mod (v1.80.1), and a libc without them
// fails the build, not the pet.

//go:linkname libcAllocator modernc.org/libc.allocator
var libcAllocator memory.Allocator

//go:linkname libcAllocatorMu modernc.org/libc.allocatorMu
var libcAllocatorMu sync.Mutex

// ReturnFreedMemory returns to the kernel the empty regions SQLite's
// allocator keeps for reuse (memory.Allocator.Trim), leaving every live
// allocation where it is. Core does it when it lets go of its memory
// after a quiet spell (Store.ReleaseMemory), when the next allocations
// mapping fresh regions costs nothing anyone waits for.
func ReturnFreedMemory() error {
	libcAllocatorMu.Lock()
	defer libcAllocatorMu.Unlock()
	return libcAllocator.Trim()
}

// releaseWait bounds how long ReleaseMemory waits for the store's
// connection, which a transaction may hold.
const releaseWait = 5 * time.Second

// ReleaseMemory lets go of what SQLite holds for the store between turns:
// the page cache of its connection, up to SQLite's 2 MB of pages it read
// (PRAGMA shrink_memory; the next query reads the few pages it needs
// again, from the kernel's page cache), and then the regions SQLite's
// allocator holds free (ReturnFreedMemory). Core does it when it lets go
// after a quiet spell (giveback.AlsoRelease).
//
// Only the wait for the connection is bounded. The statement runs under
// a context that never ends, as a statement under one that can has the
// driver watch it from a goroutine that ends after the statement does:
// after the release had let go of the binary's pages, and mapping back
// 0.4 MB of them until the next.
func (s *Store) ReleaseMemory() error {
	ctx, cancel := context.WithTimeout(context.Background(), releaseWait)
	defer cancel()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("empty the state database's page cache: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), `PRAGMA shrink_memory`); err != nil {
		return fmt.Errorf("empty the state database's page cache: %w", err)
	}
	return ReturnFreedMemory()
}
