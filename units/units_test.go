package units_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"shelldon/testhost/systemdhost"
	"shelldon/units"
)

// TestSystemdAcceptsTheUnits installs the units into a real systemd, as
// `make install` does, and asks it to verify them, create the users and
// the directories, and load them.
func TestSystemdAcceptsTheUnits(t *testing.T) {
	host := systemdhost.Boot(t)
	ctx := context.Background()
	exec := func(argv ...string) string {
		t.Helper()
		out, err := host.Exec(ctx, argv...)
		if err != nil {
			t.Fatalf("%q in the test host: %v\n%s", argv, err, out)
		}
		return string(out)
	}
	staged := filepath.Join(host.Dir, "units")
	if err := os.Mkdir(staged, 0o755); err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(units.Files, "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		data, err := units.Files.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(staged, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// ExecStart must name an executable; any will do for verifying.
	exec("install", "-m", "0755", "/bin/true", "/usr/bin/shelldon")
	exec("install", "-D", "-m", "0644", staged+"/shelldon.sysusers", "/usr/lib/sysusers.d/shelldon.conf")
	exec("install", "-D", "-m", "0644", staged+"/shelldon.tmpfiles", "/usr/lib/tmpfiles.d/shelldon.conf")
	for _, unit := range []string{"shelldon.service", "shelldon-broker.service", "shelldon.slice", "shelldon-turns.slice"} {
		exec("install", "-m", "0644", staged+"/"+unit, "/etc/systemd/system/"+unit)
	}

	exec("systemd-sysusers")
	for _, user := range []string{"shelldon-broker", "shelldon-worker"} {
		if groups := exec("id", "-nG", user); !strings.Contains(groups, "shelldon") {
			t.Errorf("%s is in groups %q, want shelldon among them", user, groups)
		}
	}
	exec("systemd-tmpfiles", "--create", "/usr/lib/tmpfiles.d/shelldon.conf")
	if got := exec("stat", "-c", "%a %U %G", "/var/lib/shelldon"); strings.TrimSpace(got) != "750 root shelldon" {
		t.Errorf("/var/lib/shelldon is %q, want 750 root shelldon", got)
	}
	if out, err := host.Exec(ctx, "systemd-analyze", "verify", "/etc/systemd/system/shelldon.service", "/etc/systemd/system/shelldon-broker.service", "/etc/systemd/system/shelldon.slice", "/etc/systemd/system/shelldon-turns.slice"); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify = %v:\n%s", err, out)
	}
	exec("systemctl", "daemon-reload")
	for unit, want := range map[string]string{"shelldon.service": "Type=notify", "shelldon-turns.slice": "Slice=shelldon.slice"} {
		if got := exec("systemctl", "show", "-p", strings.Split(want, "=")[0], unit); strings.TrimSpace(got) != want {
			t.Errorf("systemctl show %s = %q, want %q", unit, got, want)
		}
	}
}
