package sdnotify

import (
	"context"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Notifier sends a service's state to whatever $NOTIFY_SOCKET names at
// the time of each call. A nil *Notifier sends nothing, so code that
// runs outside a service (tests, `shelldon up`) passes nil.
type Notifier struct{}

// New returns a notifier.
func New() *Notifier { return &Notifier{} }

func (n *Notifier) notify(state string) {
	if n == nil {
		return
	}
	// A lost notification costs a wrong status line or, for READY, a
	// start timeout that systemd reports itself; nothing to do here.
	_, _ = daemon.SdNotify(false, state)
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
