//go:build !shelldon_testhooks

package worker

import "log/slog"

// testHook does nothing in a shipped binary: the test hooks are built
// only with the shelldon_testhooks tag.
func testHook(string, *slog.Logger) {}
