package launch_test

import (
	"context"
	"io"
	"testing"
	"time"

	godbus "github.com/godbus/dbus/v5"

	"shelldon/daemon/launch"
	"shelldon/daemon/launch/launchtest"
	"shelldon/testhost/systemdhost"
)

// launchers are every launcher core can start a worker with; a new one is
// a line here, and passes the suite before core may use it.
var launchers = []launchtest.Impl{
	{Name: "child", New: childTarget},
	{Name: "systemd", New: systemdTarget},
}

func TestLaunchers(t *testing.T) { launchtest.Run(t, launchers) }

// childTarget sends the workers' output to a writer that is not a file,
// so it goes through a pipe a grandchild can hold open.
func childTarget(t *testing.T) launchtest.Target {
	return launchtest.Target{Launcher: launch.Child{Output: io.Discard}, Dir: t.TempDir()}
}

// systemdTarget starts the workers as units of a systemd booted in a
// container of its own, whose pids are not the test's.
func systemdTarget(t *testing.T) launchtest.Target {
	host := systemdhost.Boot(t)
	return launchtest.Target{Launcher: newSystemd(t, host), Dir: host.Dir, HostPID: host.HostPID}
}

// newSystemd is a systemd launcher asking host's systemd, closed at cleanup.
func newSystemd(t *testing.T, host *systemdhost.Host) *launch.Systemd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := launch.NewSystemd(ctx, func() (*godbus.Conn, error) { return systemdhost.Dial(host.BusAddress) }, launch.SystemdOptions{})
	if err != nil {
		t.Fatalf("NewSystemd(%s): %v", host.BusAddress, err)
	}
	t.Cleanup(s.Close)
	return s
}
