package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shelldon/testhost"
)

// layerTree lists a mask layer: each whiteout as "w", each directory as
// "d <mode> <uid>:<gid>".
func layerTree(t *testing.T, layer string) map[string]string {
	t.Helper()
	tree := map[string]string{}
	err := filepath.Walk(layer, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(layer, p)
		var st unix.Stat_t
		mustDo(t, unix.Lstat(p, &st))
		switch {
		case fi.IsDir():
			tree[rel] = fmt.Sprintf("d %s %d:%d", strings.TrimPrefix(fi.Mode().String(), "d"), st.Uid, st.Gid)
		case st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0:
			tree[rel] = "w"
		default:
			tree[rel] = "unexpected " + fi.Mode().String()
		}
		return nil
	})
	mustDo(t, err)
	return tree
}

func TestBuildMask(t *testing.T) {
	testhost.Root(t) // whiteouts, owners and the copy of a mount need it
	ws := t.TempDir()
	mustDo(t, os.Chmod(ws, 0o751))
	mustDo(t, os.Chown(ws, 7, 7))
	writeTestFile(t, filepath.Join(ws, "id_rsa"), "k", 0o600)
	writeTestFile(t, filepath.Join(ws, "plain.txt"), "p", 0o644)
	writeTestFile(t, filepath.Join(ws, "a/b/.env"), "e", 0o600)
	writeTestFile(t, filepath.Join(ws, "a/b/ok.py"), "o", 0o644)
	mustDo(t, unix.Chmod(filepath.Join(ws, "a"), 0o2750))
	mustDo(t, os.Chown(filepath.Join(ws, "a"), 8, 9))
	writeTestFile(t, filepath.Join(ws, "certs.pem/inner/deeper/x.txt"), "x", 0o644) // a directory named like a credential
	mustDo(t, os.Symlink("plain.txt", filepath.Join(ws, "deploy.key")))             // a link named like one
	mustDo(t, os.Symlink("id_rsa", filepath.Join(ws, "innocent")))                  // a link to one: hidden by the target's name
	mustDo(t, os.Symlink("/", filepath.Join(ws, "root")))                           // never followed
	writeTestFile(t, filepath.Join(ws, "store/vault/token"), "v", 0o600)
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	mustDo(t, os.Chtimes(filepath.Join(ws, "a", "b"), old, old))

	var st unix.Stat_t
	mustDo(t, unix.Stat(filepath.Join(ws, "store/vault"), &st))
	layer := filepath.Join(t.TempDir(), "mask")
	mustDo(t, buildMask(layer, ws, fileID{dev: st.Dev, ino: st.Ino}, maxMaskEntries))

	want := map[string]string{
		".":           "d rwxr-x--x 7:7",
		"id_rsa":      "w",
		"deploy.key":  "w",
		"certs.pem":   "w",
		"a":           "d grwxr-x--- 8:9",
		"a/b":         "d rwxr-xr-x 0:0",
		"a/b/.env":    "w",
		"store":       "d rwxr-xr-x 0:0",
		"store/vault": "w",
	}
	got := layerTree(t, layer)
	for name, w := range want {
		if got[name] != w {
			t.Errorf("mask layer has %s as %q, want %q", name, got[name], w)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("mask layer holds %s (%s), which it should not", name, got[name])
		}
	}
	var ab unix.Stat_t
	mustDo(t, unix.Stat(filepath.Join(layer, "a/b"), &ab))
	if mtime := time.Unix(ab.Mtim.Unix()); !mtime.Equal(old) {
		t.Errorf("a/b in the mask layer has mtime %v, want the workspace's %v", mtime, old)
	}
}

// TestBuildMaskSeesUnderMounts: an overlay over the workspace shows what a
// mount inside it covers, not the mount; so does the look for credentials.
func TestBuildMaskSeesUnderMounts(t *testing.T) {
	testhost.Root(t)
	ws := t.TempDir()
	writeTestFile(t, filepath.Join(ws, "sub/.env"), "covered", 0o600)
	mustDo(t, unix.Mount("tmpfs", filepath.Join(ws, "sub"), "tmpfs", 0, "size=1m"))
	t.Cleanup(func() { unix.Unmount(filepath.Join(ws, "sub"), unix.MNT_DETACH) })
	writeTestFile(t, filepath.Join(ws, "sub/id_rsa"), "on the mount", 0o600)
	layer := filepath.Join(t.TempDir(), "mask")
	mustDo(t, buildMask(layer, ws, fileID{}, maxMaskEntries))
	got := layerTree(t, layer)
	if got["sub/.env"] != "w" || got["sub/id_rsa"] != "" {
		t.Errorf("mask layer = %v, want sub/.env hidden, the one the overlay shows", got)
	}
}

func TestBuildMaskIsBounded(t *testing.T) {
	testhost.Root(t)
	ws := t.TempDir()
	for _, name := range []string{"a", "b", "c/d", "c/e"} {
		writeTestFile(t, filepath.Join(ws, name), "x", 0o644)
	}
	if err := buildMask(filepath.Join(t.TempDir(), "ok"), ws, fileID{}, 5); err != nil {
		t.Errorf("five entries under a limit of five: %v", err)
	}
	err := buildMask(filepath.Join(t.TempDir(), "over"), ws, fileID{}, 4)
	if !errors.Is(err, ErrWorkspace) || !strings.Contains(err.Error(), "more than 4 files and directories") {
		t.Errorf("five entries under a limit of four: %v, want ErrWorkspace saying so", err)
	}
}
