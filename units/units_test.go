package units_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	for _, user := range []string{"shelldon-broker", "shelldon-worker"} {
		if groups := exec("id", "-nG", user); !strings.Contains(groups, "shelldon") {
			t.Errorf("%s is in groups %q, want shelldon among them", user, groups)
		}
	}
	if got := exec("stat", "-c", "%a %U %G", "/var/lib/shelldon"); strings.TrimSpace(got) != "750 root shelldon" {
		t.Errorf("/var/lib/shelldon is %q, want 750 root shelldon", got)
	}
	if out, err := host.Exec(ctx, "systemd-analyze", "verify", "/etc/systemd/system/shelldon.service", "/etc/systemd/system/shelldon-broker.service", "/etc/systemd/system/shelldon.slice", "/etc/systemd/system/shelldon-turns.slice"); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify = %v:\n%s", err, out)
	}
	for unit, want := range map[string]string{"shelldon.service": "Type=notify", "shelldon-turns.slice": "Slice=shelldon.slice"} {
		if got := exec("systemctl", "show", "-p", strings.Split(want, "=")[0], unit); strings.TrimSpace(got) != want {
			t.Errorf("systemctl show %s = %q, want %q", unit, got, want)
		}
	}
}
