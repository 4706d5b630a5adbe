package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"shelldon/demomodel"
	"shelldon/testhost"
)

// TestDaemonTalksToSystemd runs `shelldon daemon` as a Type=notify unit
// with a watchdog would: it must say READY once it serves, keep pinging
// the watchdog while its loop answers, and say STOPPING on SIGTERM.
func TestDaemonTalksToSystemd(t *testing.T) {
	sock, got := listenNotify(t)

	path := writeConfig(t, &pet{cfg: testConfig(t, serve(t, demomodel.New()))})
	cmd := exec.Command(os.Args[0], "daemon", "--config", path)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock, "WATCHDOG_USEC=200000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	await := func(prefix string) string {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case m := <-got:
				if strings.HasPrefix(m, prefix) {
					return m
				}
			case <-deadline:
				t.Fatalf("no %s notification from the daemon", prefix)
			}
		}
	}
	if m := await("READY=1"); !strings.Contains(m, "STATUS=waiting for a message") {
		t.Errorf("ready notification = %q, want a status with it", m)
	}
	await("WATCHDOG=1")
	await("WATCHDOG=1")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	await("STOPPING=1")
}

// listenNotify listens where a Type=notify service's $NOTIFY_SOCKET
// points, as systemd does, until the test ends, and hands on each
// notification.
func listenNotify(t testing.TB) (path string, got <-chan string) {
	t.Helper()
	path = filepath.Join(testhost.ShortDir(t), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	t.Cleanup(func() { close(ended); conn.Close() })
	notes := make(chan string, 64)
	go func() {
		defer close(notes)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			select {
			case notes <- string(buf[:n]):
			case <-ended:
				return
			}
		}
	}()
	return path, notes
}
