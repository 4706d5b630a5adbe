//go:build !shelldon_testhooks

package worker

// testHook does nothing in a shipped binary: the test hooks are built
// only with the shelldon_testhooks tag.
func testHook(string, func(format string, args ...any)) {}
