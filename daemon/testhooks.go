//go:build shelldon_testhooks

package daemon

import (
	"context"
	"log/slog"
)

// testHook acts on a test hook's message, for the tests of an installed
// pet: [WedgeMessage] blocks the turn loop until core stops, as a bug
// would, to prove that systemd's watchdog restarts core.
func testHook(ctx context.Context, log *slog.Logger, text string) bool {
	if text != WedgeMessage {
		return false
	}
	log.Warn("test hook: the turn loop blocks until core stops")
	<-ctx.Done()
	return true
}
