package shelldon

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// pkg is what the rules need to know of one package.
type pkg struct {
	ImportPath string
	Doc        string
	Imports    []string
	Deps       []string
}

// llmLibraries are client libraries that only the broker may use.
var llmLibraries = []string{"github.com/sashabaranov/go-openai"}

// rule is one import rule of docs/architecture.md.
type rule struct {
	name string
	// applies selects the packages the rule constrains.
	applies func(path string) bool
	// forbidden reports why dep may not be reached, or "".
	forbidden func(dep string, direct bool) string
}

func under(prefix string) func(string) bool {
	return func(p string) bool { return p == prefix || strings.HasPrefix(p, prefix+"/") }
}

var rules = []rule{
	{
		name:    "core stays LLM-free",
		applies: under("shelldon/daemon"),
		forbidden: func(dep string, _ bool) string {
			if under("shelldon/broker")(dep) {
				return "core talks to the broker only through envelopes"
			}
			for _, l := range llmLibraries {
				if under(l)(dep) {
					return "an LLM client library belongs in the broker"
				}
			}
			return ""
		},
	},
	{
		name:    "the broker executes nothing",
		applies: under("shelldon/broker"),
		forbidden: func(dep string, direct bool) string {
			switch {
			case under("shelldon/sandbox")(dep), under("shelldon/policy")(dep), under("shelldon/daemon")(dep):
				return "the broker only relays completions"
			case dep == "os/exec" && direct:
				return "the broker may not start programs"
			}
			return ""
		},
	},
	{
		name:    "the worker writes no state",
		applies: under("shelldon/worker"),
		forbidden: func(dep string, _ bool) string {
			if under("shelldon/daemon/state")(dep) {
				return "only core writes state; the worker proposes ops"
			}
			return ""
		},
	},
	{
		name:    "core does not reach into the worker",
		applies: func(p string) bool { return p == "shelldon/daemon" },
		forbidden: func(dep string, _ bool) string {
			if under("shelldon/worker")(dep) {
				return "the checks core shares with the worker live in package tools"
			}
			return ""
		},
	},
	{
		name:    "the shared tool checks belong to no actor",
		applies: under("shelldon/tools"),
		forbidden: func(dep string, _ bool) string {
			if dep == "shelldon/daemon" || under("shelldon/worker")(dep) {
				return "core and the worker import the tools, never the other way"
			}
			return ""
		},
	},
	{
		name: "core's parts do not reach back into core",
		applies: func(p string) bool {
			return slices.ContainsFunc(coreParts, func(part string) bool { return under(part)(p) })
		},
		forbidden: func(dep string, _ bool) string {
			if dep == "shelldon/daemon" {
				return "core hands its parts what they need (small interfaces, function fields); a part that imports core is core again"
			}
			return ""
		},
	},
	{
		name:    "policy depends only on the contracts",
		applies: under("shelldon/policy"),
		forbidden: func(dep string, _ bool) string {
			if under("shelldon")(dep) && !under("shelldon/contracts")(dep) && !under("shelldon/policy")(dep) {
				return "policy decisions must not depend on the actors they judge"
			}
			return ""
		},
	},
	{
		name:    "the panel reaches nothing of core's",
		applies: under("shelldon/panel"),
		forbidden: func(dep string, _ bool) string {
			if under("shelldon/daemon")(dep) {
				return "the panel is a process of its own that only reads the bus; what it shares with core lives beside both (faces, atomicfile, contracts)"
			}
			return ""
		},
	},
	{
		name:    "the vocabulary below the rooms reaches none of them",
		applies: func(p string) bool { return lowerLayer[p] },
		forbidden: func(dep string, _ bool) string {
			for _, room := range []string{"shelldon/daemon", "shelldon/panel", "shelldon/broker", "shelldon/sandbox", "shelldon/cmd"} {
				if under(room)(dep) {
					return "config, contracts, clock, faces and atomicfile are shared by every process: they may not depend on one"
				}
			}
			return ""
		},
	},
	{
		name:    "the state store depends on no part of core",
		applies: under("shelldon/daemon/state"),
		forbidden: func(dep string, _ bool) string {
			if (under("shelldon/daemon")(dep) && !under("shelldon/daemon/state")(dep) && dep != "shelldon/daemon/statedir") || under("shelldon/panel")(dep) {
				return "the store keeps what core's parts decide; it does not ask them (a part validates what it gives the store)"
			}
			return ""
		},
	},
	{
		name:    "policy touches nothing",
		applies: under("shelldon/policy"),
		forbidden: func(dep string, direct bool) string {
			if direct && touching[dep] {
				return "a verdict is a pure function of its inputs: the caller looks at files (beneath) and the network (daemon/fetch) and hands policy what it found"
			}
			return ""
		},
	},
}

// coreParts are the packages core routes to, each with one job split out
// of *daemon.Core (issue 30).
var coreParts = []string{
	"shelldon/daemon/commands",
	"shelldon/daemon/driver",
	"shelldon/daemon/intake",
	"shelldon/daemon/ops",
	"shelldon/daemon/progress",
	"shelldon/daemon/tokencap",
}

// lowerLayer are the packages every process shares, beneath core, the
// panel, the broker and the sandbox.
var lowerLayer = map[string]bool{
	"shelldon/config": true, "shelldon/contracts": true, "shelldon/clock": true,
	"shelldon/faces": true, "shelldon/atomicfile": true, "shelldon/bus": true,
}

// touching are the standard packages (and x/sys) through which code
// reaches the file system, the network, processes or the kernel. policy
// imports none of them itself; a library it uses may (code.dny.dev/ssrf
// imports net for its dialer, of which policy uses only the address
// tables). net/netip and net/url are not here: they parse and compare
// values and open nothing. io/fs is not here either, because policy's
// change sets carry an entry's fs.FileMode; TestPolicyUsesFSOnlyForTypes
// holds that nothing else of io/fs is used.
var touching = map[string]bool{
	"os": true, "os/exec": true, "os/signal": true, "os/user": true,
	"syscall": true, "golang.org/x/sys/unix": true, "plugin": true,
	"net": true, "net/http": true, "net/rpc": true, "net/smtp": true,
	"path/filepath": true, "io/ioutil": true, "embed": true,
}

// violations checks pkgs against rules.
func violations(pkgs []pkg, rules []rule) []string {
	var out []string
	for _, p := range pkgs {
		if strings.HasSuffix(p.ImportPath, ".test") || strings.HasSuffix(p.ImportPath, "_test") {
			continue
		}
		direct := map[string]bool{}
		for _, d := range p.Imports {
			direct[d] = true
		}
		for _, r := range rules {
			if !r.applies(p.ImportPath) {
				continue
			}
			for _, dep := range p.Deps {
				if why := r.forbidden(dep, direct[dep]); why != "" {
					out = append(out, fmt.Sprintf("%s: %s reaches %s: %s", r.name, p.ImportPath, dep, why))
				}
			}
		}
	}
	return out
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Doc,Imports,Deps", "./...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 5 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

func TestImportRules(t *testing.T) {
	for _, v := range violations(listPackages(t), rules) {
		t.Error(v)
	}
}

// TestImportRulesCatch proves each rule can fail, so a rule that silently
// matches nothing is noticed.
func TestImportRulesCatch(t *testing.T) {
	bad := []pkg{
		{ImportPath: "shelldon/daemon", Deps: []string{"shelldon/broker"}},
		{ImportPath: "shelldon/daemon/hub", Deps: []string{"github.com/sashabaranov/go-openai"}},
		{ImportPath: "shelldon/broker", Imports: []string{"os/exec"}, Deps: []string{"os/exec"}},
		{ImportPath: "shelldon/broker", Deps: []string{"shelldon/daemon/state"}},
		{ImportPath: "shelldon/worker", Deps: []string{"shelldon/daemon/state"}},
		{ImportPath: "shelldon/policy", Deps: []string{"shelldon/daemon/statedir"}},
		{ImportPath: "shelldon/daemon", Deps: []string{"shelldon/worker/tools"}},
		{ImportPath: "shelldon/tools", Deps: []string{"shelldon/daemon"}},
		{ImportPath: "shelldon/tools", Deps: []string{"shelldon/worker"}},
		{ImportPath: "shelldon/policy", Imports: []string{"os"}, Deps: []string{"os"}},
		{ImportPath: "shelldon/policy", Imports: []string{"net"}, Deps: []string{"net"}},
		{ImportPath: "shelldon/policy", Imports: []string{"syscall"}, Deps: []string{"syscall"}},
		{ImportPath: "shelldon/daemon/progress", Deps: []string{"shelldon/daemon"}},
		{ImportPath: "shelldon/panel", Deps: []string{"shelldon/daemon/state/atomicfile"}},
		{ImportPath: "shelldon/config", Deps: []string{"shelldon/daemon/mood"}},
		{ImportPath: "shelldon/daemon/state", Deps: []string{"shelldon/daemon/schedule"}},
		{ImportPath: "shelldon/daemon/state", Deps: []string{"shelldon/panel/faces"}},
	}
	for _, p := range bad {
		if v := violations([]pkg{p}, rules); len(v) != 1 {
			t.Errorf("violations(%s -> %v) = %q, want exactly one", p.ImportPath, p.Deps, v)
		}
	}
	fine := []pkg{
		{ImportPath: "shelldon/broker", Deps: []string{"os/exec"}}, // reached only through the standard library
		{ImportPath: "shelldon/policy", Deps: []string{"shelldon/contracts"}},
		{ImportPath: "shelldon/policy", Deps: []string{"os", "net"}}, // reached only through a library
		{ImportPath: "shelldon/policy", Imports: []string{"net/netip", "net/url", "io/fs"}, Deps: []string{"net/netip", "net/url", "io/fs"}},
		{ImportPath: "shelldon/worker", Deps: []string{"shelldon/daemon/statedir"}},
		{ImportPath: "shelldon/worker", Deps: []string{"shelldon/tools"}},
		{ImportPath: "shelldon/daemon", Deps: []string{"shelldon/tools"}},
		{ImportPath: "shelldon/daemon/progress", Deps: []string{"shelldon/tools", "shelldon/daemon/turns"}},
		{ImportPath: "shelldon/daemon/state", Deps: []string{"shelldon/daemon/statedir", "shelldon/faces", "shelldon/atomicfile"}},
		{ImportPath: "shelldon/panel", Deps: []string{"shelldon/faces", "shelldon/panel/moment"}},
	}
	for _, p := range fine {
		if v := violations([]pkg{p}, rules); len(v) != 0 {
			t.Errorf("violations(%s -> %v) = %q, want none", p.ImportPath, p.Deps, v)
		}
	}
}

// fsOnlyTypes are the names of io/fs that policy may use: a file's type
// and mode bits, values that a change set carries. Every function of
// io/fs reads through an fs.FS, which policy is never handed.
func fsOnlyTypes(name string) bool { return name == "FileMode" || strings.HasPrefix(name, "Mode") }

// fsMisuses returns the uses of io/fs in src, one Go file, other than
// fsOnlyTypes, each as "file:line: fs.Name".
func fsMisuses(filename string, src any) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	local := ""
	for _, imp := range f.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); path == "io/fs" {
			local = "fs"
			if imp.Name != nil {
				local = imp.Name.Name
			}
		}
	}
	if local == "" {
		return nil, nil
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok && x.Name == local && !fsOnlyTypes(sel.Sel.Name) {
			out = append(out, fmt.Sprintf("%s: fs.%s", fset.Position(sel.Pos()), sel.Sel.Name))
		}
		return true
	})
	if local == "." || local == "_" {
		out = append(out, fmt.Sprintf("%s: io/fs imported as %s", filename, local))
	}
	return out, nil
}

// TestPolicyUsesFSOnlyForTypes holds what the rule "policy touches
// nothing" lets through of io/fs: its types, never a function that reads.
func TestPolicyUsesFSOnlyForTypes(t *testing.T) {
	files, err := filepath.Glob("policy/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no policy sources found (%v)", err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		misuses, err := fsMisuses(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range misuses {
			t.Errorf("%s: policy reads no files; take what was read as an argument", m)
		}
	}
}

func TestPolicyUsesFSOnlyForTypesCatch(t *testing.T) {
	for src, want := range map[string]int{
		"package p\nimport \"io/fs\"\nvar m fs.FileMode = fs.ModeDir\n":            0,
		"package p\nimport \"io/fs\"\nfunc f(x fs.FS) { fs.ReadFile(x, \"a\") }\n": 2,
		"package p\nimport iofs \"io/fs\"\nvar _ = iofs.ErrNotExist\n":             1,
		"package p\nimport . \"io/fs\"\nvar _ FileMode\n":                          1,
		"package p\nimport \"os\"\nvar _ = os.ReadFile\n":                          0, // the import rule's
	} {
		got, err := fsMisuses("p.go", src)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != want {
			t.Errorf("fsMisuses(%q) = %q, want %d", src, got, want)
		}
	}
}

// TestPackageDocs keeps every package saying what it is for.
func TestPackageDocs(t *testing.T) {
	for _, p := range listPackages(t) {
		if strings.TrimSpace(p.Doc) == "" {
			t.Errorf("package %s has no doc comment; add one in doc.go saying what it is for", p.ImportPath)
		}
	}
}
