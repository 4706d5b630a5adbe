// Package selfcode stages the tools the pet writes for itself and runs
// the gate they must pass before the owner is asked to keep one.
//
// A self-coded tool is a Python module with run(**kwargs) -> str,
// DESCRIPTION and PARAMS_SCHEMA, and a pytest file. [Stage] writes the
// pair into tools-staging under a normalised, importable stem; [Gate]
// checks it in the sandbox, in three steps, never importing the module on
// the host: the import check and the convention check read the source
// with Python's own ast (the names and values are read as literals), and
// pytest runs the test, bounded, over a scratch view.
package selfcode
