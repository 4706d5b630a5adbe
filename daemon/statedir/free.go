package statedir

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// LowFree is the free space under which the state directory is in danger:
// a turn's writes, a backup of the database and the journal need a few
// MiB, and a full card fails them all.
const LowFree = 64 << 20

// Free is how many bytes the state directory's file system has free for
// core.
func (l Layout) Free() (int64, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(l.Root, &fs); err != nil {
		return 0, fmt.Errorf("free space of %s: %w", l.Root, err)
	}
	return int64(fs.Bavail) * int64(fs.Bsize), nil
}
