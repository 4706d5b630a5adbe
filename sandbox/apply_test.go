package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"shelldon/beneath"
	"shelldon/testhost"
)

// applyCase is a workspace, an upper layer and the changes to apply from
// it, with what Apply must do.
type applyCase struct {
	name      string
	workspace []upperEntry
	upper     []upperEntry
	changes   []Change
	// vault is the vault's path relative to the workspace, or "".
	vault string
	// outside holds entries of a directory outside the workspace; an
	// entry's make may reach it through the OUTSIDE placeholder.
	outside []upperEntry
	// wantApplied lists paths in the order applied; wantRefused maps each
	// refused path to words its reason must contain.
	wantApplied []string
	wantRefused map[string]string
	// check looks at the result.
	check func(t *testing.T, workspace, outside string)
}

// outsidePlaceholder in a link target stands for the outside directory.
const outsidePlaceholder = "OUTSIDE"

func linkOutside(rel string) func(*testing.T, string) {
	return func(t *testing.T, p string) {
		// The caller rewrites the placeholder before the link is made.
		mustDo(t, os.Symlink(outsidePlaceholder+"/"+rel, p))
	}
}

// buildWithOutside builds entries, then points links at the outside
// directory where they name the placeholder.
func buildWithOutside(t *testing.T, root, outside string, entries []upperEntry) {
	t.Helper()
	buildLayer(t, root, entries)
	for _, e := range entries {
		p := filepath.Join(root, e.path)
		target, err := os.Readlink(p)
		if err != nil || !strings.HasPrefix(target, outsidePlaceholder) {
			continue
		}
		mustDo(t, os.Remove(p))
		mustDo(t, os.Symlink(outside+strings.TrimPrefix(target, outsidePlaceholder), p))
	}
}

func changePaths(changes []Change) []string {
	var out []string
	for _, c := range changes {
		out = append(out, c.Path)
	}
	return out
}

func wantContent(t *testing.T, p, want string) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Errorf("read %s: %v, want %q", p, err, want)
	} else if string(data) != want {
		t.Errorf("%s holds %q, want %q", p, data, want)
	}
}

func wantAbsent(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Lstat(%s) = %v, want it absent", p, err)
	}
}

func TestApply(t *testing.T) {
	testhost.Root(t) // whiteouts and fifos need it
	fileChange := func(p, content string) Change {
		return Change{Path: p, Kind: Created, Perm: 0o644, Size: int64(len(content))}
	}
	tests := []applyCase{{
		name:        "credential-shaped layerFile refused, others applied",
		upper:       []upperEntry{{path: ".env", make: layerFile("KEY=1")}, {path: "ok.txt", make: layerFile("ok")}},
		changes:     []Change{fileChange(".env", "KEY=1"), fileChange("ok.txt", "ok")},
		wantApplied: []string{"ok.txt"},
		wantRefused: map[string]string{".env": "environment file"},
		check: func(t *testing.T, ws, _ string) {
			wantAbsent(t, filepath.Join(ws, ".env"))
			wantContent(t, filepath.Join(ws, "ok.txt"), "ok")
		},
	}, {
		name:        "path into the vault refused",
		workspace:   []upperEntry{{path: "vault/token", make: layerFile("secret")}},
		vault:       "vault",
		upper:       []upperEntry{{path: "vault/token", make: layerFile("stolen")}, {path: "vault/new", make: layerFile("n")}},
		changes:     []Change{fileChange("vault/token", "stolen"), fileChange("vault/new", "n"), {Path: "vault", Kind: Deleted}},
		wantRefused: map[string]string{"vault": "vault", "vault/new": "vault", "vault/token": "vault"},
		check: func(t *testing.T, ws, _ string) {
			wantContent(t, filepath.Join(ws, "vault/token"), "secret")
			wantAbsent(t, filepath.Join(ws, "vault/new"))
		},
	}, {
		name:        "removing a directory that holds the vault refused",
		workspace:   []upperEntry{{path: "private/vault/token", make: layerFile("secret")}, {path: "private/notes", make: layerFile("n")}},
		vault:       "private/vault",
		changes:     []Change{{Path: "private", Kind: Deleted}},
		wantRefused: map[string]string{"private": "holds the vault"},
		check: func(t *testing.T, ws, _ string) {
			wantContent(t, filepath.Join(ws, "private/vault/token"), "secret")
		},
	}, {
		name:        "removing a directory that holds a credential refused",
		workspace:   []upperEntry{{path: "conf/prod.env", make: layerFile("K=1")}, {path: "conf/a", make: layerFile("a")}},
		changes:     []Change{{Path: "conf", Kind: Deleted}},
		wantRefused: map[string]string{"conf": "prod.env"},
		check: func(t *testing.T, ws, _ string) {
			wantContent(t, filepath.Join(ws, "conf/prod.env"), "K=1")
		},
	}, {
		name:        "write through a link out of the workspace refused",
		outside:     []upperEntry{{path: "passwd", make: layerFile("root:x:0:0")}},
		workspace:   []upperEntry{{path: "link", make: linkOutside("")}},
		upper:       []upperEntry{{path: "link/passwd", make: layerFile("pwned")}},
		changes:     []Change{fileChange("link/passwd", "pwned")},
		wantRefused: map[string]string{"link/passwd": "leaves the workspace"},
		check: func(t *testing.T, ws, outside string) {
			wantContent(t, filepath.Join(outside, "passwd"), "root:x:0:0")
		},
	}, {
		name:        "write through a link inside the workspace refused",
		workspace:   []upperEntry{{path: "real/keep", make: layerFile("k")}, {path: "sub", make: layerLink("real")}},
		upper:       []upperEntry{{path: "sub/file", make: layerFile("f")}},
		changes:     []Change{fileChange("sub/file", "f")},
		wantRefused: map[string]string{"sub/file": `goes through "sub", a symbolic link`},
		check: func(t *testing.T, ws, _ string) {
			wantAbsent(t, filepath.Join(ws, "real/file"))
		},
	}, {
		name: "special files refused",
		upper: []upperEntry{
			{path: "pipe", make: layerSpecial(unix.S_IFIFO, 0)},
			{path: "null", make: layerSpecial(unix.S_IFCHR, int(unix.Mkdev(1, 3)))},
		},
		changes: []Change{
			{Path: "pipe", Kind: Created, Type: fs.ModeNamedPipe, Perm: 0o644},
			{Path: "null", Kind: Created, Type: fs.ModeDevice | fs.ModeCharDevice, Perm: 0o644},
		},
		wantRefused: map[string]string{"null": "special files", "pipe": "special files"},
		check: func(t *testing.T, ws, _ string) {
			wantAbsent(t, filepath.Join(ws, "pipe"))
			wantAbsent(t, filepath.Join(ws, "null"))
		},
	}, {
		name:        "a link out of the workspace is deleted, not followed",
		outside:     []upperEntry{{path: "precious", make: layerFile("p")}},
		workspace:   []upperEntry{{path: "link", make: linkOutside("precious")}},
		changes:     []Change{{Path: "link", Kind: Deleted}},
		wantApplied: []string{"link"},
		check: func(t *testing.T, ws, outside string) {
			wantAbsent(t, filepath.Join(ws, "link"))
			wantContent(t, filepath.Join(outside, "precious"), "p")
		},
	}, {
		name:        "a link out of the workspace is overwritten, not written through",
		outside:     []upperEntry{{path: "precious", make: layerFile("p")}},
		workspace:   []upperEntry{{path: "f", make: linkOutside("precious")}},
		upper:       []upperEntry{{path: "f", make: layerFile("mine")}},
		changes:     []Change{{Path: "f", Kind: Modified, Perm: 0o644, Size: 4}},
		wantApplied: []string{"f"},
		check: func(t *testing.T, ws, outside string) {
			wantContent(t, filepath.Join(ws, "f"), "mine")
			wantContent(t, filepath.Join(outside, "precious"), "p")
		},
	}, {
		name: "links out of the workspace are refused, links within it made as written",
		changes: []Change{
			{Path: "etc", Kind: Created, Type: fs.ModeSymlink, Target: "/etc"},
			{Path: "tools-staging", Kind: Created, Type: fs.ModeSymlink, Target: "../.."},
			{Path: "sub", Kind: Created, Type: fs.ModeDir, Perm: 0o755},
			{Path: "sub/up", Kind: Created, Type: fs.ModeSymlink, Target: "../notes"},
		},
		upper:       []upperEntry{{path: "sub", make: layerDir(0o755)}},
		wantApplied: []string{"sub", "sub/up"},
		wantRefused: map[string]string{"etc": "out of the workspace", "tools-staging": "out of the workspace"},
		check: func(t *testing.T, ws, _ string) {
			if target, err := os.Readlink(filepath.Join(ws, "sub/up")); err != nil || target != "../notes" {
				t.Errorf("Readlink(sub/up) = %q, %v; want ../notes", target, err)
			}
			if _, err := os.Lstat(filepath.Join(ws, "etc")); err == nil {
				t.Error("a link to /etc was made in the workspace")
			}
		},
	}, {
		name:        "a link with a credential name refused",
		changes:     []Change{{Path: "id_rsa", Kind: Created, Type: fs.ModeSymlink, Target: "x"}},
		wantRefused: map[string]string{"id_rsa": "SSH key"},
	}, {
		name:        "setuid, setgid and sticky bits are dropped",
		upper:       []upperEntry{{path: "tool", make: layerFile("#!")}, {path: "d", make: layerDir(0o755)}},
		changes:     []Change{{Path: "d", Kind: Created, Type: fs.ModeDir, Perm: 0o755 | fs.ModeSticky | fs.ModeSetgid}, {Path: "tool", Kind: Created, Perm: 0o755 | fs.ModeSetuid, Size: 2}},
		wantApplied: []string{"d", "tool"},
		check: func(t *testing.T, ws, _ string) {
			for _, rel := range []string{"d", "tool"} {
				info, err := os.Lstat(filepath.Join(ws, rel))
				mustDo(t, err)
				if extra := info.Mode() & (fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky); extra != 0 {
					t.Errorf("%s has mode %v, want no %v", rel, info.Mode(), extra)
				}
			}
		},
	}, {
		name:      "a directory replaces a layerFile, and a layerFile a directory",
		workspace: []upperEntry{{path: "was-file", make: layerFile("f")}, {path: "was-dir/x", make: layerFile("x")}},
		upper:     []upperEntry{{path: "was-file/in", make: layerFile("in")}, {path: "was-dir", make: layerFile("now")}},
		changes: []Change{
			{Path: "was-dir", Kind: Modified, Perm: 0o644, Size: 3},
			{Path: "was-file", Kind: Replaced, Type: fs.ModeDir, Perm: 0o755},
			fileChange("was-file/in", "in"),
		},
		wantApplied: []string{"was-file", "was-dir", "was-file/in"},
		check: func(t *testing.T, ws, _ string) {
			wantContent(t, filepath.Join(ws, "was-dir"), "now")
			wantContent(t, filepath.Join(ws, "was-file/in"), "in")
		},
	}, {
		name: "malformed changes refused without harm",
		changes: []Change{
			{Path: "", Kind: Deleted},
			{Path: ".", Kind: Deleted},
			{Path: "../x", Kind: Deleted},
			{Path: "/etc/passwd", Kind: Deleted},
			{Path: "a/../b", Kind: Deleted},
			{Path: "a//b", Kind: Deleted},
			{Path: "a/", Kind: Deleted},
			{Path: "a\x00b", Kind: Deleted},
			{Path: "x", Kind: "exploded"},
			{Path: "y", Kind: Replaced},
		},
		wantRefused: map[string]string{"": "clean path", ".": "clean path", "../x": "clean path", "/etc/passwd": "clean path", "a/": "clean path", "a//b": "clean path", "a/../b": "clean path", "a\x00b": "clean path", "x": "unknown kind", "y": "must be a directory"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, upper, outside := t.TempDir(), t.TempDir(), t.TempDir()
			buildLayer(t, outside, tt.outside)
			buildWithOutside(t, ws, outside, tt.workspace)
			buildLayer(t, upper, tt.upper)
			jail := beneath.Jail{Root: ws}
			if tt.vault != "" {
				jail.Vault = filepath.Join(ws, tt.vault)
			}
			report, err := newKeptChangeSet(upper, ws, tt.changes).Apply(jail)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if got := changePaths(report.Applied); !reflect.DeepEqual(got, tt.wantApplied) {
				t.Errorf("Apply applied %q, want %q", got, tt.wantApplied)
			}
			if len(report.Refused) != len(tt.wantRefused) {
				t.Errorf("Apply refused %+v, want %q", report.Refused, tt.wantRefused)
			}
			for _, r := range report.Refused {
				if words, ok := tt.wantRefused[r.Change.Path]; !ok {
					t.Errorf("Apply refused %q (%s), want it applied", r.Change.Path, r.Reason)
				} else if !strings.Contains(r.Reason, words) {
					t.Errorf("refusal of %q says %q, want it to mention %q", r.Change.Path, r.Reason, words)
				}
			}
			if tt.check != nil {
				tt.check(t, ws, outside)
			}
		})
	}
}

// TestApplyWorkspaceChangedAfterScan swaps a directory for a link out of
// the workspace between the scan and Apply, as a racing writer could.
func TestApplyWorkspaceChangedAfterScan(t *testing.T) {
	testhost.Root(t)
	ws, upper, outside := t.TempDir(), t.TempDir(), t.TempDir()
	mkdirTest(t, filepath.Join(ws, "sub"), 0o755)
	buildLayer(t, upper, []upperEntry{{path: "sub", make: layerDir(0o755)}, {path: "sub/file", make: layerFile("f")}})
	changes, err := scanUpper(upper, ws)
	mustDo(t, err)
	want := []Change{{Path: "sub/file", Kind: Created, Perm: 0o644, Size: 1}}
	if !reflect.DeepEqual(changes, want) {
		t.Fatalf("scanUpper = %+v, want %+v", changes, want)
	}

	mustDo(t, os.Remove(filepath.Join(ws, "sub")))
	mustDo(t, os.Symlink(outside, filepath.Join(ws, "sub")))
	report, err := newKeptChangeSet(upper, ws, changes).Apply(beneath.Jail{Root: ws})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(report.Applied) != 0 || len(report.Refused) != 1 || !strings.Contains(report.Refused[0].Reason, "leaves the workspace") {
		t.Errorf("Apply = %+v, want sub/file refused as leaving the workspace", report)
	}
	wantAbsent(t, filepath.Join(outside, "file"))
}

// TestApplyFailureMidway checks that a failure stops Apply with the path
// named, after reporting what was already applied.
func TestApplyFailureMidway(t *testing.T) {
	ws, upper := t.TempDir(), t.TempDir()
	writeTestFile(t, filepath.Join(upper, "a"), "a", 0o644)
	writeTestFile(t, filepath.Join(upper, "b"), "grown since the scan", 0o644)
	changes := []Change{
		{Path: "a", Kind: Created, Perm: 0o644, Size: 1},
		{Path: "b", Kind: Created, Perm: 0o644, Size: 1},
		{Path: "c", Kind: Created, Perm: 0o644, Size: 1},
	}
	report, err := newKeptChangeSet(upper, ws, changes).Apply(beneath.Jail{Root: ws})
	if err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Fatalf("Apply error = %v, want one naming \"b\"", err)
	}
	if got := changePaths(report.Applied); !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("Apply applied %q before failing, want [a]", got)
	}
	wantContent(t, filepath.Join(ws, "a"), "a")
	wantAbsent(t, filepath.Join(ws, "b"))
	entries, err := os.ReadDir(ws)
	mustDo(t, err)
	if len(entries) != 1 {
		t.Errorf("workspace holds %d entries after the failure, want only a (no temporary layerFile left)", len(entries))
	}
}

func TestApplyBadSets(t *testing.T) {
	ws := t.TempDir()
	runDir := t.TempDir()
	gone := newKeptChangeSet(filepath.Join(runDir, "upper"), ws, []Change{{Path: "a", Kind: Deleted}})
	mustDo(t, gone.Discard())
	tests := []struct {
		name string
		set  *ChangeSet
		jail beneath.Jail
	}{
		{"nil set", nil, beneath.Jail{Root: ws}},
		{"zero set", &ChangeSet{}, beneath.Jail{Root: ws}},
		{"discarded set", gone, beneath.Jail{Root: ws}},
		{"no workspace", newKeptChangeSet(ws, ws, nil), beneath.Jail{}},
		{"missing workspace", newKeptChangeSet(ws, ws, nil), beneath.Jail{Root: filepath.Join(ws, "missing")}},
		{"another workspace", newKeptChangeSet(ws, ws, nil), beneath.Jail{Root: t.TempDir()}},
		{"scanned workspace gone", newKeptChangeSet(ws, filepath.Join(ws, "missing"), nil), beneath.Jail{Root: ws}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if report, err := tt.set.Apply(tt.jail); err == nil {
				t.Errorf("Apply = %+v, nil; want an error", report)
			}
		})
	}
	var nilSet *ChangeSet
	if err := nilSet.Discard(); err != nil {
		t.Errorf("Discard on a nil set = %v, want nil", err)
	}
}

func TestDiscardUpperOnly(t *testing.T) {
	runDir := t.TempDir()
	upper := filepath.Join(runDir, "upper")
	writeTestFile(t, filepath.Join(upper, "d/f"), "f", 0o644)
	mustDo(t, newKeptChangeSet(upper, runDir, nil).Discard())
	wantAbsent(t, upper)
	if _, err := os.Stat(runDir); err != nil {
		t.Errorf("Discard removed more than the upper layer: %v", err)
	}
}
