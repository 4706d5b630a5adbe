package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"shelldon/testhost"
)

// leftovers lists the entries of dir other than the ones named in keep.
func leftovers(t *testing.T, dir string, keep ...string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("ReadDir(%s): %v", dir, err)
	}
	var extra []string
outer:
	for _, e := range entries {
		for _, k := range keep {
			if e.Name() == k {
				continue outer
			}
		}
		extra = append(extra, e.Name())
	}
	return extra
}

func TestWriteFileReplacesContentAndSetsMode(t *testing.T) {
	tests := []struct {
		name     string
		existing []byte // nil: no file before
		data     []byte
		perm     os.FileMode
	}{
		{name: "new file", data: []byte("hello\n"), perm: 0o640},
		{name: "replace longer", existing: []byte("a much longer old content\n"), data: []byte("short"), perm: 0o600},
		{name: "replace with empty", existing: []byte("old"), data: []byte{}, perm: 0o644},
		{name: "mode wider than umask", data: []byte("x"), perm: 0o666},
	}
	writers := map[string]func(string, []byte, os.FileMode) error{"WriteFile": WriteFile, "WriteView": WriteView}
	for _, tt := range tests {
		for writerName, write := range writers {
			t.Run(writerName+"/"+tt.name, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "f.md")
				if tt.existing != nil {
					if err := os.WriteFile(path, tt.existing, 0o600); err != nil {
						t.Fatal(err)
					}
				}
				if err := write(path, tt.data, tt.perm); err != nil {
					t.Fatalf("%s(%s) = %v, want nil", writerName, path, err)
				}
				got, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != string(tt.data) {
					t.Errorf("content = %q, want %q", got, tt.data)
				}
				info, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if info.Mode().Perm() != tt.perm {
					t.Errorf("mode = %v, want %v", info.Mode().Perm(), tt.perm)
				}
				if extra := leftovers(t, dir, "f.md"); len(extra) > 0 {
					t.Errorf("left behind %v", extra)
				}
			})
		}
	}
}

func TestWriteFileFailedRenameLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	// A directory where the file should be: the rename must fail.
	path := filepath.Join(dir, "taken")
	if err := os.Mkdir(path, 0o750); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(path, []byte("data"), 0o640)
	if err == nil {
		t.Fatalf("WriteFile over a directory = nil, want an error")
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name %s", err, path)
	}
	if extra := leftovers(t, dir, "taken"); len(extra) > 0 {
		t.Errorf("left behind %v after a failed rename", extra)
	}
	if info, err := os.Stat(path); err != nil || !info.IsDir() {
		t.Errorf("the directory in the way was changed: %v, %v", info, err)
	}
}

func TestWriteFileUnwritableDirectory(t *testing.T) {
	base := t.TempDir()
	notADir := filepath.Join(base, "plain")
	if err := os.WriteFile(notADir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(base, "ro")
	if err := os.Mkdir(readOnly, 0o500); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		path     string
		wantIs   error
		needUser bool // root writes through a read-only mode
	}{
		{name: "missing directory", path: filepath.Join(base, "missing", "f"), wantIs: fs.ErrNotExist},
		{name: "parent is a file", path: filepath.Join(notADir, "f")},
		{name: "read-only directory", path: filepath.Join(readOnly, "f"), wantIs: fs.ErrPermission, needUser: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needUser && os.Geteuid() == 0 {
				asAnotherUser(t)
				return
			}
			err := WriteFile(tt.path, []byte("data"), 0o640)
			if err == nil {
				t.Fatalf("WriteFile(%s) = nil, want an error", tt.path)
			}
			if !strings.Contains(err.Error(), tt.path) || !strings.Contains(err.Error(), "temporary file") {
				t.Errorf("WriteFile(%s) = %q, want it to name the path and the step", tt.path, err)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("WriteFile(%s) = %v, want it to wrap %v", tt.path, err, tt.wantIs)
			}
		})
	}
}

// asAnotherUser runs the current test again in a copy of the test binary
// as uid 65534, for what root is exempt from (directory modes), and fails
// t with the copy's output if it fails there.
func asAnotherUser(t *testing.T) {
	t.Helper()
	const nobody = 65534
	cmd := exec.Command(testhost.SelfForOthers(t), "-test.run=^"+strings.ReplaceAll(t.Name(), "/", "$/^")+"$", "-test.v")
	cmd.Dir = os.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("as uid %d: %v\n%s", nobody, err, out)
	}
}

// TestWriteFilesReplacesABatch: files in two directories, new and
// replaced, each with its content and mode, and no temporary file left.
func TestWriteFilesReplacesABatch(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "memory")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "old.md"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	files := []File{
		{Path: filepath.Join(root, "about.md"), Data: []byte("about")},
		{Path: filepath.Join(sub, "old.md"), Data: []byte("old and new")},
		{Path: filepath.Join(sub, "new.md"), Data: []byte("new")},
	}
	if err := WriteFiles(files, 0o640); err != nil {
		t.Fatalf("WriteFiles = %v, want nil", err)
	}
	for _, f := range files {
		got, err := os.ReadFile(f.Path)
		if err != nil || string(got) != string(f.Data) {
			t.Errorf("%s = %q, %v; want %q", f.Path, got, err, f.Data)
		}
		if fi, err := os.Stat(f.Path); err != nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("%s mode = %v, %v; want 0640", f.Path, fi.Mode(), err)
		}
	}
	if extra := leftovers(t, root, "about.md", "memory"); len(extra) > 0 {
		t.Errorf("left in %s: %v", root, extra)
	}
	if extra := leftovers(t, sub, "old.md", "new.md"); len(extra) > 0 {
		t.Errorf("left in %s: %v", sub, extra)
	}
}

// TestWriteFilesFailingBeforeTheRenamesChangesNothing: a batch with one
// file it cannot write (its directory is gone) replaces none of the
// others, and leaves no temporary file.
func TestWriteFilesFailingBeforeTheRenamesChangesNothing(t *testing.T) {
	dir := t.TempDir()
	kept := filepath.Join(dir, "kept.md")
	if err := os.WriteFile(kept, []byte("as it was"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := WriteFiles([]File{{Path: kept, Data: []byte("changed")}, {Path: filepath.Join(dir, "gone", "x.md"), Data: []byte("x")}}, 0o600)
	if err == nil || !strings.Contains(err.Error(), "x.md") {
		t.Fatalf("WriteFiles = %v, want an error naming x.md", err)
	}
	if got, _ := os.ReadFile(kept); string(got) != "as it was" {
		t.Errorf("kept.md = %q, want it as it was", got)
	}
	if extra := leftovers(t, dir, "kept.md"); len(extra) > 0 {
		t.Errorf("left in %s: %v", dir, extra)
	}
}
