package testhost

import (
	"errors"
	"os"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// SmallDisk mounts a tmpfs of size bytes on a fresh directory with a short
// path (ShortDir) and returns it, for a test that fills the disk under
// what it runs; it is unmounted at cleanup. It needs root.
func SmallDisk(t testing.TB, size int64, mode os.FileMode) string {
	t.Helper()
	Root(t)
	dir := ShortDir(t)
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.FormatInt(size, 10)+",mode="+strconv.FormatUint(uint64(mode.Perm()), 8)); err != nil {
		t.Fatalf("mount a small tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// FillDisk writes to path until its file system is full.
func FillDisk(t testing.TB, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 64<<10)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			return
		}
	}
}
