package shelldon

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// A clone of the repository must build, test and read on its own: no file
// may lean on something beside it, such as the planning documents it was
// first written from or the machine it was built on.

// besideTheRepository is the folder of planning documents next to the
// clone it was written in, spelled in pieces so that this file does not
// itself refer to it.
const besideTheRepository = ".." + "/shared/"

// notInTheRepository are fragments that name places outside any clone.
var notInTheRepository = []struct{ fragment, why string }{
	{besideTheRepository, "the planning documents beside the repository are not in a clone; copy what is needed into the repository"},
	{"/work/", "a path of the machine the code was written on"},
}

// skipped are git's own (a directory, or in a worktree a file naming
// where the repository is), build output and local state, which git
// ignores; and this file, which names the fragments to look for them.
var skipped = []string{".git", "bin", "dist", "var", "repo_test.go"}

// markdownLink finds the target of an inline Markdown link or image.
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// outsideReferences lists what in the file name (a slash path relative to
// the repository's root), with content, refers to a place outside the
// repository: a fragment of notInTheRepository, or a Markdown link whose
// target leaves the root or does not exist (exists says whether a path
// relative to the root does).
func outsideReferences(name string, content []byte, exists func(string) bool) []string {
	var out []string
	for _, n := range notInTheRepository {
		if bytes.Contains(content, []byte(n.fragment)) {
			out = append(out, name+": mentions "+n.fragment+": "+n.why)
		}
	}
	if !strings.HasSuffix(name, ".md") {
		return out
	}
	for _, m := range markdownLink.FindAllSubmatch(content, -1) {
		target := string(m[1])
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
			continue
		}
		target, _, _ = strings.Cut(target, "#")
		resolved := path.Clean(path.Join(path.Dir(name), target))
		switch {
		case path.IsAbs(target) || resolved == ".." || strings.HasPrefix(resolved, "../"):
			out = append(out, name+": links to "+target+", outside the repository")
		case !exists(resolved):
			out = append(out, name+": links to "+target+", which does not exist")
		}
	}
	return out
}

// TestNothingReferencesOutsideTheRepository reads every text file of the
// repository.
func TestNothingReferencesOutsideTheRepository(t *testing.T) {
	exists := func(p string) bool {
		_, err := os.Stat(filepath.FromSlash(p))
		return err == nil
	}
	files := 0
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != "." && slices.Contains(skipped, p) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		content, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.IndexByte(content[:min(len(content), 8<<10)], 0) >= 0 {
			return nil // binary: a golden image, a font
		}
		files++
		for _, problem := range outsideReferences(filepath.ToSlash(p), content, exists) {
			t.Error(problem)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read only %d files: is the test running from the repository's root?", files)
	}
}

// TestOutsideReferencesCatch proves the check can fail.
func TestOutsideReferencesCatch(t *testing.T) {
	exists := func(p string) bool { return p == "README.md" || p == "docs/architecture.md" }
	for _, tc := range []struct {
		name, content string
		want          int
	}{
		{"policy/shell_test.go", `os.ReadFile("` + besideTheRepository + `cases/shell-seed.tsv")`, 1},
		{"README.md", "see [the design](" + besideTheRepository + "DESIGN.md)", 2},
		{"docs/architecture.md", "[up](../../elsewhere.md)", 1},
		{"README.md", "[gone](docs/missing.md)", 1},
		{"README.md", "[abs](/etc/passwd)", 1},
		{"bench.sh", "cd /work/main && make", 1},
		{"README.md", "[arch](docs/architecture.md#a-turn), [web](https://example.com/x), [here](#state)", 0},
		{"docs/architecture.md", "[readme](../README.md)", 0},
		{"policy/testdata/cases.tsv", "cat ../../etc/passwd\task", 0},
	} {
		if got := outsideReferences(tc.name, []byte(tc.content), exists); len(got) != tc.want {
			t.Errorf("outsideReferences(%s, %q) = %q, want %d problems", tc.name, tc.content, got, tc.want)
		}
	}
}

// TestTheMapNamesEveryPackage keeps doc.go's map of the packages whole:
// a package added without a line there, or a line left for one gone,
// fails.
func TestTheMapNamesEveryPackage(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	mapped := map[string]bool{}
	for _, line := range strings.Split(string(src), "\n") {
		entry, ok := strings.CutPrefix(line, "//\t")
		if !ok {
			continue
		}
		if fields := strings.Fields(entry); len(fields) > 0 {
			mapped[strings.TrimSuffix(fields[0], "/")] = true
		}
	}
	listed := map[string]bool{}
	for _, p := range listPackages(t) {
		if rel, ok := strings.CutPrefix(p.ImportPath, "shelldon/"); ok {
			listed[rel] = true
			if !mapped[rel] {
				t.Errorf("doc.go's map does not name package %s: add a line saying what it is for", rel)
			}
		}
	}
	for m := range mapped {
		if !listed[m] {
			t.Errorf("doc.go's map names %s, which is not a package", m)
		}
	}
}

// TestTheREADMEIsShortAndLeadsToEveryPage keeps README.md what a newcomer
// reads to the end (at most 250 lines: what shelldon is, the two commands,
// the Pi, everyday life, where to read next), with the reference in docs/,
// each page reachable from it (the benchmarks' history from BENCHMARKS.md,
// which README links).
func TestTheREADMEIsShortAndLeadsToEveryPage(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	benchmarks, err := os.ReadFile("BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(readme, []byte("\n")); n > 250 {
		t.Errorf("README.md is %d lines, more than 250: move the reference into a page of docs/", n)
	}
	pages, err := filepath.Glob("docs/*.md")
	if err != nil || len(pages) < 5 {
		t.Fatalf("docs/ has the pages %q (%v)", pages, err)
	}
	for _, p := range pages {
		link := []byte("](" + filepath.ToSlash(p) + ")")
		if !bytes.Contains(readme, link) && !bytes.Contains(benchmarks, link) {
			t.Errorf("README.md does not link %s: a page nobody is led to is not read", p)
		}
	}
}

// TestBenchmarksIsOnePage keeps BENCHMARKS.md the page of current
// figures, from one run at one commit, that a reader takes in at once: it
// had grown to 1,015 lines, a diary of dated changes with lines of 1,145
// characters. The history lives in docs/benchmarks-history.md.
func TestBenchmarksIsOnePage(t *testing.T) {
	page, err := os.ReadFile("BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(page), "\n")
	if len(lines) > 200 {
		t.Errorf("BENCHMARKS.md is %d lines, more than 200: history goes to docs/benchmarks-history.md", len(lines))
	}
	for i, line := range lines {
		if n := utf8.RuneCountInString(line); n > 400 {
			t.Errorf("BENCHMARKS.md:%d is %d characters, more than 400", i+1, n)
		}
	}
	if !regexp.MustCompile(`one run at one commit: \*\*[0-9a-f]{7,40},`).Match(page) {
		t.Error("BENCHMARKS.md does not say which commit its run measured (\"one run at one commit: **<commit>, <date>**\")")
	}
}

// TestTestDepsInstallsOnlyWhatTheTestsNeed: make test on a fresh Debian
// installs the packages .ci/test-deps names and none of their
// recommends (qemu's GUI and GTK were 182 packages); a recommend a test
// needs is named there.
func TestTestDepsInstallsOnlyWhatTheTestsNeed(t *testing.T) {
	script, err := os.ReadFile(".ci/test-deps")
	if err != nil {
		t.Fatal(err)
	}
	installs := 0
	for _, line := range strings.Split(string(script), "\n") {
		if !strings.Contains(line, "apt-get install") {
			continue
		}
		installs++
		if !strings.Contains(line, "--no-install-recommends") {
			t.Errorf(".ci/test-deps installs recommends: %q", strings.TrimSpace(line))
		}
	}
	if installs == 0 {
		t.Error(".ci/test-deps installs nothing with apt-get install")
	}
}
