package approved

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"shelldon/beneath"
	"shelldon/daemon/selfcode"
	"shelldon/policy"
)

// Existing tests are read-only: a change may add tests, but a test
// function that was there must stay as it was. The comparison is of
// Python's own syntax trees, read in the sandbox, so that reformatting
// and comments do not count as changes while a changed assertion does.

// Bounds of the walk for test files: a workspace may be large, and a
// change must not wait on a walk of all of it.
const (
	maxTestFiles   = 500
	maxWalkEntries = 20000
	maxTestBytes   = 1 << 20
)

// skippedDirs are the directories pytest does not look into by default
// (norecursedirs), besides the hidden ones: a test there is never run, so
// it holds nothing to guard.
var skippedDirs = []string{"build", "dist", "node_modules", "venv", "CVS", "_darcs", "{arch}", "__pycache__"}

// guard holds the workspace's tests as they were before a change.
type guard struct {
	r     *Runner
	ws    *beneath.Root
	turn  string            // whose approved change it guards
	files map[string][]byte // path → content
}

// openGuard opens the workspace and reads its test files' bytes as they
// are, for the change of turn's approved request. Their syntax is read
// only if the change touches them (check): a change that leaves the tests
// alone, as most do, costs no sandbox start of the guard's.
func (r *Runner) openGuard(turn string) (guard, error) {
	ws, err := beneath.Open(r.Workspace)
	if err != nil {
		return guard{}, fmt.Errorf("open the workspace: %w", err)
	}
	g := guard{r: r, ws: ws, turn: turn, files: map[string][]byte{}}
	for _, rel := range testFiles(ws) {
		data, err := ws.ReadFile(rel, maxTestBytes)
		if err != nil {
			continue // unreadable now: nothing to put back later
		}
		g.files[rel] = data
	}
	return g, nil
}

func (g guard) close() {
	if g.ws != nil {
		g.ws.Close()
	}
}

// check finds the test files the change touched (their bytes differ, or
// they are gone), compares their test functions after it with those
// before, in one sandbox run, puts back every file whose existing test
// functions changed or vanished, and says what it put back and why (""
// when nothing).
func (g guard) check(ctx context.Context) string {
	touched := map[string][]byte{}
	for p, before := range g.files {
		if now, err := g.ws.ReadFile(p, maxTestBytes); err != nil || !bytes.Equal(now, before) {
			touched[p] = before
		}
	}
	if len(touched) == 0 || g.r.Sandbox == nil {
		return ""
	}
	scratch := g.r.Scratch
	if scratch == "" {
		scratch = os.TempDir()
	}
	was, now, err := selfcode.TestTreesBeforeAfter(ctx, g.r.Sandbox, g.r.Workspace, scratch, g.turn, touched)
	if err != nil {
		g.r.Log.Error("checking the tests after a change", "err", err)
		return "(the tests could not be checked after the change: " + err.Error() + ")"
	}
	var notes []string
	for _, p := range slices.Sorted(maps.Keys(touched)) {
		if was[p] == nil {
			continue // it did not parse before: nothing to hold it to
		}
		broken := policy.BrokenTests(was[p], now[p])
		if len(broken) == 0 {
			continue
		}
		if err := g.putBack(p); err != nil {
			notes = append(notes, fmt.Sprintf("could not put %s back (%v); existing tests are read-only", p, err))
			continue
		}
		g.r.Log.Warn("put back rewritten tests", "path", p, "what", strings.Join(broken, ", "))
		notes = append(notes, fmt.Sprintf("put %s back as it was: existing tests are read-only (%s); you may add new tests", p, strings.Join(broken, ", ")))
	}
	return strings.Join(notes, "\n")
}

// putBack writes a test file as it was, beneath the workspace: a link or
// a directory put where it was is replaced, never written through.
func (g guard) putBack(rel string) error {
	if dir := path.Dir(rel); dir != "." {
		if err := g.ws.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if info, err := g.ws.Lstat(rel); err == nil && info.IsDir() {
		if err := g.ws.RemoveAll(rel); err != nil {
			return err
		}
	}
	return g.ws.WriteFile(rel, g.files[rel], 0o644)
}

// testFiles lists the workspace's pytest files (test_*.py, *_test.py),
// relative, walking without following a link and skipping only what
// pytest skips by default: hidden directories and its norecursedirs.
func testFiles(ws *beneath.Root) []string {
	var files []string
	seen := 0
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		entries, err := ws.ReadDir(dir)
		if err != nil || depth > 32 {
			return
		}
		for _, e := range entries {
			seen++
			if seen > maxWalkEntries || len(files) >= maxTestFiles {
				return
			}
			name := e.Name()
			rel := path.Join(dir, name)
			switch {
			case e.IsDir():
				if !strings.HasPrefix(name, ".") && !slices.Contains(skippedDirs, name) && !strings.HasSuffix(name, ".egg") {
					walk(rel, depth+1)
				}
			case e.Type().IsRegular() && strings.HasSuffix(name, ".py") && (strings.HasPrefix(name, "test_") || strings.HasSuffix(name, "_test.py")):
				files = append(files, rel)
			}
		}
	}
	walk(".", 0)
	return files
}

// HasTests reports whether the workspace has a test file pytest would
// run.
func HasTests(workspace string) bool {
	ws, err := beneath.Open(workspace)
	if err != nil {
		return false
	}
	defer ws.Close()
	return len(testFiles(ws)) > 0
}
