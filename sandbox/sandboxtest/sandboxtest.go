// Package sandboxtest is the conformance suite of the sandbox's backends:
// one set of behaviour tests that a [sandbox.Sandbox] must pass whichever
// way it holds its runs (a control group of its own, a transient systemd
// unit), run through Run and Start alone over the real image:
// confinement (no host file beyond the workspace's view, no network
// unless asked, no host process or path in sight, binds read-only), limits
// (wall time, cancellation, output, tasks, memory; nothing a run started
// outlives it), the three views of the workspace for a workspace of root's
// and of an unprivileged owner's, a captured run's change set kept,
// reopened and applied, and no run leaving anything in the run directory.
// It is in the spirit of containerd's snapshots/testsuite: the sandbox's
// tests run [Run] over a table of its backends, so a new backend is one
// line there; what only one backend does stays in that backend's own
// tests.
package sandboxtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
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
	"shelldon/testhost"
)

// waitLimit bounds every wait on a run, so a broken backend fails the
// test instead of hanging it.
const waitLimit = 30 * time.Second

// Target is one backend under test.
type Target struct {
	Sandbox *sandbox.Sandbox
	// Image is the root file system the sandbox runs from.
	Image string
	// Dir is where the suite makes workspaces and directories to bind:
	// a directory the backend's containers are started from at the same
	// path (a systemd in a container of its own sees only what it
	// shares).
	Dir string
	// RunDir is the sandbox's run directory, which every run must leave
	// empty.
	RunDir string
	// Offline and Unlimited, when set, say why this target, by how the
	// test builds it (not by what the machine lacks), cannot start a
	// networked run, or hold a run's memory; the suite's runs that need
	// it are not made against the target, and say why in the log. What
	// covers them instead belongs in the reason.
	Offline, Unlimited string
}

// Impl is one row of a backend table: a name and how to make the
// sandbox, which skips t through package testhost where it cannot run
// here (no root, no image, no systemd) and cleans up after itself.
type Impl struct {
	Name string
	New  func(t *testing.T) Target
}

// Owners are the two ways a workspace is owned, and so the two ways the
// container runs: as root without a user namespace (a build machine), and
// in a user namespace whose root is an unprivileged owner (a board).
var Owners = []struct {
	Name string
	UID  int
}{
	{"root", 0},
	{"unprivileged", 4242},
}

// Run runs the suite against each backend of impls, each in a subtest
// named after it.
func Run(t *testing.T, impls []Impl) {
	for _, impl := range impls {
		t.Run(impl.Name, func(t *testing.T) {
			s := &suite{Target: impl.New(t)}
			for _, c := range []struct {
				name string
				test func(*testing.T)
			}{
				{"Views", s.views},
				{"ReportsTheExitAndBothStreams", s.reportsTheExitAndBothStreams},
				{"TheHostsLoopbackIsOutOfReach", s.theHostsLoopbackIsOutOfReach},
				{"NoNetworkUnlessAsked", s.noNetworkUnlessAsked},
				{"TheImagesFilesAndNotTheHosts", s.theImagesFilesAndNotTheHosts},
				{"ASymlinkToAHostFileLeadsNowhere", s.aSymlinkToAHostFileLeadsNowhere},
				{"TheHostsProcessesAreInvisible", s.theHostsProcessesAreInvisible},
				{"ProcNamesNoHostPath", s.procNamesNoHostPath},
				{"BindsAreReadOnly", s.bindsAreReadOnly},
				{"ABackgroundProcessDoesNotOutliveTheRun", s.aBackgroundProcessDoesNotOutliveTheRun},
				{"TheWallTimeKillsTheWholeContainer", s.theWallTimeKillsTheWholeContainer},
				{"CancellationKillsTheWholeContainer", s.cancellationKillsTheWholeContainer},
				{"OutputIsCappedToItsTail", s.outputIsCappedToItsTail},
				{"OutputThatIsNotUTF8Survives", s.outputThatIsNotUTF8Survives},
				{"AForkBombStaysInsideItsTaskLimit", s.aForkBombStaysInsideItsTaskLimit},
				{"AMemoryHogIsStopped", s.aMemoryHogIsStopped},
				{"AProcessIsSpokenToOverItsStdio", s.aProcessIsSpokenToOverItsStdio},
				{"AKeptChangeSetReadsBackTheSame", s.aKeptChangeSetReadsBackTheSame},
			} {
				t.Run(c.name, c.test)
			}
			if left, _ := os.ReadDir(s.RunDir); len(left) != 0 {
				t.Errorf("%s: runs left behind in %s: %v", impl.Name, s.RunDir, left)
			}
		})
	}
}

type suite struct{ Target }

// run runs spec and fails t when the run could not happen.
func (s *suite) run(t *testing.T, spec sandbox.Spec) sandbox.Result {
	t.Helper()
	res, err := s.Sandbox.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run(%q) = %v", spec.Argv, err)
	}
	if res.Changes != nil {
		t.Cleanup(func() { res.Changes.Discard() })
	}
	return res
}

// workspace makes a workspace in the target's directory.
func (s *suite) workspace(t *testing.T, uid int, files map[string]string) string {
	t.Helper()
	return Workspace(t, s.Dir, uid, files)
}

// Sh is argv running script with /bin/sh.
func Sh(script string) []string { return []string{"/bin/sh", "-c", script} }

// Workspace makes a workspace under dir holding files (path → content),
// owned by uid, directories included; it is removed at cleanup.
func Workspace(t testing.TB, dir string, uid int, files map[string]string) string {
	t.Helper()
	parent, err := os.MkdirTemp(dir, "workspace")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	ws := filepath.Join(parent, "ws")
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
	ChownTree(t, ws, uid)
	return ws
}

// ChownTree gives everything under dir, dir included, to uid.
func ChownTree(t testing.TB, dir string, uid int) {
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

// ReadTree is what lies under dir: each path's content, "<dir>" for a
// directory and "-> target" for a symbolic link.
func ReadTree(t testing.TB, dir string) map[string]string {
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

// Alive lists the processes on the host, a container's included, with
// marker in their command line.
func Alive(marker string) []string {
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

func (s *suite) views(t *testing.T) {
	for _, o := range Owners {
		t.Run(o.Name, func(t *testing.T) {
			t.Run("read-only sees but cannot write", func(t *testing.T) {
				ws := s.workspace(t, o.UID, map[string]string{"hello.txt": "hi there\n"})
				res := s.run(t, sandbox.Spec{Argv: Sh("cat hello.txt; echo changed > hello.txt; echo new > new.txt"), Workspace: ws})
				if !strings.Contains(res.Text(), "hi there") {
					t.Errorf("output = %q, want the workspace file's content", res.Text())
				}
				if res.ExitCode == 0 {
					t.Errorf("writing a read-only workspace exited 0; output %q", res.Text())
				}
				if got := ReadTree(t, ws); !maps.Equal(got, map[string]string{"hello.txt": "hi there\n"}) {
					t.Errorf("workspace after a read-only run = %v, want it unchanged", got)
				}
				if res.Changes != nil {
					t.Errorf("read-only run returned changes %+v", res.Changes.Changes)
				}
				if res.UserNamespace != (o.UID != 0) {
					t.Errorf("UserNamespace = %v for a workspace of uid %d", res.UserNamespace, o.UID)
				}
			})
			t.Run("captured records and applies", func(t *testing.T) {
				ws := s.workspace(t, o.UID, map[string]string{"a.txt": "one\n", "b.txt": "doomed\n", "dir/c.txt": "inner\n"})
				res := s.run(t, sandbox.Spec{View: sandbox.Captured, Workspace: ws, Argv: Sh(
					"echo two >> a.txt && rm b.txt && echo fresh > new.txt && mkdir made && echo x > made/f && ln -s a.txt link && rm -r dir && mkdir dir && echo again > dir/d.txt")})
				if res.ExitCode != 0 {
					t.Fatalf("captured run exited %d: %s", res.ExitCode, res.Text())
				}
				if got := ReadTree(t, ws); !maps.Equal(got, map[string]string{"a.txt": "one\n", "b.txt": "doomed\n", "dir": "<dir>", "dir/c.txt": "inner\n"}) {
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
				if got := ReadTree(t, ws); !maps.Equal(got, wantTree) {
					t.Errorf("workspace after apply = %v, want %v", got, wantTree)
				}
				var st syscall.Stat_t
				if err := syscall.Lstat(filepath.Join(ws, "new.txt"), &st); err != nil || int(st.Uid) != o.UID {
					t.Errorf("applied file owned by uid %d (%v), want the workspace owner %d", st.Uid, err, o.UID)
				}
				if err := res.Changes.Discard(); err != nil {
					t.Errorf("Discard = %v", err)
				}
			})
			t.Run("scratch writes vanish", func(t *testing.T) {
				ws := s.workspace(t, o.UID, map[string]string{"test_x.py": "def test_x():\n    open('out.txt','w').write('x')\n"})
				res := s.run(t, sandbox.Spec{View: sandbox.Scratch, Workspace: ws, Argv: []string{"python3", "-m", "pytest", "-q"}})
				if res.ExitCode != 0 || !strings.Contains(res.Text(), "1 passed") {
					t.Errorf("pytest in scratch = %d: %s", res.ExitCode, res.Text())
				}
				if got := ReadTree(t, ws); len(got) != 1 {
					t.Errorf("workspace after a scratch run = %v, want only the test file", got)
				}
				if res.Changes != nil {
					t.Errorf("scratch run returned changes")
				}
			})
		})
	}
}

func (s *suite) reportsTheExitAndBothStreams(t *testing.T) {
	ws := s.workspace(t, 0, map[string]string{"a.txt": "one\n"})
	res := s.run(t, sandbox.Spec{Argv: Sh("cat a.txt; echo to stderr >&2; exit 3"), Workspace: ws})
	if res.ExitCode != 3 || res.Text() != "one\nto stderr\n" {
		t.Errorf("run = exit %d, output %q; want 3 and both streams", res.ExitCode, res.Text())
	}
	for _, limit := range []string{"wall", "output", "disk"} {
		if !slices.Contains(res.Enforced, limit) {
			t.Errorf("Enforced = %v, want %s, which the sandbox always holds", res.Enforced, limit)
		}
	}
	res = s.run(t, sandbox.Spec{Argv: []string{"no-such-program"}, Workspace: ws})
	if res.ExitCode == 0 {
		t.Errorf("a missing program = %+v, want a failed result", res)
	}
}

func (s *suite) theHostsLoopbackIsOutOfReach(t *testing.T) {
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
	ws := s.workspace(t, 0, nil)
	for _, network := range []bool{false, true} {
		t.Run(fmt.Sprintf("network %v", network), func(t *testing.T) {
			if !s.online(t, network) {
				return
			}
			res := s.run(t, sandbox.Spec{Argv: probe, Workspace: ws, Network: network})
			if res.ExitCode == 0 || strings.Contains(res.Text(), "hello from the host") {
				t.Errorf("the host's listener answered: %d %s", res.ExitCode, res.Text())
			}
		})
	}
}

// online reports whether the target can make the run, networked or not;
// the log says why not.
func (s *suite) online(t *testing.T, network bool) bool {
	t.Helper()
	if network && s.Offline != "" {
		t.Logf("no networked run against this target: %s", s.Offline)
		return false
	}
	return true
}

// noNetworkUnlessAsked: a run has loopback alone; one that asks for the
// network is pointed at the sandbox's proxy, its only way out.
func (s *suite) noNetworkUnlessAsked(t *testing.T) {
	ws := s.workspace(t, 0, nil)
	probe := []string{"python3", "-c", "import os, socket; print(sorted(n for _, n in socket.if_nameindex())); print(os.environ.get('ALL_PROXY', 'no proxy'))"}
	for _, tt := range []struct {
		network bool
		proxy   string
	}{{false, "no proxy"}, {true, "socks5h://127.0.0.1:"}} {
		t.Run(fmt.Sprintf("network %v", tt.network), func(t *testing.T) {
			if !s.online(t, tt.network) {
				return
			}
			res := s.run(t, sandbox.Spec{Argv: probe, Workspace: ws, Network: tt.network})
			lines := strings.Split(strings.TrimSpace(res.Text()), "\n")
			if res.ExitCode != 0 || len(lines) != 2 || lines[0] != "['lo']" || !strings.HasPrefix(lines[1], tt.proxy) {
				t.Errorf("exit %d, %q; want loopback alone and %q", res.ExitCode, res.Text(), tt.proxy)
			}
		})
	}
}

func (s *suite) theImagesFilesAndNotTheHosts(t *testing.T) {
	want, err := os.ReadFile(filepath.Join(s.Image, "etc", "shadow"))
	if err != nil {
		t.Fatal(err)
	}
	res := s.run(t, sandbox.Spec{Argv: []string{"cat", "/etc/shadow"}, Workspace: s.workspace(t, 0, nil)})
	if !bytes.Equal(res.Output, want) {
		t.Errorf("cat /etc/shadow = %q, want the image's %q", res.Output, want)
	}
}

func (s *suite) aSymlinkToAHostFileLeadsNowhere(t *testing.T) {
	secret := filepath.Join(s.workspace(t, 0, nil), "..", "secret")
	if err := os.WriteFile(secret, []byte("host secret 7331\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := s.workspace(t, 0, nil)
	if err := os.Symlink(secret, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	for _, view := range []sandbox.View{sandbox.ReadOnly, sandbox.Captured, sandbox.Scratch} {
		res := s.run(t, sandbox.Spec{View: view, Argv: Sh("cat link; echo overwritten > link"), Workspace: ws})
		if strings.Contains(res.Text(), "7331") {
			t.Errorf("%v run read the host file through a link: %s", view, res.Text())
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "host secret 7331\n" {
		t.Errorf("host file now holds %q", b)
	}
}

func (s *suite) theHostsProcessesAreInvisible(t *testing.T) {
	res := s.run(t, sandbox.Spec{Argv: Sh("ls /proc | grep -c '^[0-9]'"), Workspace: s.workspace(t, 0, nil)})
	if n := strings.TrimSpace(res.Text()); n == "" || len(n) > 1 {
		t.Errorf("the container sees %q processes, want a handful", n)
	}
}

// procNamesNoHostPath: inside the container, /proc says nothing of the
// host's paths or of how its kernel was booted, in any view.
func (s *suite) procNamesNoHostPath(t *testing.T) {
	cmdline, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	code := filepath.Join(s.workspace(t, 0, nil), "..", "tool-code-of-the-host")
	if err := os.Mkdir(code, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, o := range Owners {
		ws := s.workspace(t, o.UID, map[string]string{"a.txt": "a"})
		for _, view := range []sandbox.View{sandbox.ReadOnly, sandbox.Captured, sandbox.Scratch} {
			t.Run(o.Name+"/"+view.String(), func(t *testing.T) {
				res := s.run(t, sandbox.Spec{View: view, Workspace: ws, Binds: []sandbox.Bind{{Source: code, Target: "/run/shelldon/tool"}},
					Argv: Sh("echo cmdline:; cat /proc/cmdline; echo; echo mountinfo:; cat /proc/self/mountinfo /proc/1/mountinfo")})
				out := res.Text()
				if !strings.Contains(out, " /workspace ") {
					t.Fatalf("no mount of /workspace in %s", out)
				}
				if c := strings.TrimSpace(string(cmdline)); c != "" && strings.Contains(out, c) {
					t.Errorf("the container reads the kernel's command line: %s", out)
				}
				for _, host := range []string{ws, s.RunDir, filepath.Clean(code), filepath.Dir(ws)} {
					if strings.Contains(out, host) {
						t.Errorf("mountinfo shows the host path %s: %s", host, out)
					}
				}
			})
		}
	}
}

// bindsAreReadOnly: a bound directory is seen at its target, beside the
// workspace, and nothing in the container can write it.
func (s *suite) bindsAreReadOnly(t *testing.T) {
	for _, o := range Owners {
		t.Run(o.Name, func(t *testing.T) {
			ws := s.workspace(t, o.UID, map[string]string{"a.txt": "a"})
			code := filepath.Join(ws, "..", "code")
			if err := os.Mkdir(code, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(code, "tool.py"), []byte("print('bound')\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			res := s.run(t, sandbox.Spec{
				Argv:      Sh("python3 /run/shelldon/tool/tool.py; echo x > /run/shelldon/tool/tool.py; echo exit $?"),
				Workspace: ws, View: sandbox.ReadOnly, Binds: []sandbox.Bind{{Source: code, Target: "/run/shelldon/tool"}},
			})
			if out := res.Text(); !strings.Contains(out, "bound") || strings.Contains(out, "exit 0") {
				t.Errorf("run with a bind printed %q, want the bound code run and the write refused", out)
			}
			if b, _ := os.ReadFile(filepath.Join(code, "tool.py")); string(b) != "print('bound')\n" {
				t.Errorf("the bound file became %q", b)
			}
		})
	}
}

func (s *suite) aBackgroundProcessDoesNotOutliveTheRun(t *testing.T) {
	res := s.run(t, sandbox.Spec{Argv: Sh("sleep 1357 & echo started"), Workspace: s.workspace(t, 0, nil)})
	if res.ExitCode != 0 || !strings.Contains(res.Text(), "started") {
		t.Fatalf("run = %d %s", res.ExitCode, res.Text())
	}
	if left := Alive("sleep 1357"); len(left) > 0 {
		t.Errorf("after Run, still running: %q", left)
	}
}

func (s *suite) theWallTimeKillsTheWholeContainer(t *testing.T) {
	res := s.run(t, sandbox.Spec{Argv: Sh("echo started; sleep 2468 & sleep 2469"), Workspace: s.workspace(t, 0, nil), Limits: sandbox.Limits{Wall: time.Second}})
	if !res.TimedOut || res.ExitCode != -1 || !strings.Contains(res.Text(), "started") {
		t.Errorf("run = timed out %v, exit %d, output %q; want a timeout after the output", res.TimedOut, res.ExitCode, res.Text())
	}
	if res.Duration < time.Second || res.Duration > waitLimit {
		t.Errorf("a run with a wall time of 1s took %v", res.Duration)
	}
	if left := Alive("sleep 246"); len(left) > 0 {
		t.Errorf("after the timeout, still running: %q", left)
	}
}

func (s *suite) cancellationKillsTheWholeContainer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		res, err := s.Sandbox.Run(ctx, sandbox.Spec{Argv: Sh("sleep 3579 & sleep 3578"), Workspace: s.workspace(t, 0, nil)})
		if err == nil && res.Changes != nil {
			res.Changes.Discard()
		}
		done <- err
	}()
	deadline := time.After(waitLimit)
	for len(Alive("sleep 3579")) == 0 {
		select {
		case err := <-done:
			t.Fatalf("Run ended before it was cancelled: %v", err)
		case <-deadline:
			t.Fatal("the run's command never started")
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled Run = %v, want context.Canceled", err)
		}
	case <-time.After(waitLimit):
		t.Fatalf("Run did not return within %v of its cancellation", waitLimit)
	}
	if left := Alive("sleep 357"); len(left) > 0 {
		t.Errorf("after cancellation, still running: %q", left)
	}
}

func (s *suite) outputIsCappedToItsTail(t *testing.T) {
	const total = 10_000_000
	res := s.run(t, sandbox.Spec{Argv: Sh(fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x; echo END", total-4)), Workspace: s.workspace(t, 0, nil), Limits: sandbox.Limits{Output: 4096}})
	if len(res.Output) != 4096 || res.OutputDropped != total-4096 || !bytes.HasSuffix(res.Output, []byte("xxEND\n")) {
		t.Errorf("output kept %d bytes, dropped %d, ends %q; want 4096 kept, %d dropped, the end kept", len(res.Output), res.OutputDropped, res.Output[max(0, len(res.Output)-8):], total-4096)
	}
	if !strings.HasPrefix(res.Text(), "[… 9995904 earlier bytes of output cut …]") {
		t.Errorf("Text starts %q, want the cut said", res.Text()[:min(60, len(res.Text()))])
	}
}

func (s *suite) outputThatIsNotUTF8Survives(t *testing.T) {
	res := s.run(t, sandbox.Spec{Argv: Sh(`printf 'ok \377\376 done'`), Workspace: s.workspace(t, 0, nil)})
	if !bytes.Equal(res.Output, []byte("ok \xff\xfe done")) {
		t.Errorf("output = %q, want the bytes as written", res.Output)
	}
	if text := res.Text(); !utf8.ValidString(text) || !strings.Contains(text, "done") {
		t.Errorf("Text() = %q, want valid UTF-8", text)
	}
}

func (s *suite) aForkBombStaysInsideItsTaskLimit(t *testing.T) {
	res := s.run(t, sandbox.Spec{Argv: Sh("for i in $(seq 100); do sleep 4711 & done; echo forked"), Workspace: s.workspace(t, 0, nil), Limits: sandbox.Limits{Tasks: 16, Wall: 20 * time.Second}})
	if !slices.Contains(res.Enforced, "tasks") {
		testhost.Missing(t, "a task limit the host can enforce (enforced: "+strings.Join(res.Enforced, ", ")+")", "a writable pids cgroup controller, or systemd as PID 1")
	}
	if !strings.Contains(strings.ToLower(res.Text()), "fork") {
		t.Errorf("100 forks under a limit of 16 all succeeded: %s", res.Text())
	}
	if left := Alive("sleep 4711"); len(left) > 0 {
		t.Errorf("after Run, %d sleeps still running", len(left))
	}
}

func (s *suite) aMemoryHogIsStopped(t *testing.T) {
	if s.Unlimited != "" {
		t.Logf("no memory limit against this target: %s", s.Unlimited)
		return
	}
	res := s.run(t, sandbox.Spec{Argv: []string{"python3", "-c", "b = b'x' * (400 << 20); print('survived')"}, Workspace: s.workspace(t, 0, nil), Limits: sandbox.Limits{Memory: 64 << 20}})
	if !slices.Contains(res.Enforced, "memory") {
		testhost.Missing(t, "a memory limit the host can enforce (enforced: "+strings.Join(res.Enforced, ", ")+")", "a writable memory cgroup controller (cgroup_enable=memory on Raspberry Pi kernels), or systemd as PID 1")
	}
	if res.ExitCode == 0 || strings.Contains(res.Text(), "survived") || !res.OutOfMemory {
		t.Errorf("memory hog: exit %d, out of memory %v, output %q; want it killed by the limit", res.ExitCode, res.OutOfMemory, res.Text())
	}
}

// aProcessIsSpokenToOverItsStdio: a process in its container answers
// what is written to its stdin on its stdout, its stderr kept apart; it
// ends when its stdin does, and Stop ends one that would not.
func (s *suite) aProcessIsSpokenToOverItsStdio(t *testing.T) {
	ws := s.workspace(t, 0, map[string]string{"a.txt": "hello"})
	p := s.start(t, sandbox.Spec{Argv: Sh("echo starting >&2; while read -r line; do echo \"got $line\"; done"), Workspace: ws})
	out := bufio.NewReader(p.Stdout)
	for _, line := range []string{"one", "two"} {
		if _, err := io.WriteString(p.Stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
		got, err := readLine(t, out)
		if err != nil || got != "got "+line+"\n" {
			t.Fatalf("read %q, %v; want %q", got, err, "got "+line)
		}
	}
	p.Stdin.Close()
	select {
	case <-p.Done():
	case <-time.After(waitLimit):
		t.Fatal("the process did not end with its stdin")
	}
	res, err := p.Wait()
	if err != nil || res.ExitCode != 0 || res.Text() != "starting\n" {
		t.Errorf("Wait = %+v (output %q), %v; want exit 0 with its stderr alone", res, res.Output, err)
	}
	if rest, _ := io.ReadAll(out); len(rest) != 0 {
		t.Errorf("stdout after the end: %q", rest)
	}

	p = s.start(t, sandbox.Spec{Argv: []string{"/bin/sleep", "600"}, Workspace: ws})
	stopped := make(chan error, 1)
	go func() { _, err := p.Stop(); stopped <- err }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Stop = %v", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("Stop did not end the process")
	}
	if _, err := io.ReadAll(p.Stdout); err != nil {
		t.Errorf("stdout of a stopped process: %v", err)
	}
	if _, err := io.WriteString(p.Stdin, "late\n"); err == nil {
		t.Error("a write to a stopped process's stdin succeeded")
	}
}

// start starts spec as a process that the test's cleanup stops, should
// the test end first.
func (s *suite) start(t *testing.T, spec sandbox.Spec) *sandbox.Process {
	t.Helper()
	p, err := s.Sandbox.Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start(%q) = %v", spec.Argv, err)
	}
	t.Cleanup(func() {
		p.Stop()
		p.Stdin.Close()
		p.Stdout.Close()
	})
	return p
}

// readLine reads a line of a process's stdout, giving up after waitLimit.
func readLine(t *testing.T, r *bufio.Reader) (string, error) {
	t.Helper()
	type line struct {
		text string
		err  error
	}
	got := make(chan line, 1)
	go func() {
		text, err := r.ReadString('\n')
		got <- line{text, err}
	}()
	select {
	case l := <-got:
		return l.text, l.err
	case <-time.After(waitLimit):
		t.Fatalf("no line on the process's stdout within %v", waitLimit)
		return "", nil
	}
}

// aKeptChangeSetReadsBackTheSame: a captured run's change set kept for
// the owner's decision scans back after a restart with the same digest,
// applies as it would have, and any change to what it would write changes
// its digest. A sparse file is seen as sparse and applied with its holes.
func (s *suite) aKeptChangeSetReadsBackTheSame(t *testing.T) {
	ws := s.workspace(t, 0, map[string]string{"old.txt": "old"})
	res := s.run(t, sandbox.Spec{
		Argv:      Sh("echo new > new.txt && rm old.txt && truncate -s 1G big.img && printf x | dd of=big.img bs=1 seek=4096 conv=notrunc 2>/dev/null"),
		Workspace: ws, View: sandbox.Captured,
	})
	if res.ExitCode != 0 || res.Changes == nil {
		t.Fatalf("captured run = %+v", res)
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
