package beneath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"shelldon/testhost"
)

// ways are the two ways a path is resolved, with openat2 and walking it
// a name at a time; every test runs both.
var ways = []struct {
	name string
	walk bool
}{{"openat2", false}, {"walk", true}}

// useWay makes the package resolve paths one way until tb ends.
func useWay(tb testing.TB, useWalk bool) {
	saved := walk
	if !useWalk && saved() {
		testhost.Missing(tb, "openat2 (this kernel lacks it, or a seccomp filter forbids it; the walk way runs either way)", "Linux 5.6 or later, without a filter on openat2")
	}
	walk = func() bool { return useWalk }
	tb.Cleanup(func() { walk = saved })
}

// bothWays runs test once each way.
func bothWays(t *testing.T, test func(t *testing.T)) {
	for _, way := range ways {
		t.Run(way.name, func(t *testing.T) {
			useWay(t, way.walk)
			test(t)
		})
	}
}

// fixture is a root and a directory outside it, with what an attacker
// in the root would plant:
//
//	root/dir/file           "inside"
//	root/dir/link-out   ->  outside
//	root/out            ->  outside            a directory link out of the root
//	root/slash          ->  /
//	root/file-out       ->  outside/secret     a file link out of the root
//	root/dangling       ->  outside/missing
//	root/self           ->  .                  a link that stays inside
//	outside/secret          "outside"
//	outside/sub/f           "f"
type fixture struct {
	root        *Root
	ws, outside string
	before      map[string]string // outside, as it must stay
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{ws: t.TempDir(), outside: t.TempDir()}
	mustDo(t, os.WriteFile(filepath.Join(f.outside, "secret"), []byte("outside"), 0o644))
	mustDo(t, os.Mkdir(filepath.Join(f.outside, "sub"), 0o755))
	mustDo(t, os.WriteFile(filepath.Join(f.outside, "sub/f"), []byte("f"), 0o644))
	mustDo(t, os.Mkdir(filepath.Join(f.ws, "dir"), 0o755))
	mustDo(t, os.WriteFile(filepath.Join(f.ws, "dir/file"), []byte("inside"), 0o644))
	for link, target := range map[string]string{
		"dir/link-out": f.outside,
		"out":          f.outside,
		"slash":        "/",
		"file-out":     filepath.Join(f.outside, "secret"),
		"dangling":     filepath.Join(f.outside, "missing"),
		"self":         ".",
	} {
		mustDo(t, os.Symlink(target, filepath.Join(f.ws, link)))
	}
	f.before = snapshot(t, f.outside)
	root, err := Open(f.ws)
	mustDo(t, err)
	t.Cleanup(func() { root.Close() })
	f.root = root
	return f
}

// expand puts the outside directory, without its leading slash, where
// rel says {outside}.
func (f *fixture) expand(rel string) string {
	return strings.ReplaceAll(rel, "{outside}", strings.TrimPrefix(f.outside, "/"))
}

// untouched fails t unless outside holds what it held, and the root
// holds no temporary file.
func (f *fixture) untouched(t *testing.T, call string) {
	t.Helper()
	if after := snapshot(t, f.outside); !reflect.DeepEqual(after, f.before) {
		t.Errorf("after %s, outside holds %q, want %q", call, after, f.before)
	}
	filepath.WalkDir(f.ws, func(p string, _ fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(filepath.Base(p), ".beneath-") {
			t.Errorf("after %s, the root holds the temporary file %s", call, p)
		}
		return nil
	})
}

// snapshot maps each entry below dir to its mode and contents.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	mustDo(t, filepath.WalkDir(dir, func(p string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := entry.Info()
		if err != nil {
			return err
		}
		var data []byte
		if info.Mode().IsRegular() {
			if data, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		got[p] = fmt.Sprintf("%v %q", info.Mode(), data)
		return nil
	}))
	return got
}

func mustDo(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// op is one call of the API on a path, as a message shows it.
type op struct {
	format string // the call, with %q for the path
	do     func(r *Root, rel string) error
}

var (
	opWriteFile = op{"WriteFile(%q)", func(r *Root, rel string) error {
		return r.WriteFile(rel, []byte("pwned"), 0o644)
	}}
	opReadFile = op{"ReadFile(%q)", func(r *Root, rel string) error {
		_, err := r.ReadFile(rel, 1<<20)
		return err
	}}
	opOpenWrite = op{"OpenFile(%q, O_WRONLY|O_CREATE|O_TRUNC)", func(r *Root, rel string) error {
		return closed(r.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644))
	}}
	opOpenRead = op{"OpenFile(%q, O_RDONLY)", func(r *Root, rel string) error {
		return closed(r.OpenFile(rel, os.O_RDONLY, 0))
	}}
	opMkdirAll = op{"MkdirAll(%q)", func(r *Root, rel string) error {
		return r.MkdirAll(rel, 0o755)
	}}
	opRemove = op{"Remove(%q)", func(r *Root, rel string) error {
		return r.Remove(rel)
	}}
	opRemoveAll = op{"RemoveAll(%q)", func(r *Root, rel string) error {
		return r.RemoveAll(rel)
	}}
	opRenameFrom = op{`Rename(%q, "dir/moved")`, func(r *Root, rel string) error {
		return r.Rename(rel, "dir/moved")
	}}
	opRenameTo = op{`Rename("dir/file", %q)`, func(r *Root, rel string) error {
		return r.Rename("dir/file", rel)
	}}
	opLstat = op{"Lstat(%q)", func(r *Root, rel string) error {
		_, err := r.Lstat(rel)
		return err
	}}
	// opLstatLink fails unless rel is described as the link it is.
	opLstatLink = op{"Lstat(%q)", func(r *Root, rel string) error {
		info, err := r.Lstat(rel)
		if err == nil && info.Mode().Type() != fs.ModeSymlink {
			err = fmt.Errorf("described a %v, not the link", info.Mode())
		}
		return err
	}}
	opReadDir = op{"ReadDir(%q)", func(r *Root, rel string) error {
		_, err := r.ReadDir(rel)
		return err
	}}
	opOpenDir = op{"OpenDir(%q)", func(r *Root, rel string) error {
		return closed(r.OpenDir(rel))
	}}
	everyOp = []op{opWriteFile, opReadFile, opOpenWrite, opOpenRead, opMkdirAll, opRemove, opRemoveAll, opRenameFrom, opRenameTo, opLstat, opReadDir, opOpenDir}
)

func closed(f *os.File, err error) error {
	if err == nil {
		f.Close()
	}
	return err
}

// attack is a call on a path an attacker prepared, and how it must end.
type attack struct {
	op  op
	rel string // with {outside} for the outside directory
	// want is the error the call must wrap, or nil where it must succeed
	// on the link itself.
	want error
	// then checks what the root holds afterwards.
	then func(t *testing.T, ws string)
}

func attacks() []attack {
	var table []attack
	// A link on the way, or a way out, is refused by every call.
	for _, path := range []struct {
		rel  string
		want error
	}{
		{"out/secret", ErrLink},
		{"out/sub/f", ErrLink},
		{"out/new", ErrLink},
		{"slash/{outside}/secret", ErrLink},
		{"slash/{outside}/new", ErrLink},
		{"file-out/new", ErrLink},
		{"dangling/new", ErrLink},
		{"self/dir/file", ErrLink},
		{"..", ErrOutside},
		{"../x", ErrOutside},
		{"dir/../../x", ErrOutside},
		{"dir/../file", ErrOutside},
		{"/{outside}/secret", ErrOutside},
		{"/{outside}/new", ErrOutside},
	} {
		for _, op := range everyOp {
			table = append(table, attack{op: op, rel: path.rel, want: path.want})
		}
	}
	// A link as the last name is refused by what would read or write
	// through it, and replaced, removed or renamed itself by the rest.
	for _, rel := range []string{"out", "file-out", "dangling", "self"} {
		table = append(table,
			attack{op: opWriteFile, rel: rel, then: holds(rel, "pwned")},
			attack{op: opReadFile, rel: rel, want: ErrLink},
			attack{op: opOpenWrite, rel: rel, want: ErrLink},
			attack{op: opOpenRead, rel: rel, want: ErrLink},
			attack{op: opMkdirAll, rel: rel, want: ErrLink},
			attack{op: opRemove, rel: rel, then: absent(rel)},
			attack{op: opRemoveAll, rel: rel, then: absent(rel)},
			attack{op: opRenameFrom, rel: rel, then: isLink("dir/moved")},
			attack{op: opRenameTo, rel: rel, then: holds(rel, "inside")},
			attack{op: opLstatLink, rel: rel},
			attack{op: opReadDir, rel: rel, want: ErrLink},
			attack{op: opOpenDir, rel: rel, want: ErrLink},
		)
	}
	// A directory holding a link out is removed without descending it.
	table = append(table, attack{op: opRemoveAll, rel: "dir", then: absent("dir")})
	return table
}

func holds(rel, want string) func(*testing.T, string) {
	return func(t *testing.T, ws string) {
		t.Helper()
		if info, err := os.Lstat(filepath.Join(ws, rel)); err != nil || !info.Mode().IsRegular() {
			t.Fatalf("Lstat(%s) = %v, %v; want a regular file", rel, info, err)
		}
		if data, err := os.ReadFile(filepath.Join(ws, rel)); err != nil || string(data) != want {
			t.Errorf("%s holds %q, %v; want %q", rel, data, err, want)
		}
	}
}

func absent(rel string) func(*testing.T, string) {
	return func(t *testing.T, ws string) {
		t.Helper()
		if _, err := os.Lstat(filepath.Join(ws, rel)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Lstat(%s) = %v, want it absent", rel, err)
		}
	}
}

func isLink(rel string) func(*testing.T, string) {
	return func(t *testing.T, ws string) {
		t.Helper()
		if info, err := os.Lstat(filepath.Join(ws, rel)); err != nil || info.Mode().Type() != fs.ModeSymlink {
			t.Errorf("Lstat(%s) = %v, %v; want a symbolic link", rel, info, err)
		}
	}
}

var sentinelNames = map[error]string{ErrLink: "ErrLink", ErrOutside: "ErrOutside"}

// TestAttacks makes each call on a path an attacker prepared, and
// checks that nothing outside the root changed.
func TestAttacks(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		for _, tt := range attacks() {
			t.Run(fmt.Sprintf(tt.op.format, tt.rel), func(t *testing.T) {
				f := newFixture(t)
				rel := f.expand(tt.rel)
				call := fmt.Sprintf(tt.op.format, rel)
				err := tt.op.do(f.root, rel)
				switch {
				case tt.want == nil && err != nil:
					t.Errorf("%s = %v, want nil", call, err)
				case tt.want != nil && !errors.Is(err, tt.want):
					t.Errorf("%s = %v, want an error wrapping %s", call, err, sentinelNames[tt.want])
				case err != nil && !strings.Contains(err.Error(), rel):
					t.Errorf("%s = %v, want the error to name %q", call, err, rel)
				}
				f.untouched(t, call)
				if tt.then != nil && !t.Failed() {
					tt.then(t, f.ws)
				}
			})
		}
	})
}

// TestSwapRace swaps a directory in the root for a link out of it, over
// and over, while files and directories are made in it: each lands in
// the directory or is refused, and nothing ever appears outside.
func TestSwapRace(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		ws, outside := t.TempDir(), t.TempDir()
		flip, parked := filepath.Join(ws, "flip"), filepath.Join(ws, "parked")
		mustDo(t, os.Mkdir(flip, 0o755))
		mustDo(t, os.Symlink(outside, parked))
		swap := func() error {
			return unix.Renameat2(unix.AT_FDCWD, flip, unix.AT_FDCWD, parked, unix.RENAME_EXCHANGE)
		}
		if err := swap(); err != nil {
			testhost.Missing(t, fmt.Sprintf("a file system that can exchange names (renameat2 RENAME_EXCHANGE: %v)", err), "run the tests on ext4, xfs, btrfs or tmpfs")
		}
		root, err := Open(ws)
		mustDo(t, err)
		defer root.Close()

		stop, swapped := make(chan struct{}), make(chan error)
		go func() {
			for {
				select {
				case <-stop:
					swapped <- nil
					return
				default:
				}
				if err := swap(); err != nil {
					swapped <- err
					return
				}
			}
		}()
		var written, refused int
		for range 2000 {
			switch err := root.WriteFile("flip/f", []byte("data"), 0o644); {
			case err == nil:
				written++
			case errors.Is(err, ErrLink):
				refused++
			default:
				t.Errorf(`WriteFile("flip/f") = %v, want nil or an error wrapping ErrLink`, err)
			}
			// The other ways to make something, cheaper than a synced write.
			if err := closed(root.OpenFile("flip/g", os.O_WRONLY|os.O_CREATE, 0o644)); err != nil && !errors.Is(err, ErrLink) {
				t.Errorf(`OpenFile("flip/g", O_WRONLY|O_CREATE) = %v, want nil or an error wrapping ErrLink`, err)
			}
			if err := root.MkdirAll("flip/d", 0o755); err != nil && !errors.Is(err, ErrLink) {
				t.Errorf(`MkdirAll("flip/d") = %v, want nil or an error wrapping ErrLink`, err)
			}
		}
		close(stop)
		mustDo(t, <-swapped)
		if entries, err := os.ReadDir(outside); err != nil || len(entries) != 0 {
			t.Errorf("outside holds %v, %v; want nothing", entries, err)
		}
		t.Logf("%d written, %d refused", written, refused)
	})
}

// TestRoot uses a root the ordinary way, with nothing planted.
func TestRoot(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		ws := t.TempDir()
		r, err := Open(ws)
		mustDo(t, err)
		if r.Path() != ws {
			t.Errorf("Path() = %q, want %q", r.Path(), ws)
		}

		mustDo(t, r.MkdirAll("a/b/c", 0o755))
		mustDo(t, r.MkdirAll("a//b/./c/", 0o755))
		if info, err := r.Lstat("a/b/c"); err != nil || !info.IsDir() || info.Name() != "c" {
			t.Errorf(`Lstat("a/b/c") = %v, %v; want the directory c`, info, err)
		}

		mustDo(t, r.WriteFile("a/b/c/f", []byte("one"), 0o640))
		mustDo(t, r.WriteFile("a/b/c/f", []byte("two"), 0o640))
		if data, err := r.ReadFile("a/b/c/f", 3); err != nil || string(data) != "two" {
			t.Errorf(`ReadFile("a/b/c/f", 3) = %q, %v; want "two"`, data, err)
		}
		umask := unix.Umask(0)
		unix.Umask(umask)
		if info, err := os.Stat(filepath.Join(ws, "a/b/c/f")); err != nil || info.Mode() != 0o640&^fs.FileMode(umask) {
			t.Errorf("a/b/c/f: %v, %v; want mode 0640 less the umask %03o", info, err, umask)
		}
		if names := entryNames(t, r, "a/b/c"); !slices.Equal(names, []string{"f"}) {
			t.Errorf(`ReadDir("a/b/c") = %q, want [f] and no temporary file`, names)
		}
		if err := r.WriteFile("missing/f", nil, 0o644); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf(`WriteFile("missing/f") = %v, want an error wrapping fs.ErrNotExist`, err)
		}
		if _, err := os.Lstat(filepath.Join(ws, "missing")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("WriteFile made the missing directory: %v", err)
		}

		if _, err := r.ReadFile("a/b/c/f", 2); err == nil || !strings.Contains(err.Error(), "more than the 2 allowed") {
			t.Errorf(`ReadFile("a/b/c/f", 2) = %v, want it refused as too big`, err)
		}
		if _, err := r.ReadFile("a", 100); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf(`ReadFile("a") = %v, want a directory refused`, err)
		}
		mustDo(t, unix.Mkfifo(filepath.Join(ws, "fifo"), 0o644))
		if _, err := r.ReadFile("fifo", 100); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf(`ReadFile("fifo") = %v, want a fifo refused without waiting for a writer`, err)
		}
		if err := r.MkdirAll("a/b/c/f/g", 0o755); !errors.Is(err, unix.ENOTDIR) {
			t.Errorf(`MkdirAll("a/b/c/f/g") = %v, want an error wrapping ENOTDIR`, err)
		}

		mustDo(t, r.Rename("a/b/c/f", "a/g"))
		if _, err := r.Lstat("a/b/c/f"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf(`Lstat("a/b/c/f") after the rename = %v, want an error wrapping fs.ErrNotExist`, err)
		}
		entries, err := r.ReadDir("a")
		mustDo(t, err)
		if len(entries) != 2 || entries[0].Name() != "b" || !entries[0].IsDir() || entries[1].Name() != "g" || !entries[1].Type().IsRegular() {
			t.Fatalf(`ReadDir("a") = %v, want the directory b and the file g`, entries)
		}
		if info, err := entries[1].Info(); err != nil || info.Size() != 3 {
			t.Errorf("g's Info() = %v, %v; want 3 bytes", info, err)
		}

		for _, rel := range []string{"", "."} {
			dir, err := r.OpenDir(rel)
			mustDo(t, err)
			opened, err := dir.Stat()
			mustDo(t, err)
			dir.Close()
			if want, _ := os.Stat(ws); !os.SameFile(opened, want) {
				t.Errorf("OpenDir(%q) opened %v, want the root", rel, opened)
			}
		}
		file, err := r.OpenFile("a/new", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		mustDo(t, err)
		_, err = file.WriteString("new")
		mustDo(t, err)
		mustDo(t, file.Close())
		if data, err := r.ReadFile("a/new", 10); err != nil || string(data) != "new" {
			t.Errorf(`ReadFile("a/new") = %q, %v; want "new"`, data, err)
		}

		if err := r.Remove("a/b"); !errors.Is(err, unix.ENOTEMPTY) {
			t.Errorf(`Remove("a/b") = %v, want an error wrapping ENOTEMPTY`, err)
		}
		for _, rel := range []string{"a/new", "a/new", "missing/x", "a/b/c"} {
			if err := r.Remove(rel); err != nil {
				t.Errorf("Remove(%q) = %v, want nil", rel, err)
			}
		}
		for _, rel := range []string{"a", "a"} {
			if err := r.RemoveAll(rel); err != nil {
				t.Errorf("RemoveAll(%q) = %v, want nil", rel, err)
			}
		}
		if names := entryNames(t, r, ""); !slices.Equal(names, []string{"fifo"}) {
			t.Errorf(`ReadDir("") = %q, want only the fifo left`, names)
		}

		for _, call := range []struct {
			name string
			err  error
		}{
			{`WriteFile("")`, r.WriteFile("", nil, 0o644)},
			{`Remove(".")`, r.Remove(".")},
			{`RemoveAll("")`, r.RemoveAll("")},
			{`Rename("", "x")`, r.Rename("", "x")},
			{`Rename("fifo", ".")`, r.Rename("fifo", ".")},
			{`WriteFile("a\x00b")`, r.WriteFile("a\x00b", nil, 0o644)},
		} {
			if call.err == nil {
				t.Errorf("%s = nil, want an error", call.name)
			}
		}
		if _, err := os.Stat(filepath.Join(ws, "fifo")); err != nil {
			t.Errorf("the root changed under refused calls: %v", err)
		}

		mustDo(t, r.Close())
		if err := r.Close(); !errors.Is(err, fs.ErrClosed) {
			t.Errorf("second Close() = %v, want an error wrapping fs.ErrClosed", err)
		}
		if err := r.WriteFile("f", nil, 0o644); err == nil {
			t.Errorf(`WriteFile("f") after Close = nil, want an error`)
		}
	})
}

func entryNames(t *testing.T, r *Root, rel string) []string {
	t.Helper()
	entries, err := r.ReadDir(rel)
	mustDo(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// BenchmarkWriteFile writes a small file. WriteFile syncs the file and
// its directory, which a plain os.WriteFile does not.
func BenchmarkWriteFile(b *testing.B) {
	data := make([]byte, 512)
	b.Run("os.WriteFile", func(b *testing.B) {
		dir := b.TempDir()
		for b.Loop() {
			if err := os.WriteFile(filepath.Join(dir, "f"), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, way := range ways {
		b.Run("beneath/"+way.name, func(b *testing.B) {
			useWay(b, way.walk)
			root, err := Open(b.TempDir())
			mustDo(b, err)
			defer root.Close()
			mustDo(b, root.MkdirAll("a/b", 0o755))
			for b.Loop() {
				if err := root.WriteFile("a/b/f", data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestReadlink: a link's target is read, never followed; a link on the
// way to it is refused, and so is a path that leaves the root.
func TestReadlink(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		f := newFixture(t)
		if got, err := f.root.Readlink("dir/link-out"); err != nil || got != f.outside {
			t.Errorf(`Readlink("dir/link-out") = %q, %v; want %q`, got, err, f.outside)
		}
		if got, err := f.root.Readlink("self"); err != nil || got != "." {
			t.Errorf(`Readlink("self") = %q, %v; want "."`, got, err)
		}
		for rel, want := range map[string]error{
			"out/sub":       ErrLink,
			"self/dangling": ErrLink,
			"../x":          ErrOutside,
			"dir/missing":   fs.ErrNotExist,
		} {
			if got, err := f.root.Readlink(rel); !errors.Is(err, want) {
				t.Errorf("Readlink(%q) = %q, %v; want an error wrapping %v", rel, got, err, want)
			}
		}
		if _, err := f.root.Readlink("dir/file"); !errors.Is(err, unix.EINVAL) {
			t.Errorf(`Readlink("dir/file") = %v; want EINVAL, not a link`, err)
		}
		f.untouched(t, "Readlink")
	})
}
