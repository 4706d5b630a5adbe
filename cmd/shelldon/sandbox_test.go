package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"shelldon/config"
	"shelldon/sandbox"
	"shelldon/sandbox/image/imagetest"
)

// TestSandboxDiskDefault: the configuration's default is the sandbox's
// own, so a spec that names no disk limit gets the one the owner reads of.
func TestSandboxDiskDefault(t *testing.T) {
	if got, want := int64(config.Default().Sandbox.Disk), sandbox.DefaultLimits.Disk; got != want {
		t.Errorf("sandbox.disk defaults to %d, the sandbox to %d", got, want)
	}
}

// TestSandboxedCommandsRunAsTheSandboxUser: with sandbox.user naming a
// user of the host (nobody here, shelldon-sandbox on a board), a command
// over the root-owned workspace the .deb leaves runs as that user on the
// host, not as root: the container's uid_map maps its root to that user
// alone. With sandbox.user empty it runs as the workspace's owner, root.
func TestSandboxedCommandsRunAsTheSandboxUser(t *testing.T) {
	imagetest.Image(t)
	state := t.TempDir()
	if err := os.MkdirAll(filepath.Join(state, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	for user, want := range map[string]string{"nobody": "0 65534 1", "": "0 0 4294967295"} {
		t.Setenv("SHELLDON_SANDBOX_USER", user)
		var out, errOut strings.Builder
		if err := run(context.Background(), []string{"sandbox", "run", "--state-dir", state, "--", "cat", "/proc/self/uid_map"}, nil, &out, &errOut); err != nil {
			t.Fatalf("sandbox.user %q: shelldon sandbox run = %v\n%s", user, err, errOut.String())
		}
		if got := strings.Join(strings.Fields(out.String()), " "); got != want {
			t.Errorf("sandbox.user %q: the container's uid_map is %q, want %q", user, got, want)
		}
	}
}

func TestSandboxRunCommand(t *testing.T) {
	imagetest.Image(t)
	state := t.TempDir()
	ws := filepath.Join(state, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		args      []string
		status    int // shelldon exits with the command's own
		stdout    string
		stderr    []string
		workspace []string
	}{
		{"read-only", []string{"--", "cat", "a.txt"}, 0, "hello\n", []string{"exit 0", "limits held: wall, output"}, []string{"a.txt"}},
		{"captured without apply", []string{"--view", "captured", "--", "sh", "-c", "echo new > b.txt"}, 0, "", []string{"created  b.txt", "not applied"}, []string{"a.txt"}},
		{"captured and applied", []string{"--view", "captured", "--apply", "--", "sh", "-c", "echo new > b.txt; echo k > id_rsa"}, 0, "", []string{"refused  id_rsa", "applied 1, refused 1"}, []string{"a.txt", "b.txt"}},
		{"failing", []string{"--", "sh", "-c", "exit 4"}, 4, "", []string{"exit 4"}, []string{"a.txt", "b.txt"}},
		{"failing with changes", []string{"--view", "captured", "--", "sh", "-c", "echo c > c.txt; exit 3"}, 3, "", []string{"exit 3", "created  c.txt", "not applied"}, []string{"a.txt", "b.txt"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut strings.Builder
			args := append([]string{"sandbox", "run", "--state-dir", state}, tc.args...)
			if err := run(context.Background(), args, nil, &out, &errOut); exitCode(err) != tc.status {
				t.Fatalf("shelldon %q = %v (exit status %d), want exit status %d\n%s", args, err, exitCode(err), tc.status, errOut.String())
			}
			if out.String() != tc.stdout {
				t.Errorf("stdout = %q, want %q", out.String(), tc.stdout)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(errOut.String(), want) {
					t.Errorf("stderr = %q, want %q in it", errOut.String(), want)
				}
			}
			entries, _ := os.ReadDir(ws)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if strings.Join(names, " ") != strings.Join(tc.workspace, " ") {
				t.Errorf("workspace holds %q, want %q", names, tc.workspace)
			}
		})
	}
	// The process itself exits with the command's status, as a shell
	// sees it.
	if _, stderr, status := runBinary(t, "sandbox", "run", "--state-dir", state, "--", "sh", "-c", "exit 3"); status != 3 || !strings.Contains(stderr, "exit 3") || strings.Contains(stderr, "shelldon:") {
		t.Errorf("shelldon sandbox run -- sh -c 'exit 3' exited %d, printed %q; want status 3, reported once", status, stderr)
	}
}

// TestSandboxRunExitStatus: `sandbox run` exits as a shell reports the
// command: its own status, timeout(1)'s 124 when out of time, 128+9 when
// killed.
func TestSandboxRunExitStatus(t *testing.T) {
	for _, tc := range []struct {
		res  sandbox.Result
		want error
	}{
		{sandbox.Result{ExitCode: 0}, nil},
		{sandbox.Result{ExitCode: 3}, reported(3)},
		{sandbox.Result{ExitCode: 1}, errQuiet},
		{sandbox.Result{ExitCode: -1, TimedOut: true}, reported(124)},
		{sandbox.Result{ExitCode: -1, OutOfMemory: true}, reported(137)},
		{sandbox.Result{ExitCode: -1}, reported(137)},
	} {
		if got := commandStatus(tc.res); got != tc.want {
			t.Errorf("commandStatus(%+v) = %v, want %v", tc.res, got, tc.want)
		}
	}
}
