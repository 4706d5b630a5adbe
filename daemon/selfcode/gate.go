package selfcode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"shelldon/policy"
	"shelldon/sandbox"
)

// Sandbox runs one command in a throwaway container: [sandbox.Sandbox].
type Sandbox interface {
	Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error)
}

// gateLimits bound every step of the gate. A tool's test writes little,
// and its disk, which lives in memory, stays well below its memory, so
// that a test that fills it is told the disk is full.
var gateLimits = sandbox.Limits{Memory: 256 << 20, Tasks: 32, Wall: 30 * time.Second, Output: 16 << 10, Disk: 64 << 20}

// testTreesPython defines tests(tree), which maps the test functions of
// a parsed pytest file (module level and in Test* classes) to their
// syntax trees: what "the same test" means wherever existing tests must
// be kept.
const testTreesPython = `
import ast
def tests(tree):
    funcs = {}
    def visit(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                funcs[prefix + node.name] = ast.dump(node)
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                visit(node.body, prefix + node.name + ".")
    visit(tree.body, "")
    return funcs
`

// checkScript reads the module and the test with Python's ast, importing
// neither, and prints what it found as JSON: every import (with a
// computed one marked), the convention problems, the DESCRIPTION and
// PARAMS_SCHEMA read as literals, and the test functions of the new test
// and of the live version's test (for an update). The rules are Go's.
const checkScript = testTreesPython + `
import json, sys
module, test, live = sys.argv[1], sys.argv[2], sys.argv[3]
out = {"imports": [], "convention": [], "tests": None, "live_tests": None}
def scan(path, tree):
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == "__import__") or (isinstance(f, ast.Attribute) and f.attr == "import_module"):
                if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                    names = [node.args[0].value]
                else:
                    out["imports"].append({"file": path, "line": node.lineno, "computed": True})
        for n in names:
            out["imports"].append({"file": path, "line": node.lineno, "module": n})
def parse(path):
    try:
        return ast.parse(open(path, encoding="utf-8").read(), path)
    except (SyntaxError, ValueError) as e:
        out["convention"].append("%s does not parse: %s (line %s)" % (path, getattr(e, "msg", e), getattr(e, "lineno", "?")))
        return None
mtree, ttree = parse(module), parse(test)
for p, t in ((module, mtree), (test, ttree)):
    if t is not None:
        scan(p, t)
if mtree is not None:
    found = {}
    for node in mtree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "run":
            found["run"] = node
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = node.value
    if "run" not in found:
        out["convention"].append("no module-level function run(**kwargs)")
    for name, kind in (("DESCRIPTION", str), ("PARAMS_SCHEMA", dict)):
        if name not in found:
            out["convention"].append("no module-level %s" % name)
            continue
        try:
            value = ast.literal_eval(found[name])
        except Exception:
            out["convention"].append("%s is not a literal" % name)
            continue
        if not isinstance(value, kind):
            out["convention"].append("%s is not a %s" % (name, kind.__name__))
        elif name == "DESCRIPTION":
            out["description"] = value
        else:
            if value.get("type") != "object" or not isinstance(value.get("properties", {}), dict):
                out["convention"].append('PARAMS_SCHEMA is not a JSON schema of an object ({"type": "object", "properties": {...}})')
            out["schema"] = value
if ttree is not None:
    out["tests"] = tests(ttree)
if live != "-":
    try:
        out["live_tests"] = tests(ast.parse(open(live, encoding="utf-8").read()))
    except (SyntaxError, ValueError):
        out["live_tests"] = {}
print(json.dumps(out))
`

// Verdict is what the gate found.
type Verdict struct {
	// Passed is true when every step passed.
	Passed bool
	// Step names the step that failed: "import check", "convention
	// check", "existing tests" or "pytest"; empty on a pass.
	Step string
	// Why says what failed, for the owner and the model.
	Why string
	// Output is the pytest run's output (capped).
	Output string
	// Unverifiable lists imports the check could not verify; they do not
	// fail the gate but go in the owner's approval message.
	Unverifiable []string
	// Description and Schema are the tool's, read as literals.
	Description string
	Schema      map[string]any
	Took        time.Duration
}

// LiveTestFile is the name of the live version's test in a staging
// directory (not one pytest collects); an update must keep its tests.
const LiveTestFile = "live_test.txt"

// Gate checks the proposal stem staged in dir — <stem>.py, test_<stem>.py
// and, for an update, LiveTestFile — in the sandbox, which sees dir as its
// workspace.
func Gate(ctx context.Context, sb Sandbox, dir, stem string) (v Verdict, err error) {
	started := time.Now()
	defer func() { v.Took = time.Since(started) }()
	module, test := stem+".py", "test_"+stem+".py"
	live := "-"
	if _, err := os.Stat(filepath.Join(dir, LiveTestFile)); err == nil {
		live = LiveTestFile
	}
	res, err := sb.Run(ctx, sandbox.Spec{
		Argv:      policy.Python("-c", checkScript, module, test, live),
		Workspace: dir, View: sandbox.ReadOnly, Limits: gateLimits,
	})
	if err != nil {
		return Verdict{}, fmt.Errorf("gate %s: the checks could not run: %w", stem, err)
	}
	if res.ExitCode != 0 {
		return Verdict{}, fmt.Errorf("gate %s: the checks failed to run: exit %d: %s", stem, res.ExitCode, res.Text())
	}
	var found struct {
		Imports     []policy.ToolImport `json:"imports"`
		Convention  []string            `json:"convention"`
		Description string              `json:"description"`
		Schema      map[string]any      `json:"schema"`
		Tests       map[string]string   `json:"tests"`
		LiveTests   map[string]string   `json:"live_tests"`
	}
	if err := json.NewDecoder(bytes.NewReader(res.Output)).Decode(&found); err != nil {
		return Verdict{}, fmt.Errorf("gate %s: reading the checks: %w", stem, err)
	}
	forbidden, unverifiable := policy.JudgeToolImports(found.Imports)
	v = Verdict{Unverifiable: unverifiable, Description: found.Description, Schema: found.Schema}
	broken := policy.BrokenTests(found.LiveTests, found.Tests)
	switch {
	case len(forbidden) > 0:
		v.Step, v.Why = "import check", "it imports what a self-coded tool may not (model SDKs, shelldon): "+strings.Join(forbidden, "; ")
		return v, nil
	case len(found.Convention) > 0:
		v.Step, v.Why = "convention check", strings.Join(found.Convention, "; ")
		return v, nil
	case live != "-" && len(broken) > 0:
		v.Step, v.Why = "existing tests", "an update may add tests but not change or drop the live ones: "+strings.Join(broken, ", ")
		return v, nil
	}

	res, err = sb.Run(ctx, sandbox.Spec{
		Argv:      policy.Pytest("-q", "-x", test),
		Workspace: dir, View: sandbox.Scratch, Limits: gateLimits,
	})
	if err != nil {
		return Verdict{}, fmt.Errorf("gate %s: pytest could not run: %w", stem, err)
	}
	v.Output = res.Text()
	switch {
	case res.TimedOut:
		v.Step, v.Why = "pytest", fmt.Sprintf("the test ran past %v", gateLimits.Wall)
	case res.OutOfMemory:
		v.Step, v.Why = "pytest", "the test ran out of memory"
	case res.ExitCode != 0:
		v.Step, v.Why = "pytest", fmt.Sprintf("the test failed (exit %d)", res.ExitCode)
	default:
		v.Passed = true
	}
	return v, nil
}

// treesScript prints, as JSON, each named file's test functions and their
// syntax trees; a file that does not parse maps to null.
const treesScript = testTreesPython + `
import json, sys
out = {}
for path in sys.argv[1:]:
    try:
        out[path] = tests(ast.parse(open(path, encoding="utf-8").read(), path))
    except Exception:
        out[path] = None
print(json.dumps(out))
`

// beforeMount is where TestTreesBeforeAfter shows the files as they were.
const beforeMount = "/run/shelldon/tests-before" // /run is the container's own tmpfs, where a mount point can be made

// TestTreesBeforeAfter reads, in one sandbox run with the workspace
// read-only, the test functions of each file of before both as it was
// (its content, copied into a directory under scratch that the run sees
// read-only) and as it is in the workspace now: path → function → syntax
// tree, nil for a file that does not parse or, now, is not there. One
// start however many files changed: the read-only-tests rule compares
// the two ([policy.BrokenTests]) only for the files a change touched.
func TestTreesBeforeAfter(ctx context.Context, sb Sandbox, workspace, scratch, turn string, before map[string][]byte) (was, now map[string]map[string]string, err error) {
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		return nil, nil, fmt.Errorf("copy the tests as they were: %w", err)
	}
	dir, err := os.MkdirTemp(scratch, "tests-before-")
	if err != nil {
		return nil, nil, fmt.Errorf("copy the tests as they were: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("copy the tests as they were: %w", err)
	}
	paths := slices.Sorted(maps.Keys(before))
	args := []string{"-c", treesScript}
	for i, p := range paths {
		name := strconv.Itoa(i) + ".py"
		if err := os.WriteFile(filepath.Join(dir, name), before[p], 0o644); err != nil {
			return nil, nil, fmt.Errorf("copy the tests as they were: %w", err)
		}
		args = append(args, beforeMount+"/"+name)
	}
	args = append(args, paths...)
	res, err := sb.Run(ctx, sandbox.Spec{
		Argv: policy.Python(args...), Workspace: workspace, View: sandbox.ReadOnly, Turn: turn,
		Binds: []sandbox.Bind{{Source: dir, Target: beforeMount}},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read the tests' syntax: %w", err)
	}
	if res.ExitCode != 0 {
		return nil, nil, fmt.Errorf("read the tests' syntax: exit %d: %s", res.ExitCode, res.Text())
	}
	var out map[string]map[string]string
	if err := json.Unmarshal(bytes.TrimSpace(res.Output), &out); err != nil {
		return nil, nil, fmt.Errorf("read the tests' syntax: %w", err)
	}
	was, now = map[string]map[string]string{}, map[string]map[string]string{}
	for i, p := range paths {
		was[p], now[p] = out[beforeMount+"/"+strconv.Itoa(i)+".py"], out[p]
	}
	return was, now, nil
}
