package policy

import (
	"fmt"
	"slices"
	"strings"
)

// ToolImport is one import in a self-coded tool's source, as Python's own
// parser found it (the gate reads the source with ast in the sandbox and
// never imports it).
type ToolImport struct {
	File string
	Line int
	// Module is the dotted module name; empty when Computed.
	Module string
	// Computed marks __import__(x) or importlib.import_module(x) whose
	// argument is not a string literal: what it imports cannot be known
	// from the source.
	Computed bool
}

// forbiddenToolModules may not be imported by a self-coded tool: the
// model SDKs (a tool that calls a model is a way around the broker, its
// credentials and its budget) and shelldon itself.
var forbiddenToolModules = []string{"openai", "anthropic", "google", "litellm", "zhipuai", "ollama", "shelldon"}

// ForbiddenToolModules lists the top-level modules a self-coded tool may
// not import.
func ForbiddenToolModules() []string { return slices.Clone(forbiddenToolModules) }

// JudgeToolImports applies the tool-source import rule: an import of a
// forbidden module (or of anything below it, "google.genai") refuses the
// tool; a computed import cannot be verified, so it is reported to the
// owner but does not refuse it. Both lists say where, one line each, in
// the order given.
func JudgeToolImports(imports []ToolImport) (forbidden, unverifiable []string) {
	for _, imp := range imports {
		where := fmt.Sprintf("%s line %d", imp.File, imp.Line)
		if imp.Computed {
			unverifiable = append(unverifiable, where+": an import whose module is computed")
			continue
		}
		root, _, _ := strings.Cut(imp.Module, ".")
		if slices.Contains(forbiddenToolModules, root) {
			forbidden = append(forbidden, where+": "+imp.Module)
		}
	}
	return forbidden, unverifiable
}

// BrokenTests applies the read-only-tests rule to one test file: before
// and after map each test function's name to its syntax tree (Python's
// ast.dump, so that formatting and comments do not count), as they were
// before a change and are after it; after is nil when the file is gone
// or no longer parses. Existing tests must stay as they were; new ones
// may be added. The result names each broken test and how, sorted.
func BrokenTests(before, after map[string]string) []string {
	var broken []string
	for name, tree := range before {
		switch got, ok := after[name]; {
		case after == nil:
			broken = append(broken, name+" (the file is gone or does not parse)")
		case !ok:
			broken = append(broken, name+" (removed)")
		case got != tree:
			broken = append(broken, name+" (changed)")
		}
	}
	slices.Sort(broken)
	return broken
}
