package sdnotify

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"golang.org/x/sys/unix"
)

// Notifier sends a service's state to whatever $NOTIFY_SOCKET names at
// the time of each call. A nil *Notifier sends nothing, so code that
// runs outside a service (tests, `shelldon up`) passes nil.
//
// It sends from one datagram socket, made at the first call and kept,
// with two plain system calls: the watchdog pings every 15 s for months,
// idle or not, and dialling a socket through package net for each (as
// go-systemd's SdNotify does) ran enough of net and the runtime's poller
// to map about 1.3 MB of core's binary back in within 15 s of every
// release (giveback).
type Notifier struct {
	mu     sync.Mutex
	socket int // the datagram socket, once made
	made   bool
}

// New returns a notifier.
func New() *Notifier { return &Notifier{} }

func (n *Notifier) notify(state string) {
	if n == nil {
		return
	}
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.made {
		socket, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return
		}
		n.socket, n.made = socket, true
	}
	// A lost notification costs a wrong status line or, for READY, a
	// start timeout that systemd reports itself; nothing to do here, and
	// nothing to wait for: a full queue drops this one (MSG_DONTWAIT).
	// The path is sent each time, so a socket systemd made anew (a
	// re-execution) is found. SockaddrUnix takes an "@" name as abstract.
	_ = unix.Sendto(n.socket, []byte(state), unix.MSG_DONTWAIT, &unix.SockaddrUnix{Name: path})
}

// Ready says the service serves, with a first status line.
func (n *Notifier) Ready(status string) {
	n.notify(daemon.SdNotifyReady + "\nSTATUS=" + oneLine(status))
}

// Status sets the line `systemctl status` shows.
func (n *Notifier) Status(status string) { n.notify("STATUS=" + oneLine(status)) }

// Stopping says the service is on its way out.
func (n *Notifier) Stopping() { n.notify(daemon.SdNotifyStopping) }

// Watchdog pings systemd's watchdog for as long as ctx lasts and alive
// reports true within the ping interval: half of WatchdogSec, so one slow
// answer does not get the service killed but a wedged loop does. It
// returns at once when the unit has no watchdog.
func (n *Notifier) Watchdog(ctx context.Context, alive func(context.Context) bool) {
	if n == nil {
		return
	}
	every, err := daemon.SdWatchdogEnabled(false)
	if err != nil || every <= 0 {
		return
	}
	interval := every / 2
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			probe, cancel := context.WithTimeout(ctx, interval)
			ok := alive(probe)
			cancel()
			if ok {
				n.notify(daemon.SdNotifyWatchdog)
			}
		}
	}
}

// oneLine keeps a status to one line: the protocol is newline-separated.
func oneLine(s string) string {
	out := []rune{}
	for _, r := range s {
		if r == '\n' || r == '\r' {
			r = ' '
		}
		out = append(out, r)
	}
	if len(out) > 200 {
		out = append(out[:199], '…')
	}
	return string(out)
}
