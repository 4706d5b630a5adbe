package sandbox

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"shelldon/daemon/fetch"
	"shelldon/testhost"
)

// The cost of what a run adds around nspawn, piece by piece.

// benchMask builds, again and again, the mask of a workspace of files
// files, 100 to a directory and one in a thousand named like a
// credential, in a run's file system as a run does.
func benchMask(b *testing.B, files int) {
	testhost.Root(b) // the run's file system is a mount
	ws := b.TempDir()
	for i := range files {
		dir := filepath.Join(ws, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("e%02d", i%100/20))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		name := fmt.Sprintf("f%d.py", i)
		if i%1000 == 0 {
			name = ".env"
		}
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	fsys, err := mountRunFS(b.TempDir(), 1<<30)
	if err != nil {
		b.Fatal(err)
	}
	defer fsys.unmount()
	for i := 0; b.Loop(); i++ {
		if err := buildMask(fsys.path(fmt.Sprint(i)), ws, fileID{}, maxMaskEntries); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMask1000(b *testing.B)   { benchMask(b, 1000) }
func BenchmarkMask100000(b *testing.B) { benchMask(b, 100_000) }

// benchView is what a run adds around nspawn, for a view of a workspace of
// 1000 files: its file system, the mask, the overlays, their teardown.
func benchView(b *testing.B, view View) {
	testhost.Root(b)
	ws := b.TempDir()
	for i := range 1000 {
		dir := filepath.Join(ws, fmt.Sprintf("pkg%02d", i/20))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		name := fmt.Sprintf("mod%02d.py", i%20)
		if i%200 == 0 {
			name = ".env"
		}
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	benchViewsOf(b, &Sandbox{}, ws, view)
}

// benchViewsOf builds s's view of ws again and again, each in a run's file
// system of its own, and takes it down.
func benchViewsOf(b *testing.B, s *Sandbox, ws string, view View) {
	runs := b.TempDir()
	for i := 0; b.Loop(); i++ {
		dir := filepath.Join(runs, fmt.Sprint(i))
		if err := os.Mkdir(dir, 0o700); err != nil {
			b.Fatal(err)
		}
		fsys, err := mountRunFS(dir, DefaultLimits.Disk)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.view(context.Background(), fsys, ws, owner{}, Spec{View: view}, "bench"); err != nil {
			b.Fatal(err)
		}
		if err := fsys.unmount(); err != nil {
			b.Fatal(err)
		}
		if err := removeRunDir(dir); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkViewReadOnly(b *testing.B) { benchView(b, ReadOnly) }
func BenchmarkViewCaptured(b *testing.B) { benchView(b, Captured) }

// BenchmarkEgress is what a networked run adds: the namespace, its
// loopback and the proxy, up and down.
func BenchmarkEgress(b *testing.B) {
	testhost.Root(b)
	for b.Loop() {
		e, err := startEgress(fetch.Dialer{}.DialContext, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		e.close()
	}
}
