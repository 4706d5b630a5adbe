package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"shelldon/beneath"
	"shelldon/sandbox"
	"shelldon/sandbox/image/imagetest"
	"shelldon/testhost"
)

// owners are the two ways a workspace is owned, and so the two ways the
// container runs: as root without a user namespace (a build machine), and
// in a user namespace whose root is an unprivileged owner (a board).
var owners = []struct {
	name string
	uid  int
}{
	{"root", 0},
	{"unprivileged", 4242},
}

// newSandbox returns a sandbox over the real image, with its runs kept in
// a directory of the test's.
func newSandbox(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	img := imagetest.Image(t)
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: t.TempDir()})
	if err != nil {
		t.Fatalf("sandbox.New: %v", err)
	}
	return sb
}

// workspace makes a workspace holding files (path → content) owned by
// uid, directories included.
func workspace(t *testing.T, uid int, files map[string]string) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	chownTree(t, ws, uid)
	return ws
}

func chownTree(t *testing.T, dir string, uid int) {
	t.Helper()
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, sb *sandbox.Sandbox, spec sandbox.Spec) sandbox.Result {
	t.Helper()
	res, err := sb.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run(%q) = %v", spec.Argv, err)
	}
	return res
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	tree := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case fi.IsDir():
			tree[rel] = "<dir>"
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			tree[rel] = "-> " + target
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			tree[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// TestViews is the shared suite: each view, for each kind of owner.
func TestViews(t *testing.T) {
	sb := newSandbox(t)
	for _, o := range owners {
		t.Run(o.name, func(t *testing.T) {
			t.Run("read-only sees but cannot write", func(t *testing.T) {
				ws := workspace(t, o.uid, map[string]string{"hello.txt": "hi there\n"})
				res := run(t, sb, sandbox.Spec{Argv: sh("cat hello.txt; echo changed > hello.txt; echo new > new.txt"), Workspace: ws})
				if !strings.Contains(res.Text(), "hi there") {
					t.Errorf("output = %q, want the workspace file's content", res.Text())
				}
				if res.ExitCode == 0 {
					t.Errorf("writing a read-only workspace exited 0; output %q", res.Text())
				}
				if got := readTree(t, ws); !maps(got, map[string]string{"hello.txt": "hi there\n"}) {
					t.Errorf("workspace after a read-only run = %v, want it unchanged", got)
				}
				if res.Changes != nil {
					t.Errorf("read-only run returned changes %+v", res.Changes.Changes)
				}
				if res.UserNamespace != (o.uid != 0) {
					t.Errorf("UserNamespace = %v for a workspace of uid %d", res.UserNamespace, o.uid)
				}
			})
			t.Run("captured records and applies", func(t *testing.T) {
				ws := workspace(t, o.uid, map[string]string{"a.txt": "one\n", "b.txt": "doomed\n", "dir/c.txt": "inner\n"})
				res := run(t, sb, sandbox.Spec{View: sandbox.Captured, Workspace: ws, Argv: sh(
					"echo two >> a.txt && rm b.txt && echo fresh > new.txt && mkdir made && echo x > made/f && ln -s a.txt link && rm -r dir && mkdir dir && echo again > dir/d.txt")})
				if res.ExitCode != 0 {
					t.Fatalf("captured run exited %d: %s", res.ExitCode, res.Text())
				}
				if got := readTree(t, ws); !maps(got, map[string]string{"a.txt": "one\n", "b.txt": "doomed\n", "dir": "<dir>", "dir/c.txt": "inner\n"}) {
					t.Fatalf("workspace before apply = %v, want it untouched", got)
				}
				if res.Changes == nil {
					t.Fatal("captured run returned no change set")
				}
				var got []string
				for _, c := range res.Changes.Changes {
					got = append(got, string(c.Kind)+" "+c.Path)
				}
				want := []string{"modified a.txt", "deleted b.txt", "replaced dir", "created dir/d.txt", "created link", "created made", "created made/f", "created new.txt"}
				if !slices.Equal(got, want) {
					t.Errorf("changes = %q, want %q", got, want)
				}
				report, err := res.Changes.Apply(beneath.Jail{Root: ws})
				if err != nil || len(report.Refused) != 0 {
					t.Fatalf("Apply = %+v, %v", report, err)
				}
				wantTree := map[string]string{"a.txt": "one\ntwo\n", "new.txt": "fresh\n", "made": "<dir>", "made/f": "x\n", "link": "-> a.txt", "dir": "<dir>", "dir/d.txt": "again\n"}
				if got := readTree(t, ws); !maps(got, wantTree) {
					t.Errorf("workspace after apply = %v, want %v", got, wantTree)
				}
				var st syscall.Stat_t
				if err := syscall.Lstat(filepath.Join(ws, "new.txt"), &st); err != nil || int(st.Uid) != o.uid {
					t.Errorf("applied file owned by uid %d (%v), want the workspace owner %d", st.Uid, err, o.uid)
				}
				if err := res.Changes.Discard(); err != nil {
					t.Errorf("Discard = %v", err)
				}
			})
			t.Run("scratch writes vanish", func(t *testing.T) {
				ws := workspace(t, o.uid, map[string]string{"test_x.py": "def test_x():\n    open('out.txt','w').write('x')\n"})
				res := run(t, sb, sandbox.Spec{View: sandbox.Scratch, Workspace: ws, Argv: []string{"python3", "-m", "pytest", "-q"}})
				if res.ExitCode != 0 || !strings.Contains(res.Text(), "1 passed") {
					t.Errorf("pytest in scratch = %d: %s", res.ExitCode, res.Text())
				}
				if got := readTree(t, ws); len(got) != 1 {
					t.Errorf("workspace after a scratch run = %v, want only the test file", got)
				}
				if res.Changes != nil {
					t.Errorf("scratch run returned changes")
				}
			})
		})
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestConfinement: what a command must not reach.
func TestConfinement(t *testing.T) {
	sb := newSandbox(t)
	img := imagetest.Image(t)

	t.Run("the host's loopback is out of reach, with network or without", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Write([]byte("hello from the host\n"))
				c.Close()
			}
		}()
		port := ln.Addr().(*net.TCPAddr).Port
		probe := []string{"python3", "-c", fmt.Sprintf("import socket; s = socket.create_connection(('127.0.0.1', %d), timeout=3); print(s.recv(100).decode())", port)}
		ws := workspace(t, 0, nil)
		for _, network := range []bool{false, true} {
			res := run(t, sb, sandbox.Spec{Argv: probe, Workspace: ws, Network: network})
			if res.ExitCode == 0 || strings.Contains(res.Text(), "hello from the host") {
				t.Errorf("with network %v the host's listener answered: %d %s", network, res.ExitCode, res.Text())
			}
		}
	})

	t.Run("the image's shadow and not the host's", func(t *testing.T) {
		want, err := os.ReadFile(filepath.Join(img.Root, "etc", "shadow"))
		if err != nil {
			t.Fatal(err)
		}
		res := run(t, sb, sandbox.Spec{Argv: []string{"cat", "/etc/shadow"}, Workspace: workspace(t, 0, nil)})
		if !bytes.Equal(res.Output, want) {
			t.Errorf("cat /etc/shadow = %q, want the image's %q", res.Output, want)
		}
	})

	t.Run("a symlink to a host file leads nowhere", func(t *testing.T) {
		secret := filepath.Join(t.TempDir(), "secret")
		if err := os.WriteFile(secret, []byte("host secret 7331\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		ws := workspace(t, 0, nil)
		if err := os.Symlink(secret, filepath.Join(ws, "link")); err != nil {
			t.Fatal(err)
		}
		for _, view := range []sandbox.View{sandbox.ReadOnly, sandbox.Captured} {
			res := run(t, sb, sandbox.Spec{View: view, Argv: sh("cat link; echo overwritten > link"), Workspace: ws})
			if strings.Contains(res.Text(), "7331") {
				t.Errorf("%v run read the host file through a link: %s", view, res.Text())
			}
			if res.Changes != nil {
				res.Changes.Discard()
			}
		}
		if b, _ := os.ReadFile(secret); string(b) != "host secret 7331\n" {
			t.Errorf("host file now holds %q", b)
		}
	})

	t.Run("the host's processes are invisible", func(t *testing.T) {
		res := run(t, sb, sandbox.Spec{Argv: sh("ls /proc | grep -c '^[0-9]'"), Workspace: workspace(t, 0, nil)})
		if n := strings.TrimSpace(res.Text()); n == "" || len(n) > 1 {
			t.Errorf("the container sees %q processes, want a handful", n)
		}
	})
}

// alive reports whether any process on the host has marker in its
// command line.
func alive(marker string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), marker) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// TestLimits: what a command cannot take.
func TestLimits(t *testing.T) {
	sb := newSandbox(t)
	ws := workspace(t, 0, nil)

	t.Run("a background process does not outlive the run", func(t *testing.T) {
		res := run(t, sb, sandbox.Spec{Argv: sh("sleep 1357 & echo started"), Workspace: ws})
		if res.ExitCode != 0 || !strings.Contains(res.Text(), "started") {
			t.Fatalf("run = %d %s", res.ExitCode, res.Text())
		}
		if left := alive("sleep 1357"); len(left) > 0 {
			t.Errorf("after Run, still running: %q", left)
		}
	})

	t.Run("timeout kills the whole container", func(t *testing.T) {
		res := run(t, sb, sandbox.Spec{Argv: sh("sleep 2468 & sleep 2469"), Workspace: ws, Limits: sandbox.Limits{Wall: time.Second}})
		if !res.TimedOut || res.ExitCode != -1 {
			t.Errorf("run = timed out %v, exit %d; want a timeout", res.TimedOut, res.ExitCode)
		}
		if left := alive("sleep 246"); len(left) > 0 {
			t.Errorf("after the timeout, still running: %q", left)
		}
	})

	t.Run("cancellation kills the whole container", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := sb.Run(ctx, sandbox.Spec{Argv: sh("echo up; sleep 3579"), Workspace: ws})
			done <- err
		}()
		for len(alive("sleep 3579")) == 0 {
			select {
			case err := <-done:
				t.Fatalf("Run ended before it was cancelled: %v", err)
			case <-time.After(10 * time.Millisecond):
			}
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled Run = %v, want context.Canceled", err)
		}
		if left := alive("sleep 3579"); len(left) > 0 {
			t.Errorf("after cancellation, still running: %q", left)
		}
	})

	t.Run("output is capped to its tail", func(t *testing.T) {
		const total = 10_000_000
		res := run(t, sb, sandbox.Spec{Argv: sh(fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x; echo END", total-4)), Workspace: ws, Limits: sandbox.Limits{Output: 4096}})
		if len(res.Output) != 4096 || res.OutputDropped != total-4096 || !bytes.HasSuffix(res.Output, []byte("xxEND\n")) {
			t.Errorf("output kept %d bytes, dropped %d, ends %q; want 4096 kept, %d dropped, the end kept", len(res.Output), res.OutputDropped, res.Output[max(0, len(res.Output)-8):], total-4096)
		}
		if !strings.HasPrefix(res.Text(), "[… 9995904 earlier bytes of output cut …]") {
			t.Errorf("Text starts %q, want the cut said", res.Text()[:60])
		}
	})

	t.Run("output that is not UTF-8 survives", func(t *testing.T) {
		res := run(t, sb, sandbox.Spec{Argv: sh(`printf 'ok \377\376 done'`), Workspace: ws})
		if !bytes.Equal(res.Output, []byte("ok \xff\xfe done")) {
			t.Errorf("output = %q, want the bytes as written", res.Output)
		}
		if text := res.Text(); !utf8.ValidString(text) || !strings.Contains(text, "done") {
			t.Errorf("Text() = %q, want valid UTF-8", text)
		}
	})

	t.Run("a fork bomb stays inside its task limit", func(t *testing.T) {
		res := run(t, sb, sandbox.Spec{Argv: sh("for i in $(seq 100); do sleep 4711 & done; echo forked"), Workspace: ws, Limits: sandbox.Limits{Tasks: 16, Wall: 20 * time.Second}})
		if !slices.Contains(res.Enforced, "tasks") {
			testhost.Missing(t, "a task limit the host can enforce (enforced: "+strings.Join(res.Enforced, ", ")+")", "a writable pids cgroup controller, or systemd as PID 1")
		}
		if !strings.Contains(strings.ToLower(res.Text()), "fork") {
			t.Errorf("100 forks under a limit of 16 all succeeded: %s", res.Text())
		}
		if left := alive("sleep 4711"); len(left) > 0 {
			t.Errorf("after Run, %d sleeps still running", len(left))
		}
	})

	t.Run("a memory hog is stopped", func(t *testing.T) {
		res := run(t, sb, sandbox.Spec{Argv: []string{"python3", "-c", "b = b'x' * (400 << 20); print('survived')"}, Workspace: ws, Limits: sandbox.Limits{Memory: 64 << 20}})
		if !slices.Contains(res.Enforced, "memory") {
			testhost.Missing(t, "a memory limit the host can enforce (enforced: "+strings.Join(res.Enforced, ", ")+")", "a writable memory cgroup controller (cgroup_enable=memory on Raspberry Pi kernels), or systemd as PID 1")
		}
		if res.ExitCode == 0 || strings.Contains(res.Text(), "survived") || !res.OutOfMemory {
			t.Errorf("memory hog: exit %d, out of memory %v, output %q; want it killed by the limit", res.ExitCode, res.OutOfMemory, res.Text())
		}
	})
}

func TestErrors(t *testing.T) {
	sb := newSandbox(t)
	ws := workspace(t, 0, map[string]string{"file": "x"})
	cases := []struct {
		name string
		spec sandbox.Spec
		want error
		says string
	}{
		{"no command", sandbox.Spec{Workspace: ws}, sandbox.ErrBadSpec, "Argv is empty"},
		{"missing workspace", sandbox.Spec{Argv: []string{"true"}, Workspace: ws + "-gone"}, sandbox.ErrWorkspace, "create the directory"},
		{"workspace is a file", sandbox.Spec{Argv: []string{"true"}, Workspace: filepath.Join(ws, "file")}, sandbox.ErrWorkspace, "not a directory"},
		{"relative workspace", sandbox.Spec{Argv: []string{"true"}, Workspace: "ws"}, sandbox.ErrBadSpec, "not an absolute path"},
		{"dir leaves", sandbox.Spec{Argv: []string{"true"}, Workspace: ws, Dir: "../.."}, sandbox.ErrBadSpec, "leaves the workspace"},
		{"dir missing", sandbox.Spec{Argv: []string{"true"}, Workspace: ws, Dir: "nope"}, sandbox.ErrBadSpec, "not a directory inside"},
		{"dir masked", sandbox.Spec{Argv: []string{"true"}, Workspace: ws, Dir: "proj/.env.d"}, sandbox.ErrBadSpec, "hidden from every run"},
		{"disk too small", sandbox.Spec{Argv: []string{"true"}, Workspace: ws, Limits: sandbox.Limits{Disk: 4096}}, sandbox.ErrBadSpec, "disk limit"},
		{"command too long", sandbox.Spec{Argv: []string{"echo", strings.Repeat("a", 200_000)}, Workspace: ws}, sandbox.ErrBadSpec, "put long input in a file"},
		{"NUL in argument", sandbox.Spec{Argv: []string{"echo", "a\x00b"}, Workspace: ws}, sandbox.ErrBadSpec, "NUL"},
		{"tiny memory", sandbox.Spec{Argv: []string{"true"}, Workspace: ws, Limits: sandbox.Limits{Memory: 1 << 20}}, sandbox.ErrBadSpec, "memory limit"},
		{"negative tasks", sandbox.Spec{Argv: []string{"true"}, Workspace: ws, Limits: sandbox.Limits{Tasks: -1}}, sandbox.ErrBadSpec, "task limit"},
		{"endless wall", sandbox.Spec{Argv: []string{"true"}, Workspace: ws, Limits: sandbox.Limits{Wall: 48 * time.Hour}}, sandbox.ErrBadSpec, "wall time"},
		{"bad env", sandbox.Spec{Argv: []string{"true"}, Workspace: ws, Env: []string{"NOEQUALS"}}, sandbox.ErrBadSpec, "KEY=VALUE"},
		{"unknown view", sandbox.Spec{Argv: []string{"true"}, Workspace: ws, View: sandbox.View(9)}, sandbox.ErrBadSpec, "unknown view"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sb.Run(context.Background(), tc.spec)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("Run = %v, want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
	t.Run("no image", func(t *testing.T) {
		_, err := sandbox.New(sandbox.Config{Image: t.TempDir(), RunDir: t.TempDir()})
		if !errors.Is(err, sandbox.ErrNoImage) || !strings.Contains(err.Error(), "make image") {
			t.Errorf("New(empty image) = %v, want ErrNoImage naming `make image`", err)
		}
	})
	t.Run("a failed command is a result", func(t *testing.T) {
		res, err := sb.Run(context.Background(), sandbox.Spec{Argv: sh("echo oops >&2; exit 3"), Workspace: ws})
		if err != nil || res.ExitCode != 3 || !strings.Contains(res.Text(), "oops") {
			t.Errorf("Run = %+v, %v; want exit 3 with the message", res, err)
		}
	})
	t.Run("a missing program is a result", func(t *testing.T) {
		res, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"no-such-program"}, Workspace: ws})
		if err != nil || res.ExitCode == 0 {
			t.Errorf("Run = %+v, %v; want a failed result", res, err)
		}
	})
}

// TestBindsAreReadOnly: a bound directory is seen at its target, beside
// the workspace, and nothing in the container can write it.
func TestBindsAreReadOnly(t *testing.T) {
	sb := newSandbox(t)
	for _, o := range owners {
		t.Run(o.name, func(t *testing.T) {
			ws := workspace(t, o.uid, map[string]string{"a.txt": "a"})
			code := t.TempDir()
			if err := os.WriteFile(filepath.Join(code, "tool.py"), []byte("print('bound')\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(code, 0o755); err != nil {
				t.Fatal(err)
			}
			res, err := sb.Run(context.Background(), sandbox.Spec{
				Argv:      []string{"/bin/sh", "-c", "python3 /run/shelldon/tool/tool.py; echo x > /run/shelldon/tool/tool.py; echo exit $?"},
				Workspace: ws, View: sandbox.ReadOnly, Binds: []sandbox.Bind{{Source: code, Target: "/run/shelldon/tool"}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if out := res.Text(); !strings.Contains(out, "bound") || strings.Contains(out, "exit 0") {
				t.Errorf("run with a bind printed %q, want the bound code run and the write refused", out)
			}
			if b, _ := os.ReadFile(filepath.Join(code, "tool.py")); string(b) != "print('bound')\n" {
				t.Errorf("the bound file became %q", b)
			}
		})
	}
}

func TestBindsAreChecked(t *testing.T) {
	sb := newSandbox(t)
	ws := workspace(t, 0, nil)
	for _, b := range []sandbox.Bind{
		{Source: "relative", Target: "/x"},
		{Source: "/tmp", Target: "/workspace/x"},
		{Source: "/tmp", Target: "/"},
		{Source: "/tmp/a:b", Target: "/x"},
		{Source: "/tmp", Target: "/x/../y"},
	} {
		_, err := sb.Run(context.Background(), sandbox.Spec{Argv: []string{"true"}, Workspace: ws, Binds: []sandbox.Bind{b}})
		if !errors.Is(err, sandbox.ErrBadSpec) {
			t.Errorf("Run with bind %+v = %v, want ErrBadSpec", b, err)
		}
	}
}

// TestAKeptChangeSetReadsBackTheSame: a captured run's change set kept for
// the owner's decision scans back after a restart with the same digest,
// applies as it would have, and any change to what it would write changes
// its digest. A sparse file is seen as sparse and applied with its holes.
func TestAKeptChangeSetReadsBackTheSame(t *testing.T) {
	sb := newSandbox(t)
	ws := workspace(t, 0, map[string]string{"old.txt": "old"})
	res, err := sb.Run(context.Background(), sandbox.Spec{
		Argv:      []string{"/bin/sh", "-c", "echo new > new.txt && rm old.txt && truncate -s 1G big.img && printf x | dd of=big.img bs=1 seek=4096 conv=notrunc 2>/dev/null"},
		Workspace: ws, View: sandbox.Captured,
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("captured run = %+v, %v", res, err)
	}
	var sparse bool
	for _, c := range res.Changes.Changes {
		if c.Path == "big.img" {
			sparse = c.Sparse
		}
		if c.Path == "new.txt" && c.Sparse {
			t.Error("a plain small file was taken for sparse")
		}
	}
	if !sparse {
		t.Fatalf("changes = %+v, want big.img sparse", res.Changes.Changes)
	}
	before, err := res.Changes.Digest()
	if err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(t.TempDir(), "kept")
	if err := res.Changes.Keep(kept); err != nil {
		t.Fatal(err)
	}
	again, err := sandbox.OpenKept(kept, ws)
	if err != nil {
		t.Fatal(err)
	}
	if after, err := again.Digest(); err != nil || after != before {
		t.Fatalf("digest after keeping = %s, %v; want %s", after, err, before)
	}
	// What it would write changes: so does the digest.
	if err := os.WriteFile(filepath.Join(kept, "new.txt"), []byte("NEW\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if changed, _ := again.Digest(); changed == before {
		t.Error("the digest did not change with the content it covers")
	}
	if err := os.WriteFile(filepath.Join(kept, "new.txt"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	report, err := again.Apply(beneath.Jail{Root: ws})
	if err != nil || len(report.Refused) != 0 {
		t.Fatalf("Apply = %+v, %v", report, err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(ws, "big.img"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != 1<<30 || st.Blocks*512 > 1<<20 {
		t.Errorf("big.img applied as %d bytes taking %d on disk, want 1 GiB taking little", st.Size, st.Blocks*512)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "new.txt")); string(b) != "new\n" {
		t.Errorf("new.txt = %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "old.txt")); err == nil {
		t.Error("old.txt was not deleted")
	}
	if err := again.Discard(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(kept); err == nil {
		t.Error("Discard left the kept layer")
	}
}
