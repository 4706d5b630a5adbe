//go:build shelldon_testhooks

package worker

import (
	"fmt"
	"log/slog"
)

// testHook acts on a test hook's message.
func testHook(text string, log *slog.Logger) {
	if text != HogMessage {
		return
	}
	log.Info("test hook: growing until the kernel stops this worker")
	var held [][]byte
	for {
		// A mebibyte at a time, every page written, so that it is
		// resident and counted.
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		held = append(held, b)
		if len(held)%64 == 0 {
			log.Info(fmt.Sprintf("test hook: holding %d MiB", len(held)))
		}
	}
}
