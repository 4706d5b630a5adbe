package selfcode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"shelldon/sandbox"
)

// Sandbox runs one command in a throwaway container: [sandbox.Sandbox].
type Sandbox interface {
	Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error)
}

// forbiddenModules may not be imported by a self-coded tool: the model
// SDKs (a tool that calls a model is a way around the broker and its
// budget) and shelldon itself.
var forbiddenModules = []string{"openai", "anthropic", "google", "litellm", "zhipuai", "ollama", "shelldon"}

// gateLimits bound every step of the gate.
var gateLimits = sandbox.Limits{Memory: 256 << 20, Tasks: 32, Wall: 30 * time.Second, Output: 16 << 10}

// TestTreesPython defines tests(tree), which maps the test functions of
// a parsed pytest file (module level and in Test* classes) to their
// syntax trees: what "the same test" means wherever existing tests must
// be kept.
const TestTreesPython = `
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
// neither, and prints the findings as JSON: forbidden imports, imports it
// cannot verify (a dynamic argument), convention problems, the
// DESCRIPTION and PARAMS_SCHEMA read as literals, and, given the live
// version's test, the existing test functions the new test changed or
// dropped.
const checkScript = TestTreesPython + `
import ast, json, sys
module, test, live, forbidden = sys.argv[1], sys.argv[2], sys.argv[3], set(sys.argv[4].split(","))
out = {"forbidden": [], "unverifiable": [], "convention": [], "description": "", "schema": None, "broken_tests": []}
def root(name): return (name or "").split(".")[0]
def scan(path, tree):
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Call):
            f = node.func
            dyn = (isinstance(f, ast.Name) and f.id == "__import__") or \
                  (isinstance(f, ast.Attribute) and f.attr == "import_module")
            if dyn:
                if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                    names = [node.args[0].value]
                else:
                    out["unverifiable"].append("%s line %d: an import whose module is computed" % (path, node.lineno))
        for n in names:
            if root(n) in forbidden:
                out["forbidden"].append("%s line %d: %s" % (path, node.lineno, n))
def parse(path):
    try:
        return ast.parse(open(path, encoding="utf-8").read(), path)
    except SyntaxError as e:
        out["convention"].append("%s does not parse: %s (line %s)" % (path, e.msg, e.lineno))
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
if live != "-" and ttree is not None:
    try:
        before = tests(ast.parse(open(live, encoding="utf-8").read()))
    except SyntaxError:
        before = {}
    after = tests(ttree)
    for name, tree in sorted(before.items()):
        if name not in after:
            out["broken_tests"].append(name + " (dropped)")
        elif after[name] != tree:
            out["broken_tests"].append(name + " (changed)")
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

// Gate checks a staged tool in the sandbox. liveTest is the test of the
// version now live, "" for a new tool: an update may add tests but not
// change or drop the live ones.
func Gate(ctx context.Context, sb Sandbox, s Staged, liveTest string) (v Verdict, err error) {
	started := time.Now()
	defer func() { v.Took = time.Since(started) }()
	// The gate sees the pair alone, in a directory of its own.
	dir, err := os.MkdirTemp(s.Dir, ".gate-"+s.Stem+"-")
	if err != nil {
		return Verdict{}, fmt.Errorf("gate %s: %w", s.Stem, err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		return Verdict{}, fmt.Errorf("gate %s: %w", s.Stem, err)
	}
	live := "-"
	files := map[string]string{filepath.Base(s.Module): s.Module, filepath.Base(s.Test): s.Test}
	for name, from := range files {
		data, err := os.ReadFile(from)
		if err != nil {
			return Verdict{}, fmt.Errorf("gate %s: %w", s.Stem, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return Verdict{}, fmt.Errorf("gate %s: %w", s.Stem, err)
		}
	}
	if liveTest != "" {
		live = "live_test.txt" // not a name pytest collects
		if err := os.WriteFile(filepath.Join(dir, live), []byte(liveTest), 0o644); err != nil {
			return Verdict{}, fmt.Errorf("gate %s: %w", s.Stem, err)
		}
	}

	res, err := sb.Run(ctx, sandbox.Spec{
		Argv:      []string{"python3", "-c", checkScript, filepath.Base(s.Module), filepath.Base(s.Test), live, strings.Join(forbiddenModules, ",")},
		Workspace: dir, View: sandbox.ReadOnly, Limits: gateLimits,
	})
	if err != nil {
		return Verdict{}, fmt.Errorf("gate %s: the checks could not run: %w", s.Stem, err)
	}
	if res.ExitCode != 0 {
		return Verdict{}, fmt.Errorf("gate %s: the checks failed to run: exit %d: %s", s.Stem, res.ExitCode, res.Text())
	}
	var found struct {
		Forbidden    []string       `json:"forbidden"`
		Unverifiable []string       `json:"unverifiable"`
		Convention   []string       `json:"convention"`
		BrokenTests  []string       `json:"broken_tests"`
		Description  string         `json:"description"`
		Schema       map[string]any `json:"schema"`
	}
	dec := json.NewDecoder(bytes.NewReader(res.Output))
	if err := dec.Decode(&found); err != nil {
		return Verdict{}, fmt.Errorf("gate %s: reading the checks: %w", s.Stem, err)
	}
	v = Verdict{Unverifiable: found.Unverifiable, Description: found.Description, Schema: found.Schema}
	switch {
	case len(found.Forbidden) > 0:
		v.Step, v.Why = "import check", "it imports what a self-coded tool may not (model SDKs, shelldon): "+strings.Join(found.Forbidden, "; ")
		return v, nil
	case len(found.Convention) > 0:
		v.Step, v.Why = "convention check", strings.Join(found.Convention, "; ")
		return v, nil
	case len(found.BrokenTests) > 0:
		v.Step, v.Why = "existing tests", "an update may add tests but not change or drop the live ones: "+strings.Join(found.BrokenTests, ", ")
		return v, nil
	}

	res, err = sb.Run(ctx, sandbox.Spec{
		Argv:      []string{"python3", "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", filepath.Base(s.Test)},
		Workspace: dir, View: sandbox.Scratch, Limits: gateLimits,
	})
	if err != nil {
		return Verdict{}, fmt.Errorf("gate %s: pytest could not run: %w", s.Stem, err)
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
