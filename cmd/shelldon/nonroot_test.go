package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"shelldon/demomodel"
	"shelldon/testhost"
)

// nobody is the user the owner's commands run as in these tests: not
// root, in no group of shelldon's.
var nobody = syscall.Credential{Uid: 65534, Gid: 65534}

// runAs runs shelldon's command line (this test binary, which TestMain
// turns into main) as the user cred, for at most 30 s.
func runAs(t *testing.T, self string, cred syscall.Credential, extraPath string, args ...string) (stdout, stderr string, took time.Duration, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = append(os.Environ(), "SHELLDON_TEST_MAIN=1", "HOME=/")
	if extraPath != "" {
		cmd.Env = append(cmd.Env, "PATH="+extraPath+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &cred}
	cmd.Dir = "/"
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("shelldon %q as uid %d ran for 30s:\n%s", args, cred.Uid, errOut.String())
	}
	return out.String(), errOut.String(), time.Since(start), err
}

// demoModelForOthers builds shelldon-demo-model into a directory any user
// may run it from, and returns that directory.
func demoModelForOthers(t *testing.T) string {
	t.Helper()
	goTool := testhost.Tool(t, "go", "golang (Go 1.26)")
	dir, err := os.MkdirTemp("", "sddemo")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command(goTool, "build", "-o", filepath.Join(dir, demoModelBinary), "shelldon/cmd/shelldon-demo-model")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the demo model: %v\n%s", err, out)
	}
	return dir
}

// rootsDir is a state directory that root made and others may enter but
// not write: /var/lib/shelldon as the package leaves it, or ./var after
// a `sudo make run`.
func rootsDir(t *testing.T) string {
	t.Helper()
	dir := testhost.ShortDir(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestUpAsAnotherUserSaysPermissionDenied: a developer runs `shelldon up`
// on a state directory root made. It fails at once naming the permission
// it lacks and what to do, not after waiting for a demo model that could
// not write its address there.
func TestUpAsAnotherUserSaysPermissionDenied(t *testing.T) {
	testhost.Root(t)
	self := testhost.SelfForOthers(t)
	demo := demoModelForOthers(t)
	dir := rootsDir(t)

	_, stderr, took, err := runAs(t, self, nobody, demo, "up", "--state-dir", dir)
	if err == nil {
		t.Fatalf("shelldon up as uid %d on root's %s succeeded", nobody.Uid, dir)
	}
	for _, want := range []string{"permission denied", dir, "--state-dir"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("shelldon up as uid %d said %q, want it to name %q", nobody.Uid, stderr, want)
		}
	}
	if strings.Contains(stderr, "did not say its address") || strings.Contains(stderr, "DEMO MODEL") {
		t.Errorf("shelldon up as uid %d said %q: the demo model's trouble, not the state directory's", nobody.Uid, stderr)
	}
	if took > 5*time.Second {
		t.Errorf("shelldon up as uid %d took %v to fail, want it at once", nobody.Uid, took)
	}
}

// TestCommandsAsAnotherUser: the owner runs the read-only commands as
// themselves on the state directory a core running as root keeps. Each
// says what it may not read and what to do, instead of an empty answer or
// a wrong diagnosis.
func TestCommandsAsAnotherUser(t *testing.T) {
	testhost.Root(t)
	self := testhost.SelfForOthers(t)
	p := newPet(t, demomodel.New())
	dir := p.cfg.StateDir
	// Others may enter the directory, as they may /var/lib; the database,
	// the tool store and the socket stay core's.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	t.Run("tools", func(t *testing.T) {
		stdout, stderr, _, err := runAs(t, self, nobody, "", "tools", "--state-dir", dir)
		if err == nil || strings.Contains(stdout, "no self-coded tools yet") {
			t.Errorf("shelldon tools as uid %d = %v, printed %q: want a failure, not an empty store", nobody.Uid, err, stdout)
		}
		for _, want := range []string{"permission denied", filepath.Join(dir, "tools"), "as root"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("shelldon tools as uid %d said %q, want it to name %q", nobody.Uid, stderr, want)
			}
		}
	})
	t.Run("turns", func(t *testing.T) {
		_, stderr, _, err := runAs(t, self, nobody, "", "turns", "--state-dir", dir)
		if err == nil || !strings.Contains(stderr, "permission denied") || !strings.Contains(stderr, "as root") {
			t.Errorf("shelldon turns as uid %d = %v, said %q; want the permission it lacks and the fix", nobody.Uid, err, stderr)
		}
	})
	t.Run("doctor", func(t *testing.T) {
		if err := os.Chmod(dir, 0o750); err != nil { // as core leaves it: others may not even enter
			t.Fatal(err)
		}
		stdout, _, _, _ := runAs(t, self, nobody, "", "doctor", "--state-dir", dir)
		lines := map[string]string{}
		for _, line := range strings.Split(stdout, "\n") {
			for _, name := range []string{"state directory", "state database", "core"} {
				if strings.HasPrefix(line[min(len(line), 5):], name+" ") {
					lines[name] = line
				}
			}
		}
		for name, wants := range map[string][]string{
			"state directory": {"warn", "permission denied", "as root"},
			"state database":  {"warn", "permission denied", "as root"},
			"core":            {"warn", "permission denied", filepath.Join(dir, "bus.sock"), "as root"},
		} {
			for _, want := range wants {
				if !strings.Contains(lines[name], want) {
					t.Errorf("shelldon doctor as uid %d: %s line %q, want it to say %q", nobody.Uid, name, lines[name], want)
				}
			}
		}
		if t.Failed() {
			t.Logf("shelldon doctor as uid %d printed\n%s", nobody.Uid, stdout)
		}
	})
}

// TestImageBuildAsAnotherUser: `shelldon image build` needs root (it
// verifies the image in systemd-nspawn); run as anyone else it says so
// at once, whatever the cache directory.
func TestImageBuildAsAnotherUser(t *testing.T) {
	testhost.Root(t)
	self := testhost.SelfForOthers(t)
	cache := testhost.ShortDir(t)
	if err := os.Chown(cache, int(nobody.Uid), int(nobody.Gid)); err != nil {
		t.Fatal(err)
	}
	// A mirror on loopback that answers nothing: were the build to start,
	// it would go nowhere.
	const mirror = "http://127.0.0.1:9/debian"
	for _, args := range [][]string{{"image", "build", "--mirror", mirror}, {"image", "build", "--cache", cache, "--mirror", mirror}} {
		_, stderr, _, err := runAs(t, self, nobody, "", args...)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || !strings.Contains(stderr, "needs root") || !strings.Contains(stderr, "sudo") {
			t.Errorf("shelldon %q as uid %d = %v, said %q; want it to say it needs root", args, nobody.Uid, err, stderr)
		}
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("shelldon image build as uid %d left %d entries in its cache", nobody.Uid, len(entries))
	}
}
