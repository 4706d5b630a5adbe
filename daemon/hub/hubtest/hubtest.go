package hubtest

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"shelldon/daemon/hub"
	"shelldon/testhost"
)

// SocketPath is a bus path in a fresh short directory, removed at
// cleanup: sun_path holds only 108 bytes.
func SocketPath(t testing.TB) string {
	return filepath.Join(testhost.ShortDir(t), "bus.sock")
}

// patience bounds the wait for Serve to return after a stop.
const patience = 5 * time.Second

// Serve starts a hub with cfg on path, or on a socket in a fresh short
// directory when path is empty, and returns it, its socket and a stop
// function. Stop may be called early (to play a core going away) and is
// called at cleanup in any case; a Serve that fails, or does not return
// promptly, fails the test.
func Serve(t testing.TB, path string, cfg hub.Config) (h *hub.Hub, socket string, stop func()) {
	t.Helper()
	if path == "" {
		path = SocketPath(t)
	}
	h, err := hub.Listen(path, cfg)
	if err != nil {
		t.Fatalf("Listen(%s) = %v", path, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Serve = %v, want nil after cancel", err)
				}
			case <-time.After(patience):
				t.Errorf("Serve did not return within %v of cancel", patience)
			}
		})
	}
	t.Cleanup(stop)
	return h, path, stop
}
