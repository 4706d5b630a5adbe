package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"shelldon/beneath"
	"shelldon/sandbox"
	"shelldon/sandbox/image/imagetest"
)

// sandboxUser is the unprivileged host user the tests make every
// container's root: a uid no file of the tests' belongs to.
var sandboxUser = sandbox.User{UID: 4343, GID: 4343}

// TestCommandsRunAsTheSandboxUser: with a sandbox user, no command runs as
// the host's root, whoever owns the workspace (root, as the .deb leaves
// it on a board, or an unprivileged user). In every view the command's
// root is the sandbox user on the host (its /proc/self/uid_map says so),
// and it sees the workspace's files as its own: it reads them, a captured
// run changes and adds to them, even in a directory only their owner may
// write and that holds a masked credential, and the change set, applied,
// gives what it made to the workspace's owner; a scratch run writes and
// leaves nothing.
func TestCommandsRunAsTheSandboxUser(t *testing.T) {
	img := imagetest.Image(t)
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: t.TempDir(), User: &sandboxUser})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range owners {
		t.Run(o.Name, func(t *testing.T) {
			// own/.env makes the mask layer hold own/, which it must give
			// the sandbox user as the workspace gives it to its owner.
			ws := workspace(t, o.UID, map[string]string{"notes.txt": "one\n", "own/inner.txt": "inner\n", "own/.env": "KEY=secret\n"})
			if err := os.Chmod(filepath.Join(ws, "own"), 0o700); err != nil {
				t.Fatal(err)
			}
			for _, view := range []sandbox.View{sandbox.ReadOnly, sandbox.Captured, sandbox.Scratch} {
				res := run(t, sb, sandbox.Spec{View: view, Workspace: ws, Argv: sh("cat /proc/self/uid_map; cat own/inner.txt")})
				discard(res.Changes)
				if fields := strings.Fields(res.Text()); len(fields) < 4 || fields[0] != "0" || fields[1] != "4343" || fields[2] != "1" || fields[3] != "inner" {
					t.Errorf("%s: uid_map and own/inner.txt read %q, want the container's root to be host uid 4343 alone, reading its workspace", view, res.Text())
				}
				if !res.UserNamespace {
					t.Errorf("%s: Result.UserNamespace = false, want true", view)
				}
			}

			res := run(t, sb, sandbox.Spec{View: sandbox.Captured, Workspace: ws, Argv: sh("echo two >> notes.txt && echo new > own/made.txt && mkdir own/sub && echo deep > own/sub/f")})
			if res.ExitCode != 0 {
				t.Fatalf("a captured run as the sandbox user exited %d: %s", res.ExitCode, res.Text())
			}
			report, err := res.Changes.Apply(beneath.Jail{Root: ws})
			if err != nil || len(report.Refused) != 0 {
				t.Fatalf("Apply = %+v, %v", report, err)
			}
			discard(res.Changes)
			want := map[string]string{"notes.txt": "one\ntwo\n", "own": "<dir>", "own/.env": "KEY=secret\n", "own/inner.txt": "inner\n", "own/made.txt": "new\n", "own/sub": "<dir>", "own/sub/f": "deep\n"}
			if got := readTree(t, ws); !maps(got, want) {
				t.Errorf("workspace after apply = %v, want %v", got, want)
			}
			for _, name := range []string{"notes.txt", "own/made.txt", "own/sub", "own/sub/f"} {
				var st syscall.Stat_t
				if err := syscall.Lstat(filepath.Join(ws, name), &st); err != nil || int(st.Uid) != o.UID {
					t.Errorf("applied %s is owned by uid %d (%v), want the workspace's owner %d", name, st.Uid, err, o.UID)
				}
			}

			res = run(t, sb, sandbox.Spec{View: sandbox.Scratch, Workspace: ws, Argv: sh("echo x > own/scratch.txt && cat own/scratch.txt")})
			if res.ExitCode != 0 || !strings.Contains(res.Text(), "x") {
				t.Errorf("a scratch run as the sandbox user = %d: %s", res.ExitCode, res.Text())
			}
			if _, err := os.Stat(filepath.Join(ws, "own/scratch.txt")); !os.IsNotExist(err) {
				t.Errorf("a scratch run's file is in the workspace: %v", err)
			}
		})
	}
}

// TestTheSandboxUserIsNeverRoot: a sandbox user of uid 0 would be no
// user namespace at all.
func TestTheSandboxUserIsNeverRoot(t *testing.T) {
	img := imagetest.Image(t)
	if _, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: t.TempDir(), User: &sandbox.User{}}); err == nil || !strings.Contains(err.Error(), "root") {
		t.Errorf("New with a sandbox user of uid 0 = %v, want it refused", err)
	}
}

// TestBoundDirectoriesAreReadAsTheirOwnersAre: a directory bound into the
// container (a kept tool's own, which core keeps private) is shown to the
// sandbox user as to its owner, as the workspace is: a root-owned
// directory of mode 0700 is read by the container's root.
func TestBoundDirectoriesAreReadAsTheirOwnersAre(t *testing.T) {
	img := imagetest.Image(t)
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: t.TempDir(), User: &sandboxUser})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range owners {
		t.Run(o.Name, func(t *testing.T) {
			ws := workspace(t, o.UID, map[string]string{"notes.txt": "one\n"})
			tool := workspace(t, 0, map[string]string{"greet.py": "def run(): return 'hello'\n"})
			if err := os.Chmod(tool, 0o700); err != nil {
				t.Fatal(err)
			}
			res := run(t, sb, sandbox.Spec{View: sandbox.ReadOnly, Workspace: ws,
				Binds: []sandbox.Bind{{Source: tool, Target: "/run/shelldon/tool"}}, Argv: sh("cat /run/shelldon/tool/greet.py")})
			if res.ExitCode != 0 || !strings.Contains(res.Text(), "hello") {
				t.Errorf("reading a root-owned 0700 bound directory as the sandbox user = %d: %s", res.ExitCode, res.Text())
			}
		})
	}
}
