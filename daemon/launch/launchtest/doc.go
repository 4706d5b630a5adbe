// Package launchtest is the conformance suite of the [launch.Launcher]
// seam: one set of behaviour tests that every launcher must pass, run
// through the interface alone (how a worker's end is reported, the reap
// deadline, Kill, Owns, the limits, a start that fails), in the spirit
// of containerd's snapshots/testsuite. A launcher's package runs [Run]
// over a table of its launchers, so a new launcher is one line there;
// what only one launcher does stays in that launcher's own tests.
package launchtest
