package shelldon

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The design's cap on methods per type: a type with dozens of methods is
// several jobs in one, and core only routes.
const (
	maxMethodsOfCore = 20
	maxMethodsOfType = 40
)

// methodsOverCap are the types over their cap today, each with the most
// methods it may have until it is split (a ratchet: it may shrink, never
// grow; lower the figure when it shrinks) and why it is still over.
var methodsOverCap = map[string]ratchet{}

// ratchet is the most methods a type over its cap may have, and why it
// is over.
type ratchet struct {
	most int
	why  string
}

// testServers are the packages whose types stand in for a real server in
// tests: their size is the protocol's, not a design's.
var testServers = []string{"transports/telegram/telegramtest"}

// methodCounts counts the methods of each named type in the non-test Go
// files under root, as "package.Type" (the package's directory's last
// element), skipping testdata and the test servers.
func methodCounts(root string) (map[string]int, error) {
	counts := map[string]int{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && p != root || slices.Contains(testServers, filepath.ToSlash(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) == 0 {
				continue
			}
			counts[f.Name.Name+"."+receiverName(fn.Recv.List[0].Type)]++
		}
		return nil
	})
	return counts, err
}

// receiverName is the type's name of a receiver: T, *T, T[K], *T[K].
func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return fmt.Sprintf("%T", e)
		}
	}
}

// methodProblems says which types pass their cap, or their ratchet in
// overCap.
func methodProblems(counts map[string]int, overCap map[string]ratchet) []string {
	var out []string
	for typ, n := range counts {
		limit := maxMethodsOfType
		if typ == "daemon.Core" {
			limit = maxMethodsOfCore
		}
		over, known := overCap[typ]
		switch {
		case known && n > over.most:
			out = append(out, fmt.Sprintf("%s has %d methods, more than the %d it had (%s): split it rather than add to it", typ, n, over.most, over.why))
		case known && n <= limit:
			out = append(out, fmt.Sprintf("%s has %d methods, within its cap of %d: take it off methodsOverCap", typ, n, limit))
		case !known && n > limit:
			out = append(out, fmt.Sprintf("%s has %d methods, more than the %d a type may have: it does several jobs; split it", typ, n, limit))
		}
	}
	slices.Sort(out)
	return out
}

func TestMethodsPerType(t *testing.T) {
	counts, err := methodCounts(".")
	if err != nil {
		t.Fatal(err)
	}
	if counts["daemon.Core"] == 0 {
		t.Fatal("found no method of daemon.Core: is the test running from the repository's root?")
	}
	for _, p := range methodProblems(counts, methodsOverCap) {
		t.Error(p)
	}
	for typ, over := range methodsOverCap {
		if n := counts[typ]; n < over.most {
			t.Logf("%s has %d methods, fewer than the %d allowed: lower its figure in methodsOverCap", typ, n, over.most)
		}
	}
}

// TestMethodsPerTypeCatch proves the check can fail.
func TestMethodsPerTypeCatch(t *testing.T) {
	overCap := map[string]ratchet{"x.Big": {50, "a test's"}}
	for _, tc := range []struct {
		counts map[string]int
		want   int
	}{
		{map[string]int{"x.Big": 40, "hub.Hub": 40}, 1}, // Big within its cap but still listed as over
		{map[string]int{"x.Big": 51}, 1},
		{map[string]int{"daemon.Core": maxMethodsOfCore + 1}, 1}, // core's own cap, below every other type's
		{map[string]int{"daemon.Core": maxMethodsOfCore}, 0},
		{map[string]int{"hub.Hub": 41}, 1},
		{map[string]int{"x.Big": 50, "x.Y": 3}, 0},
	} {
		if got := methodProblems(tc.counts, overCap); len(got) != tc.want {
			t.Errorf("methodProblems(%v) = %q, want %d problems", tc.counts, got, tc.want)
		}
	}
}
