package shelldon

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every package a binary is built from is code that runs on the owner's
// board, takes room on its card and memory, and can carry a flaw: each
// binary's dependencies are listed in its directory (deps.txt), and a test
// fails when the build's differ from the list, so that a new dependency
// is a choice made on purpose and seen in review, never a side effect of
// one import. The project's own packages are left out: the import rules
// (arch_test.go) govern those.

var update = flag.Bool("update", false, "rewrite each binary's deps.txt from its build")

// platform is one GOOS/GOARCH the binaries are released for.
type platform struct{ goos, goarch, goarm string }

func (p platform) String() string { return p.goos + "/" + p.goarch }

// releasedPlatforms are the targets of `make release` and `make deb`: the
// board on a 64-bit and on a 32-bit OS, and the developers' machines.
var releasedPlatforms = []platform{{"linux", "arm64", ""}, {"linux", "arm", "7"}, {"linux", "amd64", ""}}

// depsFile is the name of the list in each binary's directory.
const depsFile = "deps.txt"

// updateHint says how to take a changed list on purpose.
const updateHint = "if the change is meant, run `go test . -run '^TestDependencyBudget$' -update` and commit the list, saying in the commit why the dependency is worth it"

// binaryDeps are the packages one binary is built from on each platform
// (beyond its own module), and whether each is the standard library's.
type binaryDeps struct {
	on       map[string][]platform // import path -> the platforms whose build has it
	standard map[string]bool
}

// listBinaries lists every main package of the module with its
// dependencies on each platform, by `go list -deps`.
func listBinaries(t *testing.T) map[string]*binaryDeps {
	t.Helper()
	bins := map[string]*binaryDeps{}
	for _, p := range releasedPlatforms {
		cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{.Standard}} {{.Name}}{{if eq .Name "main"}} {{join .Deps " "}}{{end}}`, "./...")
		cmd.Env = append(os.Environ(), "GOOS="+p.goos, "GOARCH="+p.goarch, "GOARM="+p.goarm, "CGO_ENABLED=0")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps for %s: %v", p, err)
		}
		standard := map[string]bool{}
		mains := map[string][]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			fields := strings.Fields(line)
			if len(fields) < 3 {
				t.Fatalf("go list -deps for %s: unexpected line %q", p, line)
			}
			standard[fields[0]] = fields[1] == "true"
			if fields[2] == "main" {
				mains[fields[0]] = fields[3:]
			}
		}
		for main, deps := range mains {
			b := bins[main]
			if b == nil {
				b = &binaryDeps{on: map[string][]platform{}, standard: map[string]bool{}}
				bins[main] = b
			}
			for _, d := range deps {
				if under("shelldon")(d) || (standard[d] && !importable(d)) {
					continue
				}
				b.on[d] = append(b.on[d], p)
				b.standard[d] = standard[d]
			}
		}
	}
	if len(bins) < 2 {
		t.Fatalf("go list found %d binaries, want cmd/shelldon and cmd/shelldon-demo-model at least", len(bins))
	}
	return bins
}

// importable says whether a standard-library package may be imported by
// name: the runtime's internal and vendored packages change with every Go
// release and are no one's choice here.
func importable(path string) bool {
	return !strings.HasPrefix(path, "vendor/") && !slices.Contains(strings.Split(path, "/"), "internal")
}

// depsList is the text of a binary's deps.txt: the packages outside the
// standard library, then the standard library's, sorted, each followed by
// the platforms whose build has it when that is not all of them.
func depsList(binary string, b *binaryDeps) string {
	var all []string
	for _, p := range releasedPlatforms {
		all = append(all, p.String())
	}
	var w strings.Builder
	fmt.Fprintf(&w, "# The packages %s is built from, beyond its own module's, on %s\n", binary, strings.Join(all, ", "))
	fmt.Fprintf(&w, "# (deps_test.go at the repository's root checks it; %s).\n", strings.TrimPrefix(updateHint, "if the change is meant, "))
	for _, standard := range []bool{false, true} {
		if standard {
			w.WriteString("\n# The standard library's (its internal packages left out):\n")
		} else {
			w.WriteString("\n# Outside the standard library:\n")
		}
		var paths []string
		for path := range b.on {
			if b.standard[path] == standard {
				paths = append(paths, path)
			}
		}
		slices.Sort(paths)
		for _, path := range paths {
			w.WriteString(path)
			if on := b.on[path]; len(on) < len(releasedPlatforms) {
				for _, p := range on {
					w.WriteString(" " + p.String())
				}
			}
			w.WriteString("\n")
		}
	}
	return w.String()
}

// depsChanges lists the lines of the build's list (got) that the committed
// one (want) lacks, as "+ line", and those it has no more, as "- line".
func depsChanges(want, got string) []string {
	wantLines, gotLines := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for _, l := range gotLines {
		if !slices.Contains(wantLines, l) {
			out = append(out, "+ "+l)
		}
	}
	for _, l := range wantLines {
		if !slices.Contains(gotLines, l) {
			out = append(out, "- "+l)
		}
	}
	return out
}

// TestDependencyBudget builds each binary's list of dependencies for the
// released platforms and compares it with its deps.txt.
func TestDependencyBudget(t *testing.T) {
	for binary, b := range listBinaries(t) {
		file := filepath.Join(strings.TrimPrefix(binary, "shelldon/"), depsFile)
		got := depsList(binary, b)
		if *update {
			if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
				t.Fatalf("update the dependency list: %v", err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("%s has no list of its dependencies (%v); %s", binary, err, updateHint)
			continue
		}
		if changes := depsChanges(string(want), got); len(changes) > 0 {
			t.Errorf("%s's dependencies differ from %s (+ new in the build, - no longer in it):\n%s\n%s", binary, file, strings.Join(changes, "\n"), updateHint)
		}
	}
}

// TestDependencyBudgetCatches proves the comparison notices a package
// added, one dropped and one that moved to another platform.
func TestDependencyBudgetCatches(t *testing.T) {
	arm64, arm := releasedPlatforms[0], releasedPlatforms[1]
	committed := &binaryDeps{
		on:       map[string][]platform{"example.com/kept": releasedPlatforms, "example.com/dropped": releasedPlatforms, "example.com/board": {arm64}, "bufio": releasedPlatforms},
		standard: map[string]bool{"bufio": true},
	}
	built := &binaryDeps{
		on:       map[string][]platform{"example.com/kept": releasedPlatforms, "example.com/added": releasedPlatforms, "example.com/board": {arm}, "bufio": releasedPlatforms, "net/http/pprof": releasedPlatforms},
		standard: map[string]bool{"bufio": true, "net/http/pprof": true},
	}
	got := depsChanges(depsList("shelldon/cmd/x", committed), depsList("shelldon/cmd/x", built))
	want := []string{"+ example.com/added", "+ example.com/board linux/arm", "+ net/http/pprof", "- example.com/board linux/arm64", "- example.com/dropped"}
	if !slices.Equal(got, want) {
		t.Errorf("changes = %q, want %q", got, want)
	}
	if changes := depsChanges(depsList("shelldon/cmd/x", committed), depsList("shelldon/cmd/x", committed)); len(changes) != 0 {
		t.Errorf("the same list has changes %q", changes)
	}
}
