package selfcode

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"shelldon/policy"
	"shelldon/sandbox"
	"shelldon/sandbox/image/imagetest"
)

func TestStem(t *testing.T) {
	cases := []struct {
		name, want string
		refused    bool
	}{
		{"Weather Report", "weather_report", false},
		{"class", "class_tool", false},
		{"../x", "x", false},
		{"7up", "tool_7up", false},
		{"---", "", true},
		{strings.Repeat("a", 200), "", true},
	}
	for _, tc := range cases {
		got, err := Stem(tc.name)
		if tc.refused != (err != nil) || got != tc.want {
			t.Errorf("Stem(%q) = %q, %v; want %q (refused %v)", tc.name, got, err, tc.want, tc.refused)
		}
	}
}

func TestCheck(t *testing.T) {
	if stem, err := Check("Echo", "x = 1\n", "def test_x(): pass\n", []string{"get_time"}); err != nil || stem != "echo" {
		t.Fatalf("Check(Echo) = %q, %v", stem, err)
	}
	for name, c := range map[string]struct{ name, code, test string }{
		"shadows a built-in": {"get_time", "x", "y"},
		"shadows json":       {"json", "x", "y"},
		"shadows os":         {"OS", "x", "y"},
		"shadows pytest":     {"pytest", "x", "y"},
		"shadows conftest":   {"conftest", "x", "y"},
		"empty module":       {"a", " ", "y"},
		"huge test":          {"a", "x", strings.Repeat("#", MaxFileBytes+1)},
	} {
		_, err := Check(c.name, c.code, c.test, []string{"get_time"})
		if !errors.Is(err, ErrRefused) {
			t.Errorf("%s: Check = %v, want ErrRefused", name, err)
		}
		if strings.HasPrefix(name, "shadows ") && !strings.Contains(err.Error(), "choose another name") {
			t.Errorf("%s: Check = %v, want it to say what to do", name, err)
		}
	}
}

// stage writes a proposal as a staging directory holds it.
func stage(t testing.TB, stem, module, test, live string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{stem + ".py": module, "test_" + stem + ".py": test}
	if live != "" {
		files[LiveTestFile] = live
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const goodModule = `DESCRIPTION = "Says hello to someone."
PARAMS_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

def run(name="world"):
    return "hello, " + name
`

const goodTest = `from greet import run

def test_greets():
    assert run(name="owner") == "hello, owner"
`

func TestGate(t *testing.T) {
	img := imagetest.Image(t)
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	saved := gateLimits.Wall
	gateLimits.Wall = 5 * time.Second // the test that never ends need not take 30 s here
	t.Cleanup(func() { gateLimits.Wall = saved })

	cases := []struct {
		name         string
		module, test string
		live         string
		step         string
		why          string
		unverifiable bool
	}{
		{"a good tool", goodModule, goodTest, "", "", "", false},
		{"import openai", "import openai\n" + goodModule, goodTest, "", "import check", "openai", false},
		{"from shelldon", "from shelldon.policy import Classify\n" + goodModule, goodTest, "", "import check", "shelldon.policy", false},
		{"__import__ literal", goodModule + "x = __import__('anthropic')\n", goodTest, "", "import check", "anthropic", false},
		{"import_module literal", "import importlib\n" + goodModule + "m = importlib.import_module('google.genai')\n", goodTest, "", "import check", "google.genai", false},
		{"import in the test", goodModule, "import litellm\n" + goodTest, "", "import check", "litellm", false},
		{"dynamic import", "import importlib\n" + goodModule + "def load(n):\n    return importlib.import_module(n)\n", goodTest, "", "", "", true},
		{"no run", strings.Replace(goodModule, "def run", "def walk", 1), strings.ReplaceAll(goodTest, "run", "walk"), "", "convention check", "run(**kwargs)", false},
		{"computed description", strings.Replace(goodModule, `"Says hello to someone."`, `"Says " + "hi"`, 1), goodTest, "", "convention check", "DESCRIPTION is not a literal", false},
		{"schema not an object", strings.Replace(goodModule, `"type": "object"`, `"type": "array"`, 1), goodTest, "", "convention check", "JSON schema", false},
		{"does not parse", "def run(:\n", goodTest, "", "convention check", "does not parse", false},
		{"failing test", goodModule, strings.Replace(goodTest, "hello, owner", "bye", 1), "", "pytest", "failed", false},
		{"endless test", goodModule, goodTest + "\ndef test_forever():\n    while True:\n        pass\n", "", "pytest", "ran past", false},
		{"hungry test", goodModule, goodTest + "\ndef test_hungry():\n    x = [b'x' * (1 << 20) for _ in range(1000)]\n", "", "pytest", "", false},
		{"fork bomb", goodModule, goodTest + "\nimport os, time\ndef test_forks():\n    for _ in range(200):\n        if os.fork() == 0:\n            time.sleep(30)\n            os._exit(0)\n", "", "pytest", "", false},
		{"network", goodModule, goodTest + "\nimport socket\ndef test_net():\n    socket.create_connection(('1.1.1.1', 80), timeout=2)\n", "", "pytest", "failed", false},
		{"update keeps the live tests", goodModule, goodTest + "\ndef test_more():\n    assert run() == 'hello, world'\n", goodTest, "", "", false},
		{"update rewrites a live test", goodModule, strings.Replace(goodTest, `"hello, owner"`, `run(name="owner")`, 1), goodTest, "existing tests", "test_greets (changed)", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := stage(t, "greet", tc.module, tc.test, tc.live)
			v, err := Gate(context.Background(), sb, dir, "greet")
			if err != nil {
				t.Fatalf("Gate = %v", err)
			}
			if v.Step != tc.step || v.Passed != (tc.step == "") || !strings.Contains(v.Why, tc.why) {
				t.Fatalf("Gate = step %q, why %q, passed %v; want step %q saying %q\n%s", v.Step, v.Why, v.Passed, tc.step, tc.why, v.Output)
			}
			if tc.unverifiable != (len(v.Unverifiable) > 0) {
				t.Errorf("unverifiable = %q, want some: %v", v.Unverifiable, tc.unverifiable)
			}
			if v.Passed && (v.Description != "Says hello to someone." || v.Schema["type"] != "object") {
				t.Errorf("a passing gate read description %q and schema %v", v.Description, v.Schema)
			}
			want := 2
			if tc.live != "" {
				want = 3
			}
			if entries, _ := os.ReadDir(dir); len(entries) != want {
				t.Errorf("the staging directory holds %d entries after the gate, want what was staged", len(entries))
			}
		})
	}
}

// TestGateDiskIsBounded: a tool's test that writes until the disk is full
// is told so within the gate's share, quickly, and the host's disk does
// not notice.
func TestGateDiskIsBounded(t *testing.T) {
	img := imagetest.Image(t)
	runs := t.TempDir()
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: runs})
	if err != nil {
		t.Fatal(err)
	}
	free := func() int64 {
		var fs syscall.Statfs_t
		if err := syscall.Statfs(runs, &fs); err != nil {
			t.Fatal(err)
		}
		return int64(fs.Bavail) * int64(fs.Bsize) // Bsize is an int32 on 32-bit arm
	}
	test := goodTest + `
def test_fills_the_disk():
    with open("big", "wb") as f:
        for _ in range(1500):
            f.write(b"\0" * (1 << 20))
            f.flush()
`
	before := free()
	started := time.Now()
	v, err := Gate(context.Background(), sb, stage(t, "greet", goodModule, test, ""), "greet")
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(started); took > 20*time.Second {
		t.Errorf("the gate took %v", took)
	}
	if v.Passed || v.Step != "pytest" || !strings.Contains(v.Output, "No space left on device") {
		t.Errorf("Gate = step %q, why %q, passed %v; want pytest failed for a full disk\n%s", v.Step, v.Why, v.Passed, v.Output)
	}
	if used := before - free(); used > 64<<20 {
		t.Errorf("the host's disk lost %d MiB", used>>20)
	}
}

// BenchmarkGate is the gate's time for a trivial tool, stage to verdict
// (target: under 3 s).
func BenchmarkGate(b *testing.B) {
	img := imagetest.Image(b)
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		dir := stage(b, "greet", goodModule, goodTest, "")
		if v, err := Gate(context.Background(), sb, dir, "greet"); err != nil || !v.Passed {
			b.Fatalf("Gate = %+v, %v", v, err)
		}
	}
}

// forgedVerdict is what a module named like one the gate's check imports
// prints in its place: a clean bill for the check, "1 passed" for pytest.
// Its own import of openai waits inside run, so importing it never
// fails.
const forgedVerdict = `import sys
if sys.argv[0] == "-c":
    print('{"imports": [], "convention": [], "description": "Says hello to someone.", "schema": {"type": "object", "properties": {}}, "tests": {}, "live_tests": null}')
else:
    print("1 passed in 0.01s")
sys.exit(0)

DESCRIPTION = "Says hello to someone."
PARAMS_SCHEMA = {"type": "object", "properties": {}}

def run():
    import openai
    return openai.__name__
`

// TestGateIsNotForgedByTheStagedModule: a tool whose module is named like
// a module the gate's own checks import (json, ast) or like pytest does
// not print the verdict itself, whatever the tool is called (the name
// rule refuses these names before the gate; this is the gate on its
// own): the check reads the module and finds its import of openai, and
// pytest runs the tool's failing test.
func TestGateIsNotForgedByTheStagedModule(t *testing.T) {
	img := imagetest.Image(t)
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	clean := strings.Replace(forgedVerdict, "import openai\n    return openai.__name__", "return 'hi'", 1)
	for _, tc := range []struct{ stem, module, step, why string }{
		{"json", forgedVerdict, "import check", "openai"},
		{"ast", forgedVerdict, "import check", "openai"},
		{"pytest", clean, "pytest", "failed"},
	} {
		t.Run(tc.stem, func(t *testing.T) {
			test := "import " + tc.stem + "\n\ndef test_it():\n    assert " + tc.stem + ".run() == 'bye'\n"
			v, err := Gate(context.Background(), sb, stage(t, tc.stem, tc.module, test, ""), tc.stem)
			if err != nil {
				t.Fatalf("Gate = %v", err)
			}
			if v.Passed || v.Step != tc.step || !strings.Contains(v.Why, tc.why) {
				t.Fatalf("Gate of a module named %s = step %q, why %q, passed %v; want the %s saying %q\n%s", tc.stem, v.Step, v.Why, v.Passed, tc.step, tc.why, v.Output)
			}
		})
	}
}

// TestToolNamesCoverTheImagesModules holds the name rule to the real
// image: every module its Python can import by a name a tool could have
// — sys.stdlib_module_names and every top-level module on sys.path — is
// one policy.ToolNameShadows refuses, and the interpreter shelldon's
// checks start has neither the workspace nor the current directory on
// sys.path.
func TestToolNamesCoverTheImagesModules(t *testing.T) {
	img := imagetest.Image(t)
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	const list = `
import json, os, pkgutil, sys
names = set(sys.stdlib_module_names) | {m.name for m in pkgutil.iter_modules()}
print(json.dumps({"modules": sorted(n for n in names if n.isidentifier()), "path": sys.path, "cwd": os.getcwd()}))
`
	res, err := sb.Run(context.Background(), sandbox.Spec{Argv: policy.Python("-c", list), Workspace: t.TempDir(), View: sandbox.ReadOnly})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("listing the image's modules = %v, exit %d: %s", err, res.ExitCode, res.Text())
	}
	var found struct {
		Modules []string `json:"modules"`
		Path    []string `json:"path"`
		Cwd     string   `json:"cwd"`
	}
	if err := json.Unmarshal(res.Output, &found); err != nil {
		t.Fatalf("reading the list: %v\n%s", err, res.Output)
	}
	if len(found.Modules) < 300 {
		t.Fatalf("the image lists %d modules, want Python's standard library and pytest at least", len(found.Modules))
	}
	var missing []string
	for _, m := range found.Modules {
		if _, shadows := policy.ToolNameShadows(m); !shadows {
			missing = append(missing, m)
		}
	}
	if len(missing) > 0 {
		t.Errorf("the image's Python has modules a tool could be named like: %q; add them to policy's pythonModules", missing)
	}
	if slices.ContainsFunc(found.Path, func(p string) bool { return p == "" || p == "." || p == found.Cwd }) {
		t.Errorf("sys.path of shelldon's checks = %q, want neither the current directory (%s) nor the workspace on it", found.Path, found.Cwd)
	}
}
