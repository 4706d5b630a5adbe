package sandbox_test

import (
	"context"
	"path/filepath"
	"testing"

	godbus "github.com/godbus/dbus/v5"

	"shelldon/daemon/launch"
	"shelldon/sandbox"
	"shelldon/sandbox/image/imagetest"
	"shelldon/sandbox/sandboxtest"
	"shelldon/testhost/systemdhost"
)

// backends are every way the sandbox holds its runs; a new one is a line
// here, and passes the suite before the sandbox may use it.
var backends = []sandboxtest.Impl{
	{Name: "cgroup", New: cgroupTarget},
	{Name: "systemd-unit", New: unitTarget},
}

func TestBackends(t *testing.T) { sandboxtest.Run(t, backends) }

// cgroupTarget is the sandbox where no systemd holds its runs: each in a
// control group of its own.
func cgroupTarget(t *testing.T) sandboxtest.Target {
	img := imagetest.Image(t)
	runs := t.TempDir()
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: runs})
	if err != nil {
		t.Fatalf("sandbox.New: %v", err)
	}
	return sandboxtest.Target{Sandbox: sb, Image: img.Root, Dir: t.TempDir(), RunDir: runs}
}

// unitTarget is the sandbox as it runs on a board: every container in a
// shelldon-run@ unit of a real systemd.
func unitTarget(t *testing.T) sandboxtest.Target {
	sb, host := inSystemdUnits(t)
	return sandboxtest.Target{Sandbox: sb, Image: imagetest.Image(t).Root, Dir: host.Dir, RunDir: filepath.Join(host.Dir, "runs"),
		// A networked unit joins the run's namespace by a path under the
		// sandbox's /proc, which a systemd of another pid namespace, as
		// the booted test host's, cannot open; on a board systemd is
		// PID 1 of the same one.
		Offline: "a systemd in the test's pid namespace: the booted test host's cannot open /proc/<pid>/fd of the sandbox's namespace (the VM suites run networked commands in units)",
		// The booted test host's systemd sits in a container whose
		// memory hierarchy nspawn hands it read-only (cgroup v1 here).
		Unlimited: "the booted test host's memory hierarchy is read-only (the VM suites, on cgroup v2, check MemoryMax's kill of a command's unit)"}
}

// inSystemdUnits is a sandbox whose runs are units of a systemd booted in
// a container of its own, with the image and a shared directory at the
// same paths as on this host; output comes back through a descriptor
// passed over D-Bus.
func inSystemdUnits(t *testing.T) (*sandbox.Sandbox, *systemdhost.Host) {
	t.Helper()
	img := imagetest.Image(t)
	host := systemdhost.Boot(t, img.Dir)
	units, err := launch.NewSystemd(context.Background(), func() (*godbus.Conn, error) { return systemdhost.Dial(host.BusAddress) }, launch.SystemdOptions{})
	if err != nil {
		t.Fatalf("NewSystemd: %v", err)
	}
	t.Cleanup(units.Close)
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: filepath.Join(host.Dir, "runs"), Units: units})
	if err != nil {
		t.Fatalf("sandbox.New: %v", err)
	}
	return sb, host
}
