package sandbox_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"shelldon/sandbox"
	"shelldon/sandbox/image/imagetest"
)

// freeSpace is what the file system holding dir has free, in bytes.
func freeSpace(t *testing.T, dir string) int64 {
	t.Helper()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	return int64(fs.Bavail) * int64(fs.Bsize) // Bsize is an int32 on 32-bit arm
}

// lowestFreeSpace watches the free space of dir's file system until stop
// is called, which returns the least it saw.
func lowestFreeSpace(t *testing.T, dir string) (stop func() int64) {
	t.Helper()
	lowest := freeSpace(t, dir)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				lowest = min(lowest, freeSpace(t, dir))
			}
		}
	})
	return func() int64 {
		close(done)
		wg.Wait()
		return min(lowest, freeSpace(t, dir))
	}
}

// TestDiskIsBounded: a command that writes until the disk is full, in
// every place it may write, is told the disk is full after the run's
// share, quickly, and the host's disk does not notice.
func TestDiskIsBounded(t *testing.T) {
	img := imagetest.Image(t)
	runs := t.TempDir()
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: runs})
	if err != nil {
		t.Fatal(err)
	}
	const slack = 64 << 20 // what the rest of the machine may write meanwhile
	for _, o := range owners {
		for _, tc := range []struct {
			view sandbox.View
			file string
		}{
			{sandbox.Captured, "/workspace/big"},
			{sandbox.Scratch, "/workspace/big"},
			{sandbox.ReadOnly, "/tmp/big"},
			{sandbox.Captured, "/var/tmp/big"},
		} {
			t.Run(o.Name+"/"+tc.view.String()+tc.file, func(t *testing.T) {
				ws := workspace(t, o.UID, map[string]string{"a.txt": "a"})
				before := freeSpace(t, runs)
				stop := lowestFreeSpace(t, runs)
				started := time.Now()
				// The memory limit is raised so that it is the disk's that
				// the command meets: what a run writes is in memory too.
				res, err := sb.Run(context.Background(), sandbox.Spec{View: tc.view, Workspace: ws,
					Argv:   sh("dd if=/dev/zero of=" + tc.file + " bs=1M count=1500; echo dd exit $?"),
					Limits: sandbox.Limits{Memory: 1 << 30, Wall: time.Minute}})
				took := time.Since(started)
				lowest := stop()
				if err != nil {
					t.Fatal(err)
				}
				if res.Changes != nil {
					defer res.Changes.Discard()
				}
				if !strings.Contains(res.Text(), "No space left on device") || strings.Contains(res.Text(), "dd exit 0") {
					t.Errorf("dd of 1500 MiB: %s; want it stopped by a full disk", res.Text())
				}
				if took > 15*time.Second {
					t.Errorf("the run took %v", took)
				}
				if used := before - lowest; used > slack {
					t.Errorf("the host's disk lost %d MiB during the run", used>>20)
				}
				if used := before - freeSpace(t, runs); used > slack {
					t.Errorf("the host's disk lost %d MiB after the run, its changes still held", used>>20)
				}
				// A change set still held keeps its file system by a
				// descriptor only: nothing is left mounted.
				if mounts, err := os.ReadFile("/proc/self/mountinfo"); err != nil || strings.Contains(string(mounts), runs) {
					t.Errorf("after the run, mounts under the run directory remain (%v):\n%s", err, mounts)
				}
			})
		}
	}
	entries, err := os.ReadDir(runs)
	if err != nil || len(entries) != 0 {
		t.Errorf("the run directory holds %v (%v), want nothing", entries, err)
	}
}
