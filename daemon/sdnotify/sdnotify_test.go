package sdnotify_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"shelldon/daemon/sdnotify"
	"shelldon/testhost"
)

// listen serves the notify socket as systemd does: one datagram per
// notification.
func listen(t *testing.T) <-chan string {
	t.Helper()
	path := filepath.Join(testhost.ShortDir(t), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	got := make(chan string, 16)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(got)
				return
			}
			got <- string(buf[:n])
		}
	}()
	return got
}

func next(t *testing.T, got <-chan string) string {
	t.Helper()
	select {
	case m := <-got:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no notification arrived")
		return ""
	}
}

func TestNotifications(t *testing.T) {
	got := listen(t)
	n := sdnotify.New()
	cases := []struct {
		send func()
		want string
	}{
		{func() { n.Ready("waiting for a message") }, "READY=1\nSTATUS=waiting for a message"},
		{func() { n.Status("turn 7:\nthinking") }, "STATUS=turn 7: thinking"},
		{func() { n.Status(strings.Repeat("x", 300)) }, "STATUS=" + strings.Repeat("x", 199) + "…"},
		{func() { n.Stopping() }, "STOPPING=1"},
	}
	for _, tc := range cases {
		tc.send()
		if m := next(t, got); m != tc.want {
			t.Errorf("notification = %q, want %q", m, tc.want)
		}
	}
}

func TestNilNotifierSendsNothing(t *testing.T) {
	got := listen(t)
	var n *sdnotify.Notifier
	n.Ready("x")
	n.Status("x")
	n.Stopping()
	n.Watchdog(context.Background(), func(context.Context) bool { return true })
	sdnotify.New().Status("only this")
	if m := next(t, got); m != "STATUS=only this" {
		t.Errorf("first notification = %q, want only the real notifier's", m)
	}
}

func TestWatchdogPingsOnlyWhileAlive(t *testing.T) {
	got := listen(t)
	t.Setenv("WATCHDOG_USEC", "40000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	var probes atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The first two probes find the loop wedged; then it answers.
		sdnotify.New().Watchdog(ctx, func(context.Context) bool { return probes.Add(1) > 2 })
	}()
	if m := next(t, got); m != "WATCHDOG=1" {
		t.Fatalf("notification = %q, want WATCHDOG=1", m)
	}
	if p := probes.Load(); p < 3 {
		t.Errorf("pinged after %d probes, want none before the third (the first alive one)", p)
	}
	cancel()
	<-done
}

func TestWatchdogOffWithoutWatchdogSec(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "")
	returned := make(chan struct{})
	go func() {
		sdnotify.New().Watchdog(context.Background(), func(context.Context) bool { return true })
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("Watchdog did not return for a unit without a watchdog")
	}
}

// A systemd that stops reading its notification socket (busy, or a
// queue full of other services' datagrams) must not wedge core: a status
// line is sent from the turn's path and a ping from the watchdog's.
func TestANotificationNeverWaitsForSystemd(t *testing.T) {
	path := filepath.Join(testhost.ShortDir(t), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close() // and never read
	t.Setenv("NOTIFY_SOCKET", path)
	n := sdnotify.New()
	sent := make(chan struct{})
	const notifications = 10_000 // far more than a socket's queue holds
	go func() {
		defer close(sent)
		for i := range notifications {
			n.Status(fmt.Sprintf("turn %d", i))
		}
	}()
	select {
	case <-sent:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d status lines to a socket nobody reads still sending after 30 s, want each dropped when the queue is full", notifications)
	}
}

// systemd may listen on an abstract socket ("@name"), and may make its
// socket anew (a re-execution) while the service runs: the next
// notification reaches the new one.
func TestNotificationsFollowTheSocket(t *testing.T) {
	abstract := fmt.Sprintf("@shelldon-sdnotify-test-%d", os.Getpid())
	listenAt := func(name string) *net.UnixConn {
		t.Helper()
		conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		return conn
	}
	read := func(conn *net.UnixConn) string {
		t.Helper()
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 4096)
		size, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("no notification arrived: %v", err)
		}
		return string(buf[:size])
	}
	n := sdnotify.New()

	first := listenAt(abstract)
	t.Setenv("NOTIFY_SOCKET", abstract)
	n.Status("one")
	if m := read(first); m != "STATUS=one" {
		t.Errorf("on the abstract socket %s: notification = %q, want STATUS=one", abstract, m)
	}
	first.Close()

	path := filepath.Join(testhost.ShortDir(t), "notify")
	old := listenAt(path)
	t.Setenv("NOTIFY_SOCKET", path)
	n.Status("two")
	if m := read(old); m != "STATUS=two" {
		t.Errorf("notification = %q, want STATUS=two", m)
	}
	old.Close()
	os.Remove(path)
	remade := listenAt(path)
	defer remade.Close()
	n.Status("three")
	if m := read(remade); m != "STATUS=three" {
		t.Errorf("after the socket was made anew: notification = %q, want STATUS=three", m)
	}
}
