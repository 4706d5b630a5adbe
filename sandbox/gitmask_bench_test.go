package sandbox

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"shelldon/beneath"
	"shelldon/sandbox/image/imagetest"
	"shelldon/testhost"
)

// What the masks of git's history cost: a project's repository of 100
// files and 200 commits, packed as git gc leaves it, that tracks .env.

// historyWorkspace makes that project: files in ten directories, each
// commit changing three, .env committed at the start, and one file
// changed since, for git diff to show.
func historyWorkspace(b *testing.B) string {
	b.Helper()
	const files, commits = 100, 200
	ws := filepath.Join(b.TempDir(), "ws")
	write := func(f, version int) {
		p := filepath.Join(ws, fmt.Sprintf("pkg%02d/mod%03d.py", f%10, f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, fmt.Appendf(nil, "x = %d\n# version %d\n", f, version), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for f := range files {
		write(f, 0)
	}
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("OPENAI_API_KEY=sk-test-bench\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	testhost.Git(b, ws, "init", "-q")
	testhost.Git(b, ws, "add", "-A")
	testhost.Git(b, ws, "commit", "-qm", "first")
	for c := range commits {
		for k := range 3 {
			write((c*7+k*13)%files, c+1)
		}
		testhost.Git(b, ws, "commit", "-qam", fmt.Sprint(c))
	}
	testhost.Git(b, ws, "gc", "-q")
	write(0, -1)
	return ws
}

// benchGitView is what the masks add to a read-only view of the project
// once its look is kept: the state of .git, the masks written, the real
// object store mounted. With masked false the same tree is no repository
// (its HEAD is renamed), which is what a view cost before.
func benchGitView(b *testing.B, masked bool) {
	testhost.Root(b)
	ws := historyWorkspace(b)
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
	benchViewsOf(b, s, ws, ReadOnly)
}

func BenchmarkViewGitMasked(b *testing.B)   { benchGitView(b, true) }
func BenchmarkViewGitUnmasked(b *testing.B) { benchGitView(b, false) }

// benchGitDiff runs a free `git diff` in the project again and again,
// before each run doing what before does.
func benchGitDiff(b *testing.B, before func(ws string)) {
	ws := historyWorkspace(b)
	sb, err := New(Config{Image: imagetest.Image(b).Root, RunDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	diff := func() {
		res, err := sb.Run(context.Background(), Spec{Argv: []string{"git", "diff"}, Workspace: ws})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("git diff = %d %v: %s", res.ExitCode, err, res.Text())
		}
	}
	diff() // the first look, outside the measure
	for b.Loop() {
		b.StopTimer()
		before(ws)
		b.StartTimer()
		diff()
	}
}

// BenchmarkSandboxGitDiff is a free git diff with the look kept: what the
// masks of git's history cost every run.
func BenchmarkSandboxGitDiff(b *testing.B) { benchGitDiff(b, func(string) {}) }

// BenchmarkSandboxGitDiffAfterACommit is the same git diff after a new
// commit each time: every run looks through the history again.
func BenchmarkSandboxGitDiffAfterACommit(b *testing.B) {
	commits := 0
	benchGitDiff(b, func(ws string) {
		commits++
		testhost.Git(b, ws, "commit", "-q", "--allow-empty", "-m", fmt.Sprint(commits))
	})
}
