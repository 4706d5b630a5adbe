package approved

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"shelldon/beneath"
)

// TestTheGuardSeesEveryTestPytestRuns: every test file pytest would
// collect is guarded, whatever its directory is called (tools, toolshed);
// only what pytest itself skips is left out, and a link is never walked.
func TestTheGuardSeesEveryTestPytestRuns(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	for _, f := range []string{
		"test_top.py", "calc_test.py", "toolshed/test_x.py", "proj/tools/test_y.py", "tools/test_z.py", "tools-staging/test_w.py",
		"deep/er/and/deeper/test_deep.py",
		// pytest does not look into these by default
		".git/test_hidden.py", ".venv/lib/test_v.py", "node_modules/m/test_n.py", "build/test_b.py", "dist/test_d.py",
		"venv/test_venv.py", "pkg.egg/test_egg.py", "__pycache__/test_c.py",
		// not test files
		"helper.py", "test_notes.txt", "tests.py",
	} {
		p := filepath.Join(ws, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("def test(): pass\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "test_outside.py"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "linked")); err != nil {
		t.Fatal(err)
	}
	root, err := beneath.Open(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	got := testFiles(root)
	want := []string{"calc_test.py", "deep/er/and/deeper/test_deep.py", "proj/tools/test_y.py", "test_top.py", "tools-staging/test_w.py", "tools/test_z.py", "toolshed/test_x.py"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("testFiles = %q, want %q", got, want)
	}
}
