package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"shelldon/daemon/selfcode"
	"shelldon/daemon/state/atomicfile"
	"shelldon/sandbox"
)

// Existing tests are read-only: a change may add tests, but a test
// function that was there must stay as it was. The comparison is of
// Python's own syntax trees (ast.dump), computed in the sandbox, so that
// reformatting and comments do not count as changes, while a changed
// assertion does.

// testFunctionsScript prints, as JSON, each named file's test functions
// (module level and in Test* classes) and their syntax trees; a file that
// does not parse maps to null.
const testFunctionsScript = selfcode.TestTreesPython + `
import json, sys
out = {}
for path in sys.argv[1:]:
    try:
        out[path] = tests(ast.parse(open(path, encoding="utf-8").read(), path))
    except Exception:
        out[path] = None
print(json.dumps(out))
`

// testSnapshot is the workspace's test files before a change: their bytes
// and their test functions' trees.
type testSnapshot struct {
	files map[string][]byte            // workspace-relative path → content
	funcs map[string]map[string]string // path → function → tree
}

// snapshotTests reads the test files of the workspace and their test
// functions; an empty snapshot when there are none or no sandbox.
func (c *Core) snapshotTests(ctx context.Context) (testSnapshot, error) {
	snap := testSnapshot{files: map[string][]byte{}}
	ws := c.layout.Workspace()
	for _, rel := range testFiles(ws) {
		data, err := os.ReadFile(filepath.Join(ws, rel))
		if err != nil {
			return snap, err
		}
		snap.files[rel] = data
	}
	if len(snap.files) == 0 || c.opts.Sandbox == nil {
		return snap, nil
	}
	funcs, err := c.testFunctions(ctx, slices.Sorted(maps.Keys(snap.files)))
	snap.funcs = funcs
	return snap, err
}

// guardTests compares the test functions after a change with the
// snapshot from before it, puts back every file whose existing test
// functions changed or vanished, and says what it put back and why.
func (c *Core) guardTests(ctx context.Context, before testSnapshot) (string, error) {
	if len(before.funcs) == 0 {
		return "", nil
	}
	ws := c.layout.Workspace()
	paths := slices.Sorted(maps.Keys(before.funcs))
	var present []string
	for _, p := range paths {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			present = append(present, p)
		}
	}
	after := map[string]map[string]string{}
	if len(present) > 0 {
		var err error
		if after, err = c.testFunctions(ctx, present); err != nil {
			return "", err
		}
	}
	var notes []string
	for _, p := range paths {
		was := before.funcs[p]
		if was == nil {
			continue // it did not parse before: nothing to hold it to
		}
		now, ok := after[p]
		var broken []string
		for name, tree := range was {
			if !ok || now == nil {
				broken = append(broken, name+" (the file is gone or does not parse)")
			} else if got, ok := now[name]; !ok {
				broken = append(broken, name+" (removed)")
			} else if got != tree {
				broken = append(broken, name+" (changed)")
			}
		}
		if len(broken) == 0 {
			continue
		}
		slices.Sort(broken)
		if err := atomicfile.WriteFile(filepath.Join(ws, p), before.files[p], 0o644); err != nil {
			return "", fmt.Errorf("put back %s: %w", p, err)
		}
		notes = append(notes, fmt.Sprintf("put %s back as it was: existing tests are read-only (%s); you may add new tests", p, strings.Join(broken, ", ")))
	}
	return strings.Join(notes, "\n"), nil
}

// testFunctions runs testFunctionsScript over paths in the sandbox, with
// the workspace read-only.
func (c *Core) testFunctions(ctx context.Context, paths []string) (map[string]map[string]string, error) {
	res, err := c.opts.Sandbox.Run(ctx, sandbox.Spec{
		Argv: append([]string{"python3", "-c", testFunctionsScript}, paths...), Workspace: c.layout.Workspace(), View: sandbox.ReadOnly,
	})
	if err != nil {
		return nil, fmt.Errorf("read the tests' syntax: %w", err)
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("read the tests' syntax: exit %d: %s", res.ExitCode, res.Text())
	}
	var out map[string]map[string]string
	if err := json.Unmarshal(bytes.TrimSpace(res.Output), &out); err != nil {
		return nil, fmt.Errorf("read the tests' syntax: %w", err)
	}
	return out, nil
}

// testFiles lists the workspace's pytest files (test_*.py, *_test.py),
// relative, outside hidden directories and the pet's own tool folders.
func testFiles(workspace string) []string {
	var files []string
	filepath.WalkDir(workspace, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable corner holds no tests we can run
		}
		name := d.Name()
		if d.IsDir() {
			if path != workspace && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "tools")) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && strings.HasSuffix(name, ".py") && (strings.HasPrefix(name, "test_") || strings.HasSuffix(name, "_test.py")) {
			rel, _ := filepath.Rel(workspace, path)
			files = append(files, rel)
		}
		return nil
	})
	return files
}
