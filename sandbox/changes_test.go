package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"shelldon/beneath"
	"shelldon/testhost"
)

// treeNode is what a tree comparison looks at for one path: what Apply
// carries, and nothing it does not (times, owners).
type treeNode struct {
	Type    fs.FileMode
	Perm    fs.FileMode
	Content string
	Target  string
}

// treeSnapshot records every path below root, without following links.
func treeSnapshot(t *testing.T, root string) map[string]treeNode {
	t.Helper()
	tree := map[string]treeNode{}
	err := filepath.WalkDir(root, func(p string, entry fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := entry.Info()
		if err != nil {
			return err
		}
		n := treeNode{Type: info.Mode().Type(), Perm: info.Mode() &^ fs.ModeType}
		switch {
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			n.Content = string(data)
		case n.Type == fs.ModeSymlink:
			if n.Target, err = os.Readlink(p); err != nil {
				return err
			}
			n.Perm = 0 // meaningless for a link
		}
		tree[filepath.ToSlash(rel)] = n
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", root, err)
	}
	return tree
}

// diffTrees reports every path where two snapshots differ.
func diffTrees(t *testing.T, got, want map[string]treeNode) {
	t.Helper()
	for p, w := range want {
		if g, ok := got[p]; !ok {
			t.Errorf("%s: missing, want %+v", p, w)
		} else if g != w {
			t.Errorf("%s: got %+v, want %+v", p, g, w)
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: unexpected %+v", p, g)
		}
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// writeTestFile writes a file with exactly the mode given, whatever the umask.
func writeTestFile(t *testing.T, p, content string, perm fs.FileMode) {
	t.Helper()
	mustDo(t, os.MkdirAll(filepath.Dir(p), 0o755))
	mustDo(t, os.WriteFile(p, []byte(content), perm))
	mustDo(t, os.Chmod(p, perm))
}

func mkdirTest(t *testing.T, p string, perm fs.FileMode) {
	t.Helper()
	mustDo(t, os.MkdirAll(p, 0o755))
	mustDo(t, os.Chmod(p, perm))
}

// runLayers is a run directory laid out as the lead lays it out: upper
// and work beside the merged mount point.
type runLayers struct {
	runDir, upper, work, merged string
}

func newRunLayers(t *testing.T) runLayers {
	t.Helper()
	runDir := t.TempDir()
	l := runLayers{
		runDir: runDir,
		upper:  filepath.Join(runDir, "upper"),
		work:   filepath.Join(runDir, "work"),
		merged: filepath.Join(runDir, "merged"),
	}
	for _, dir := range []string{l.upper, l.work, l.merged} {
		mkdirTest(t, dir, 0o755)
	}
	return l
}

// mountTestOverlay mounts lower under l.merged with the sandbox's options and
// returns the function that unmounts it (also run at cleanup).
func mountTestOverlay(t *testing.T, l runLayers, lower string) (unmount func()) {
	t.Helper()
	testhost.Root(t)
	options := "lowerdir=" + lower + ",upperdir=" + l.upper + ",workdir=" + l.work +
		",redirect_dir=off,metacopy=off,index=off,xino=off"
	if err := unix.Mount("overlay", l.merged, "overlay", 0, options); err != nil {
		testhost.Missing(t, "an overlayfs mount", "a kernel with overlayfs: "+err.Error())
	}
	mounted := true
	unmount = func() {
		if mounted {
			mounted = false
			mustDo(t, unix.Unmount(l.merged, 0))
		}
	}
	t.Cleanup(unmount)
	return unmount
}

// TestScanRealOverlay makes changes through a real overlay mount, then
// checks that the scan lists exactly them and that applying the list
// makes the workspace what the mount showed.
func TestScanRealOverlay(t *testing.T) {
	testhost.Root(t)
	lower := t.TempDir()
	const workspaceOwner = 4321 // not root: what Apply creates must end up owned by the workspace's owner
	writeTestFile(t, filepath.Join(lower, "keep.txt"), "keep", 0o644)
	writeTestFile(t, filepath.Join(lower, "edit.txt"), "old", 0o644)
	writeTestFile(t, filepath.Join(lower, "chmod.sh"), "#!/bin/sh\n", 0o644)
	writeTestFile(t, filepath.Join(lower, "gone.txt"), "bye", 0o644)
	writeTestFile(t, filepath.Join(lower, "touched.txt"), "same", 0o644)
	writeTestFile(t, filepath.Join(lower, "olddir/a.txt"), "a", 0o644)
	writeTestFile(t, filepath.Join(lower, "olddir/sub/b.txt"), "b", 0o644)
	writeTestFile(t, filepath.Join(lower, "rebuilt/x.txt"), "x", 0o644)
	writeTestFile(t, filepath.Join(lower, "sub/inner.txt"), "inner", 0o644)
	writeTestFile(t, filepath.Join(lower, "sub/other.txt"), "other", 0o644)
	writeTestFile(t, filepath.Join(lower, "file2dir"), "f", 0o644)
	writeTestFile(t, filepath.Join(lower, "dir2file/q.txt"), "q", 0o644)
	mkdirTest(t, filepath.Join(lower, "perms"), 0o755)
	mustDo(t, os.Symlink("keep.txt", filepath.Join(lower, "link")))
	mustDo(t, filepath.WalkDir(lower, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, workspaceOwner, workspaceOwner)
	}))

	l := newRunLayers(t)
	unmount := mountTestOverlay(t, l, lower)
	m := func(rel string) string { return filepath.Join(l.merged, rel) }
	writeTestFile(t, m("edit.txt"), "new contents", 0o644)
	mustDo(t, os.Chmod(m("chmod.sh"), 0o755))
	mustDo(t, os.Remove(m("gone.txt")))
	f, err := os.OpenFile(m("touched.txt"), os.O_RDWR, 0) // copies it up, changes nothing
	mustDo(t, err)
	mustDo(t, f.Close())
	mustDo(t, os.RemoveAll(m("olddir")))
	mustDo(t, os.RemoveAll(m("rebuilt")))
	mkdirTest(t, m("rebuilt"), 0o755)
	writeTestFile(t, m("rebuilt/z.txt"), "z", 0o600)
	writeTestFile(t, m("sub/inner.txt"), "inner, edited", 0o644)
	mustDo(t, os.Remove(m("file2dir")))
	mkdirTest(t, m("file2dir"), 0o750)
	writeTestFile(t, m("file2dir/n.txt"), "n", 0o644)
	mustDo(t, os.RemoveAll(m("dir2file")))
	writeTestFile(t, m("dir2file"), "now a file", 0o640)
	mustDo(t, os.Chmod(m("perms"), 0o700))
	mustDo(t, os.Remove(m("link")))
	mustDo(t, os.Symlink("edit.txt", m("link")))
	writeTestFile(t, m("new.txt"), "new", 0o640)
	mkdirTest(t, m("newdir/deep"), 0o755)
	writeTestFile(t, m("newdir/deep/f.txt"), "deep", 0o644)
	mustDo(t, os.Symlink("new.txt", m("newlink"))) // a link out is refused by Apply; see apply_test.go
	mkdirTest(t, m("tmpdir"), 0o755)               // made and removed: leaves nothing
	mustDo(t, os.Remove(m("tmpdir")))
	want := treeSnapshot(t, l.merged)
	unmount()

	changes, err := scanUpper(l.upper, lower)
	if err != nil {
		t.Fatalf("scanUpper: %v", err)
	}
	wantChanges := []Change{
		{Path: "chmod.sh", Kind: Modified, Perm: 0o755, Size: 10},
		{Path: "dir2file", Kind: Modified, Perm: 0o640, Size: 10},
		{Path: "edit.txt", Kind: Modified, Perm: 0o644, Size: 12},
		{Path: "file2dir", Kind: Replaced, Type: fs.ModeDir, Perm: 0o750},
		{Path: "file2dir/n.txt", Kind: Created, Perm: 0o644, Size: 1},
		{Path: "gone.txt", Kind: Deleted},
		{Path: "link", Kind: Modified, Type: fs.ModeSymlink, Target: "edit.txt"},
		{Path: "new.txt", Kind: Created, Perm: 0o640, Size: 3},
		{Path: "newdir", Kind: Created, Type: fs.ModeDir, Perm: 0o755},
		{Path: "newdir/deep", Kind: Created, Type: fs.ModeDir, Perm: 0o755},
		{Path: "newdir/deep/f.txt", Kind: Created, Perm: 0o644, Size: 4},
		{Path: "newlink", Kind: Created, Type: fs.ModeSymlink, Target: "new.txt"},
		{Path: "olddir", Kind: Deleted},
		{Path: "perms", Kind: Modified, Type: fs.ModeDir, Perm: 0o700},
		{Path: "rebuilt", Kind: Replaced, Type: fs.ModeDir, Perm: 0o755},
		{Path: "rebuilt/z.txt", Kind: Created, Perm: 0o600, Size: 1},
		{Path: "sub/inner.txt", Kind: Modified, Perm: 0o644, Size: 13},
	}
	if !reflect.DeepEqual(changes, wantChanges) {
		t.Fatalf("scanUpper = \n%+v\nwant\n%+v", changes, wantChanges)
	}

	set := newKeptChangeSet(l.upper, lower, changes)
	jail := beneath.Jail{Root: lower}
	for round := 1; round <= 2; round++ { // the second round proves Apply idempotent
		report, err := set.Apply(jail)
		if err != nil {
			t.Fatalf("Apply round %d: %v", round, err)
		}
		if len(report.Refused) != 0 || len(report.Applied) != len(changes) {
			t.Fatalf("Apply round %d: applied %d, refused %+v; want all %d applied", round, len(report.Applied), report.Refused, len(changes))
		}
		diffTrees(t, treeSnapshot(t, lower), want)
	}
	for _, rel := range []string{"new.txt", "newdir", "newdir/deep/f.txt", "newlink", "file2dir", "file2dir/n.txt", "edit.txt", "link"} {
		info, err := os.Lstat(filepath.Join(lower, rel))
		mustDo(t, err)
		if stat := info.Sys().(*syscall.Stat_t); stat.Uid != workspaceOwner || stat.Gid != workspaceOwner {
			t.Errorf("%s is owned by %d:%d, want the workspace owner %d:%d", rel, stat.Uid, stat.Gid, workspaceOwner, workspaceOwner)
		}
	}

	mustDo(t, set.Discard())
	if _, err := os.Lstat(l.upper); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Discard, Lstat(upper) = %v, want it gone", err)
	}
	mustDo(t, set.Discard()) // already gone: not an error
}

// upperEntry is one entry of a synthesized upper layer.
type upperEntry struct {
	path   string
	make   func(t *testing.T, p string)
	xattrs map[string]string
}

func layerFile(content string) func(*testing.T, string) {
	return func(t *testing.T, p string) { writeTestFile(t, p, content, 0o644) }
}

func layerDir(perm fs.FileMode) func(*testing.T, string) {
	return func(t *testing.T, p string) { mkdirTest(t, p, perm) }
}

func layerLink(target string) func(*testing.T, string) {
	return func(t *testing.T, p string) { mustDo(t, os.Symlink(target, p)) }
}

func layerWhiteout(t *testing.T, p string) {
	mustDo(t, unix.Mknod(p, unix.S_IFCHR, 0))
}

func layerSpecial(mode uint32, dev int) func(*testing.T, string) {
	return func(t *testing.T, p string) { mustDo(t, unix.Mknod(p, mode|0o644, dev)) }
}

// buildLayer makes the entries below root, in order.
func buildLayer(t *testing.T, root string, entries []upperEntry) {
	t.Helper()
	for _, e := range entries {
		p := filepath.Join(root, e.path)
		mustDo(t, os.MkdirAll(filepath.Dir(p), 0o755))
		e.make(t, p)
		for name, value := range e.xattrs {
			mustDo(t, unix.Lsetxattr(p, name, []byte(value), 0))
		}
	}
}

func TestScanUpperSynthesized(t *testing.T) {
	testhost.Root(t) // whiteouts and trusted attributes need it
	opaque := map[string]string{xattrOpaque: "y"}
	tests := []struct {
		name         string
		lower, upper []upperEntry
		want         []Change
		wantErr      error
	}{{
		name:  "whiteout of a directory",
		lower: []upperEntry{{path: "d/a", make: layerFile("a")}, {path: "d/e/b", make: layerFile("b")}},
		upper: []upperEntry{{path: "d", make: layerWhiteout}},
		want:  []Change{{Path: "d", Kind: Deleted}},
	}, {
		name:  "whiteout hiding nothing",
		upper: []upperEntry{{path: "ghost", make: layerWhiteout}},
	}, {
		name:  "whiteout in a copied-up directory",
		lower: []upperEntry{{path: "d/a", make: layerFile("a")}, {path: "d/b", make: layerFile("b")}},
		upper: []upperEntry{{path: "d", make: layerDir(0o755)}, {path: "d/a", make: layerWhiteout}},
		want:  []Change{{Path: "d/a", Kind: Deleted}},
	}, {
		name:    "redirect attribute",
		lower:   []upperEntry{{path: "d/a", make: layerFile("a")}},
		upper:   []upperEntry{{path: "e", make: layerDir(0o755), xattrs: map[string]string{xattrRedirect: "/d"}}},
		wantErr: ErrUnsupportedOverlay,
	}, {
		name:    "metacopy attribute",
		lower:   []upperEntry{{path: "a", make: layerFile("a")}},
		upper:   []upperEntry{{path: "a", make: layerFile(""), xattrs: map[string]string{xattrMetacopy: ""}}},
		wantErr: ErrUnsupportedOverlay,
	}, {
		name:  "fifo and device are listed, not dropped",
		lower: []upperEntry{{path: "old", make: layerFile("x")}},
		upper: []upperEntry{
			{path: "pipe", make: layerSpecial(unix.S_IFIFO, 0)},
			{path: "old", make: layerSpecial(unix.S_IFCHR, int(unix.Mkdev(1, 3)))},
		},
		want: []Change{
			{Path: "old", Kind: Modified, Type: fs.ModeDevice | fs.ModeCharDevice, Perm: 0o644},
			{Path: "pipe", Kind: Created, Type: fs.ModeNamedPipe, Perm: 0o644},
		},
	}, {
		name:  "opaque directory over a directory",
		lower: []upperEntry{{path: "d/a", make: layerFile("a")}, {path: "d/gone", make: layerFile("g")}},
		upper: []upperEntry{{path: "d", make: layerDir(0o755), xattrs: opaque}, {path: "d/a", make: layerFile("a")}},
		want: []Change{
			{Path: "d", Kind: Replaced, Type: fs.ModeDir, Perm: 0o755},
			{Path: "d/a", Kind: Created, Perm: 0o644, Size: 1},
		},
	}, {
		name:  "opaque directory over nothing",
		upper: []upperEntry{{path: "d", make: layerDir(0o755), xattrs: opaque}},
		want:  []Change{{Path: "d", Kind: Created, Type: fs.ModeDir, Perm: 0o755}},
	}, {
		name:  "directory over a link is never followed",
		lower: []upperEntry{{path: "real/passwd", make: layerFile("p")}, {path: "ln", make: layerLink("real")}},
		upper: []upperEntry{{path: "ln", make: layerDir(0o755)}, {path: "ln/passwd", make: layerFile("p")}},
		want: []Change{
			{Path: "ln", Kind: Replaced, Type: fs.ModeDir, Perm: 0o755},
			{Path: "ln/passwd", Kind: Created, Perm: 0o644, Size: 1},
		},
	}, {
		name:  "copied-up directory with only its time changed",
		lower: []upperEntry{{path: "d", make: layerDir(0o755)}},
		upper: []upperEntry{{path: "d", make: layerDir(0o755)}},
	}, {
		name:  "copy-up with the same contents",
		lower: []upperEntry{{path: "a", make: layerFile("same")}, {path: "l", make: layerLink("a")}},
		upper: []upperEntry{{path: "a", make: layerFile("same")}, {path: "l", make: layerLink("a")}},
	}, {
		name:  "same size, other contents",
		lower: []upperEntry{{path: "a", make: layerFile("abcd")}},
		upper: []upperEntry{{path: "a", make: layerFile("abce")}},
		want:  []Change{{Path: "a", Kind: Modified, Perm: 0o644, Size: 4}},
	}, {
		name:  "empty upper",
		lower: []upperEntry{{path: "a", make: layerFile("a")}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lower, upper := t.TempDir(), t.TempDir()
			buildLayer(t, lower, tt.lower)
			buildLayer(t, upper, tt.upper)
			got, err := scanUpper(upper, lower)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("scanUpper = %+v, %v; want an error wrapping %v", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("scanUpper: %v", err)
			}
			if len(got) != 0 || len(tt.want) != 0 {
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("scanUpper = %+v, want %+v", got, tt.want)
				}
			}
		})
	}
}

func TestScanUpperBadLayers(t *testing.T) {
	existing := t.TempDir()
	aFile := filepath.Join(existing, "file")
	writeTestFile(t, aFile, "x", 0o644)
	missing := filepath.Join(existing, "missing")
	tests := []struct{ name, upper, lower string }{
		{"upper missing", missing, existing},
		{"lower missing", existing, missing},
		{"upper is a file", aFile, existing},
		{"lower is a file", existing, aFile},
		{"upper empty name", "", existing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := scanUpper(tt.upper, tt.lower); err == nil {
				t.Errorf("scanUpper(%q, %q) = %+v, nil; want an error", tt.upper, tt.lower, got)
			}
		})
	}
}
