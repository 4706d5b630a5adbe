// Package launch is the seam through which core starts a turn's worker: a
// [Launcher] starts `shelldon-worker --turn ID` somewhere bounded, tells
// core which processes belong to that worker (so the bus can check a
// worker's credentials), kills it at the reap deadline R, and always
// reports its end.
//
// This package holds the child-process launcher used where there is no
// systemd to ask: the worker runs in its own process group under rlimits
// and is killed as a group. The systemd launcher, which asks for a
// transient unit per turn, lives beside it behind the same interface.
package launch
