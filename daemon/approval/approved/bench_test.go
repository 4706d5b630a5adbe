package approved

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"shelldon/sandbox"
	"shelldon/sandbox/image/imagetest"
)

// BenchmarkApprovedCommandWithTests is one approved run_shell, from the
// owner's tap to its answer, in a workspace with a test file it does not
// touch, through the real sandbox: the command's container, and whatever
// the read-only-tests guard starts besides.
func BenchmarkApprovedCommandWithTests(b *testing.B) {
	img := imagetest.Image(b)
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	g := newRig(b)
	g.r.Sandbox = sb
	if err := os.WriteFile(filepath.Join(g.ws, "test_sum.py"), []byte("def test_sum():\n    assert 1 + 1 == 2\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	req := g.approved("run_shell", map[string]string{"command": "echo noted >> notes.txt"})
	for b.Loop() {
		if res := carry(g.r, context.Background(), req); res.Applied == nil {
			b.Fatalf("the command applied nothing: %+v", res)
		}
	}
}
