package systemdhost

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"shelldon/units"
)

// Must runs argv in the container as [Host.Exec] does and returns its
// output, failing the test when it fails.
func (h *Host) Must(t testing.TB, argv ...string) string {
	t.Helper()
	out, err := h.Exec(context.Background(), argv...)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// Install installs shelldon into the container as `make install` does on
// a board: each of binaries (host paths) into /usr/bin under its own
// name, the units and slices from units/, the sysusers and tmpfiles
// snippets, which it then applies; and systemd reloads.
func (h *Host) Install(t testing.TB, binaries ...string) {
	t.Helper()
	staged := filepath.Join(h.Dir, "install")
	if err := os.MkdirAll(staged, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, bin := range binaries {
		h.Must(t, "install", "-m", "0755", h.Stage(t, bin), "/usr/bin/"+filepath.Base(bin))
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
		var dest string
		switch filepath.Ext(name) {
		case ".sysusers":
			dest = "/usr/lib/sysusers.d/shelldon.conf"
		case ".tmpfiles":
			dest = "/usr/lib/tmpfiles.d/shelldon.conf"
		default:
			dest = "/etc/systemd/system/" + name
		}
		h.Must(t, "install", "-D", "-m", "0644", filepath.Join(staged, name), dest)
	}
	h.Must(t, "systemd-sysusers")
	h.Must(t, "systemd-tmpfiles", "--create", "/usr/lib/tmpfiles.d/shelldon.conf")
	h.Must(t, "systemctl", "daemon-reload")
}

// Stage copies a host file into [Host.Dir], where the container sees it
// at the same path, and returns that path. The copy keeps the file's
// permission bits.
func (h *Host) Stage(t testing.TB, from string) string {
	t.Helper()
	fi, err := os.Stat(from)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(h.Dir, "staged")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(dir, filepath.Base(from))
	copyFile(t, from, to, fi.Mode().Perm())
	return to
}

func copyFile(t testing.TB, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
