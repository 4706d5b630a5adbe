//go:build !shelldon_testhooks

package daemon

import (
	"context"
	"log/slog"
)

// testHook does nothing in a shipped binary: the test hooks are built
// only with the shelldon_testhooks tag.
func testHook(context.Context, *slog.Logger, string) bool { return false }
