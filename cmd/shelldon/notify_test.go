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
	sock := filepath.Join(testhost.ShortDir(t), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got := make(chan string, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			got <- string(buf[:n])
		}
	}()

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
