package sandbox

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"shelldon/beneath"
	"shelldon/testhost"
)

// benchGitView is what the masks of git's history add to a read-only
// view of a project (100 files, 200 commits, packed, .env tracked) once
// its look is kept: the state of .git, the masks written, the real
// object store mounted. With masked false the same tree is no repository
// (its HEAD is renamed), which is what a view cost before.
func benchGitView(b *testing.B, masked bool) {
	testhost.Root(b)
	testhost.Tool(b, "git", "git")
	ws := b.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=o", "-c", "user.email=o@example.invalid"}, args...)...)
		cmd.Dir = ws
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %q: %v\n%s", args, err, out)
		}
	}
	write := func(name, content string) {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for f := range 100 {
		write(fmt.Sprintf("pkg%02d/mod%03d.py", f%10, f), fmt.Sprintf("x = %d\n", f))
	}
	write(".env", "KEY=1\n")
	git("init", "-q")
	git("add", "-A")
	git("commit", "-qm", "first")
	for c := range 200 {
		write(fmt.Sprintf("pkg%02d/mod%03d.py", c%10, c%100), fmt.Sprintf("x = %d\n# %d\n", c, c))
		git("commit", "-qam", fmt.Sprint(c))
	}
	git("gc", "-q")
	s := &Sandbox{log: slog.New(slog.DiscardHandler)}
	if masked {
		root, err := beneath.Open(ws)
		if err != nil {
			b.Fatal(err)
		}
		state, err := gitRepoState(root, ".git")
		root.Close()
		if err != nil {
			b.Fatal(err)
		}
		// Three masked blobs, as a repository that tracked .env for a while.
		look := gitLook{format: "sha1", masked: []string{
			"13c1469ee4efdf182b6584f89b29d1d4b2e5a3e6", "13df44237930ba2c10787260d5c3d08641dacf54", "d14869e2bd4b9ce5c1d77a89acdabec88cb03c33"}}
		if err := look.replace(); err != nil {
			b.Fatal(err)
		}
		s.looks.put(ws+"\x00.git", state, look)
	} else if err := os.Rename(filepath.Join(ws, ".git", "HEAD"), filepath.Join(ws, ".git", "HEAD.not")); err != nil {
		b.Fatal(err)
	}
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
		if _, _, err := s.view(context.Background(), fsys, ws, owner{}, Spec{View: ReadOnly}, "bench"); err != nil {
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

func BenchmarkViewGitMasked(b *testing.B)   { benchGitView(b, true) }
func BenchmarkViewGitUnmasked(b *testing.B) { benchGitView(b, false) }
