package systemdhost

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// Listen opens a TCP listener on the test host's own loopback, inside its
// private network, so a server of the test (a fake Bot API, say) can be
// reached by the host's services at 127.0.0.1 and by nothing else.
func (h *Host) Listen(t testing.TB) net.Listener {
	t.Helper()
	type result struct {
		ln  net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		// The thread joins the host's network namespace to create the
		// socket, and is then never used again: a goroutine that ends
		// locked to its thread takes the thread with it.
		runtime.LockOSThread()
		ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", h.Leader))
		if err != nil {
			done <- result{err: err}
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{err: fmt.Errorf("join the test host's network: %w", err)}
			return
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		done <- result{ln, err}
	}()
	r := <-done
	if r.err != nil {
		t.Fatalf("listen in the test host: %v", r.err)
	}
	t.Cleanup(func() { r.ln.Close() })
	return r.ln
}
