// Package owner words what core tells its owner about itself: the help,
// the status report, the list of tools, the schedule. Its functions are
// pure: core gathers the facts, this package says them, so that what the
// owner reads can be tested without a running pet.
package owner
