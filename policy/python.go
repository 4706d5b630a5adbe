package policy

import (
	"slices"
	"strings"
)

// The Python that shelldon starts for its own checks — the gate's reading
// of a tool's source and its pytest run, the read-only-tests guard's
// reading of the tests, a self-coded tool's runner, the done-check's
// pytest — runs in a directory the model wrote: a staged tool, the
// workspace. Python puts that directory first on sys.path, before the
// standard library, so a json.py there is what the check's `import json`
// gets, and prints the verdict. Two rules keep each check's own modules
// its own: the interpreter runs isolated ([Python], [Pytest]), and a
// self-coded tool may not be named like a module of the image's Python
// ([ToolNameShadows]), which would otherwise stand in for that module
// wherever the tool's directory is on the path.

// Python is the command line of an interpreter shelldon starts for one
// of its own checks, running args: isolated (-I: no PYTHON* variables, no
// user site, neither the script's directory nor the current one on
// sys.path), and writing no bytecode (-B, as -I ignores
// PYTHONDONTWRITEBYTECODE).
func Python(args ...string) []string {
	return append([]string{"python3", "-I", "-B"}, args...)
}

// pytestMain runs pytest in an isolated interpreter with the current
// directory on sys.path as `python -m pytest` has it, for tests that
// import the project's modules, but last: after the standard library and
// the image's modules, which a module of the directory cannot stand in
// for.
const pytestMain = "import sys; sys.path.append(''); import pytest; sys.exit(pytest.console_main())"

// Pytest is the command line of pytest run as one of shelldon's own
// checks, with args: in [Python]'s isolated interpreter, importing test
// modules with their directories appended to sys.path rather than put
// first (--import-mode=append), and without its cache, which would write
// into the directory.
func Pytest(args ...string) []string {
	return Python(append([]string{"-c", pytestMain, "-p", "no:cacheprovider", "--import-mode=append"}, args...)...)
}

// ToolNameShadows says whether a self-coded tool whose module is
// stem.py would shadow a module of the sandbox's Python — its standard
// library, pytest and the other modules the image installs — or a name
// Python or pytest give a meaning of their own (conftest,
// usercustomize), and which. Case does not matter: a file system that
// ignores it would import one for the other.
func ToolNameShadows(stem string) (module string, shadows bool) {
	name := strings.ToLower(stem)
	if _, found := slices.BinarySearch(pythonModules, name); found || slices.Contains(pythonMeaningfulNames, name) {
		return name, true
	}
	return "", false
}
