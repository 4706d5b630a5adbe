package units_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	godbus "github.com/godbus/dbus/v5"

	"shelldon/daemon/launch"
	"shelldon/testhost/systemdhost"
)

// TestSystemdAcceptsTheUnits installs the units into a real systemd, as
// `make install` does, and checks that it made the users and directories,
// and that systemd verifies and loads the units as written.
func TestSystemdAcceptsTheUnits(t *testing.T) {
	host := systemdhost.Boot(t)
	ctx := context.Background()
	// ExecStart must name an executable; any will do for verifying.
	shelldon := filepath.Join(t.TempDir(), "shelldon")
	if err := os.WriteFile(shelldon, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	host.Install(t, shelldon)
	exec := func(argv ...string) string { t.Helper(); return host.Must(t, argv...) }
	for user, want := range map[string][]string{
		"shelldon-broker": {"shelldon"}, "shelldon-worker": {"shelldon"}, "shelldon-panel": {"shelldon", "spi", "gpio"},
	} {
		groups := strings.Fields(exec("id", "-nG", user))
		for _, g := range want {
			if !slices.Contains(groups, g) {
				t.Errorf("%s is in groups %q, want %s among them", user, groups, g)
			}
		}
	}
	if groups := strings.Fields(exec("id", "-nG", "shelldon-sandbox")); slices.Contains(groups, "shelldon") {
		t.Errorf("shelldon-sandbox is in groups %q, want it in none of shelldon's", groups)
	}
	// Its group reaches the bus socket and, by name, what it may read;
	// it may not list the directory.
	if got := exec("stat", "-c", "%a %U %G", "/var/lib/shelldon"); strings.TrimSpace(got) != "710 root shelldon" {
		t.Errorf("/var/lib/shelldon is %q, want 710 root shelldon", got)
	}
	if out, err := host.Exec(ctx, "systemd-analyze", "verify", "/etc/systemd/system/shelldon.service", "/etc/systemd/system/shelldon-broker.service", "/etc/systemd/system/shelldon-panel.service", "/etc/systemd/system/shelldon.slice", "/etc/systemd/system/shelldon-turns.slice"); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify = %v:\n%s", err, out)
	}
	for unit, want := range map[string]string{"shelldon.service": "Type=notify", "shelldon-turns.slice": "Slice=shelldon.slice"} {
		if got := exec("systemctl", "show", "-p", strings.Split(want, "=")[0], unit); strings.TrimSpace(got) != want {
			t.Errorf("systemctl show %s = %q, want %q", unit, got, want)
		}
	}
}

// TestHardening asks systemd-analyze security how exposed each unit is,
// the turn units as the launcher makes them included, and holds the
// figures down: core must stay root and in the host's mount namespace
// (it mounts the sandbox's overlays), so it scores worst; and it makes the
// user namespaces that map a workspace's owner to the sandbox user
// (RestrictNamespaces=user, CAP_SETUID and CAP_SETGID: 0.6 of its 5.3),
// the price of no sandboxed command running as the host's root.
func TestHardening(t *testing.T) {
	host := systemdhost.Boot(t)
	shelldon := filepath.Join(t.TempDir(), "shelldon")
	if err := os.WriteFile(shelldon, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	host.Install(t, shelldon)
	sd, err := launch.NewSystemd(t.Context(), func() (*godbus.Conn, error) { return systemdhost.Dial(host.BusAddress) }, launch.SystemdOptions{User: "shelldon-worker"})
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	turn, err := sd.Start(t.Context(), launch.Spec{Turn: "probe", Argv: []string{"/bin/sleep", "60"}, Reap: time.Minute,
		Limits: launch.Limits{Memory: 256 << 20, Tasks: 64, CPUQuota: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer turn.Kill()
	for unit, most := range map[string]float64{"shelldon.service": 5.3, "shelldon-broker.service": 1.5, "shelldon-panel.service": 1.0, launch.UnitName("probe"): 1.5} {
		out, _ := host.Exec(t.Context(), "systemd-analyze", "security", "--no-pager", unit)
		m := regexp.MustCompile(`Overall exposure level for \S+: (\d+\.\d+)`).FindSubmatch(out)
		if m == nil {
			t.Errorf("systemd-analyze security %s said no exposure:\n%s", unit, out)
			continue
		}
		exposure, _ := strconv.ParseFloat(string(m[1]), 64)
		t.Logf("%s: exposure %.1f (at most %.1f)", unit, exposure, most)
		if exposure > most {
			t.Errorf("%s exposure %.1f, want at most %.1f:\n%s", unit, exposure, most, out)
		}
	}
}
