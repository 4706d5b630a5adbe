// Package selfcode checks the tools the pet writes for itself: their names
// and sizes ([Check]) and the gate they must pass before the owner is
// asked to keep one ([Gate]).
//
// A self-coded tool is a Python module with run(**kwargs) -> str,
// DESCRIPTION and PARAMS_SCHEMA, and a pytest file. The gate runs in the
// sandbox over the proposal's staging directory and never imports the
// module on the host: Python's own ast reads the imports, the conventions
// and, for an update, the live version's test functions; the rules they
// are held to are policy's ([policy.JudgeToolImports],
// [policy.BrokenTests]); then pytest runs the test, bounded, over a
// scratch view. [TestTrees] is the same reading of test functions for
// core's guard of the workspace's tests.
package selfcode
