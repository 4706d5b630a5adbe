package main

import (
	"context"
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"shelldon/testhost"
	"shelldon/testhost/systemdhost"
	"shelldon/testhost/vm"
)

// TestDebInstallsUpgradesAndRemoves builds the amd64 .deb with `make
// deb-amd64` (nfpm) and installs it on a booted Debian with systemd: the
// users, the directories and the enabled units come from its scripts; the
// pet starts as installed; removal stops and disables it and keeps the
// pet's memory.
func TestDebInstallsUpgradesAndRemoves(t *testing.T) {
	vm.Require(t, "amd64") // root and the tools: the same as for booting a host
	deb := vm.BuildDeb(t, "amd64")
	contents, err := exec.Command("dpkg-deb", "--contents", deb).CombinedOutput()
	if err != nil {
		t.Fatalf("dpkg-deb --contents: %v\n%s", err, contents)
	}
	for _, want := range []string{"./usr/bin/shelldon", "./usr/bin/shelldon-worker", "./lib/systemd/system/shelldon.service", "./lib/systemd/system/shelldon-broker.service",
		"./lib/systemd/system/shelldon-panel.service", "./lib/systemd/system/shelldon.slice", "./usr/lib/sysusers.d/shelldon.conf",
		"./usr/lib/tmpfiles.d/shelldon.conf", "./etc/shelldon/shelldon.toml",
		// Debian's policy asks for the licence; the slice's Documentation= names the README,
		// which leads to the manual's pages beside it.
		"./usr/share/doc/shelldon/copyright", "./usr/share/doc/shelldon/README.md", "./usr/share/doc/shelldon/docs/telegram.md"} {
		if !strings.Contains(string(contents), want) {
			t.Errorf("the .deb lacks %s:\n%s", want, contents)
		}
	}

	host := systemdhost.Boot(t)
	staged := filepath.Join(host.Dir, filepath.Base(deb))
	data, err := os.ReadFile(deb)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(staged, data, 0o644); err != nil {
		t.Fatal(err)
	}
	deb = staged
	if out := host.Must(t, "dpkg", "-i", deb); !strings.Contains(out, "shelldon doctor") {
		t.Errorf("the first install does not say what to do next:\n%s", out)
	}
	for user, group := range map[string]string{"shelldon-broker": "shelldon", "shelldon-worker": "shelldon", "shelldon-panel": "spi", "shelldon-sandbox": "shelldon-sandbox"} {
		if groups := host.Must(t, "id", "-nG", user); !strings.Contains(groups, group) {
			t.Errorf("%s is in %q, want %s among its groups", user, groups, group)
		}
	}
	for path, want := range map[string]string{"/etc/shelldon/telegram": "700 root root", "/etc/shelldon/credentials": "700 root root"} {
		if got := strings.TrimSpace(host.Must(t, "stat", "-c", "%a %U %G", path)); got != want {
			t.Errorf("%s is %q, want %q", path, got, want)
		}
	}
	for _, unit := range []string{"shelldon.service", "shelldon-broker.service", "shelldon-panel.service"} {
		// Not before the owner configured it: it would fail at every boot.
		if out, _ := host.Exec(context.Background(), "systemctl", "is-enabled", unit); strings.TrimSpace(string(out)) != "disabled" {
			t.Errorf("%s is %q after install, want disabled", unit, out)
		}
	}
	// As the message says; core starts as installed (it needs no
	// provider; the broker does).
	if _, err := host.Exec(context.Background(), "systemctl", "enable", "--now", "shelldon.service"); err != nil {
		journal, _ := host.Exec(context.Background(), "journalctl", "--no-pager", "-o", "cat", "-u", "shelldon.service")
		t.Fatalf("systemctl start shelldon: %v\n%s", err, journal)
	}
	if got := strings.TrimSpace(host.Must(t, "systemctl", "is-active", "shelldon.service")); got != "active" {
		t.Errorf("shelldon.service is %q, want active", got)
	}
	// The state directory and the bus socket are the group's, so the
	// broker, the panel and the workers can reach core; what a turn reads
	// is the workers' group's alone, and the memory tree core's.
	for path, want := range map[string]string{
		"/var/lib/shelldon": "710 root shelldon", "/var/lib/shelldon/bus.sock": "660 root shelldon",
		"/var/lib/shelldon/workspace": "2750 root shelldon-worker", "/var/lib/shelldon/about.md": "640 root shelldon-worker",
		"/var/lib/shelldon/memory": "700 root shelldon", "/var/lib/shelldon/vault": "700 root shelldon", // core's group, which a 0700 gives nothing
	} {
		if got := strings.TrimSpace(host.Must(t, "stat", "-c", "%a %U %G", path)); got != want {
			t.Errorf("%s is %q, want %q", path, got, want)
		}
	}
	// An upgrade (the same package again) keeps it running.
	host.Must(t, "dpkg", "-i", deb)
	if got := strings.TrimSpace(host.Must(t, "systemctl", "is-active", "shelldon.service")); got != "active" {
		t.Errorf("after an upgrade shelldon.service is %q, want active", got)
	}
	host.Must(t, "dpkg", "--remove", "shelldon")
	if out, _ := host.Exec(context.Background(), "systemctl", "is-active", "shelldon.service"); strings.TrimSpace(string(out)) == "active" {
		t.Error("shelldon.service still runs after removal")
	}
	if _, err := host.Exec(context.Background(), "test", "-e", "/usr/bin/shelldon"); err == nil {
		t.Error("/usr/bin/shelldon is left after removal")
	}
	host.Must(t, "test", "-d", "/var/lib/shelldon") // the pet's memory stays
}

// TestDebForEveryArch builds the three packages as `make deb` does and
// checks each against the machine it is for: the control file's
// architecture, the binary's ELF machine and Go settings, and, for arm64
// and armhf, the same files as the amd64 package, which the other tests
// install and run.
func TestDebForEveryArch(t *testing.T) {
	dpkgDeb := testhost.Tool(t, "dpkg-deb", "dpkg")
	files := func(t *testing.T, deb string) []string {
		out, err := exec.Command(dpkgDeb, "--contents", deb).CombinedOutput()
		if err != nil {
			t.Fatalf("dpkg-deb --contents %s: %v\n%s", deb, err, out)
		}
		var names []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			fields := strings.Fields(line)
			names = append(names, fields[len(fields)-1])
		}
		slices.Sort(names)
		return names
	}
	amd64 := vm.BuildDeb(t, "amd64")
	want := files(t, amd64)
	for _, tc := range []struct {
		arch     string
		machine  elf.Machine
		class    elf.Class
		settings map[string]string
	}{
		// Pure Go everywhere, even when whoever runs make has cgo on (the
		// race detector's test run does).
		{"amd64", elf.EM_X86_64, elf.ELFCLASS64, map[string]string{"GOARCH": "amd64", "CGO_ENABLED": "0"}},
		{"arm64", elf.EM_AARCH64, elf.ELFCLASS64, map[string]string{"GOARCH": "arm64", "CGO_ENABLED": "0"}},
		{"armhf", elf.EM_ARM, elf.ELFCLASS32, map[string]string{"GOARCH": "arm", "GOARM": "7", "CGO_ENABLED": "0"}},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			deb := amd64
			if tc.arch != "amd64" {
				deb = vm.BuildDeb(t, tc.arch)
			}
			if out, err := exec.Command(dpkgDeb, "--field", deb, "Architecture").Output(); err != nil || strings.TrimSpace(string(out)) != tc.arch {
				t.Errorf("%s: Architecture %q, %v; want %s", filepath.Base(deb), out, err, tc.arch)
			}
			if got := files(t, deb); !slices.Equal(got, want) {
				t.Errorf("%s holds\n%q\nwant what the amd64 package holds:\n%q", filepath.Base(deb), got, want)
			}
			root := t.TempDir()
			if out, err := exec.Command(dpkgDeb, "--extract", deb, root).CombinedOutput(); err != nil {
				t.Fatalf("dpkg-deb --extract: %v\n%s", err, out)
			}
			for _, name := range []string{"usr/bin/shelldon", "usr/bin/shelldon-worker"} {
				checkBinary(t, filepath.Join(root, name), name, tc.machine, tc.class, tc.settings)
			}
		})
	}
}

// checkBinary checks that the binary at path (name, in the package) is for
// machine and class and was built with settings.
func checkBinary(t *testing.T, path, name string, machine elf.Machine, class elf.Class, settings map[string]string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != machine || f.Class != class {
		t.Errorf("%s is %v %v, want %v %v", name, f.Class, f.Machine, class, machine)
	}
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range info.Settings {
		got[s.Key] = s.Value
	}
	for key, value := range settings {
		if got[key] != value {
			t.Errorf("%s was built with %s=%q, want %q", name, key, got[key], value)
		}
	}
}
