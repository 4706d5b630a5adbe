package sandbox_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	godbus "github.com/godbus/dbus/v5"

	"shelldon/beneath"
	"shelldon/daemon/launch"
	"shelldon/sandbox"
	"shelldon/sandbox/image/imagetest"
	"shelldon/testhost/systemdhost"
)

// TestInSystemdUnits runs the sandbox as it runs on a board: every
// container in a shelldon-run@ unit of a real systemd (here booted in a
// container of its own, with the image and a shared directory at the
// same paths as on this host), limits and wall time held by the unit,
// output handed back through a descriptor passed over D-Bus.
func TestInSystemdUnits(t *testing.T) {
	img := imagetest.Image(t)
	host := systemdhost.Boot(t, img.Dir)
	ctx := context.Background()
	units, err := launch.NewSystemd(ctx, func() (*godbus.Conn, error) { return systemdhost.Dial(host.BusAddress) }, launch.SystemdOptions{})
	if err != nil {
		t.Fatalf("NewSystemd: %v", err)
	}
	defer units.Close()
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: filepath.Join(host.Dir, "runs"), Units: units})
	if err != nil {
		t.Fatalf("sandbox.New: %v", err)
	}
	ws := filepath.Join(host.Dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("output and exit status come back", func(t *testing.T) {
		res := run(t, sb, sandbox.Spec{Argv: sh("cat a.txt; echo to stderr >&2; exit 3"), Workspace: ws})
		if res.ExitCode != 3 || res.Text() != "one\nto stderr\n" {
			t.Errorf("run = exit %d, output %q; want 3 and both streams", res.ExitCode, res.Text())
		}
		for _, limit := range []string{"memory", "tasks", "cpu", "wall"} {
			if !slices.Contains(res.Enforced, limit) {
				t.Errorf("Enforced = %v, want %s held by the unit", res.Enforced, limit)
			}
		}
	})
	t.Run("a process is spoken to over its stdio", func(t *testing.T) {
		p, err := sb.Start(ctx, sandbox.Spec{Argv: sh("echo starting >&2; read -r line; echo \"got $line\""), Workspace: ws})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(p.Stdin, "hello\n"); err != nil {
			t.Fatal(err)
		}
		got, err := bufio.NewReader(p.Stdout).ReadString('\n')
		if err != nil || got != "got hello\n" {
			t.Errorf("read %q, %v; want the answer on stdout alone", got, err)
		}
		res, err := p.Wait()
		if err != nil || res.ExitCode != 0 || res.Text() != "starting\n" || !slices.Contains(res.Enforced, "memory") {
			t.Errorf("Wait = %+v (%q), %v; want exit 0, stderr kept, limits held by the unit", res, res.Text(), err)
		}
		p.Stdin.Close()
		p.Stdout.Close()
	})
	t.Run("a turn's runs are numbered units", func(t *testing.T) {
		for range 2 {
			run(t, sb, sandbox.Spec{Argv: []string{"true"}, Workspace: ws, Turn: "feedbeef"})
		}
		out, err := host.Exec(ctx, "journalctl", "--no-pager", "-o", "cat", "-u", "shelldon-run@feedbeef-2.service")
		if err != nil || !strings.Contains(string(out), "shelldon sandboxed command") {
			t.Errorf("journal of shelldon-run@feedbeef-2.service = %v\n%s\nwant systemd's lines about the second run", err, out)
		}
		if _, err := sb.Run(ctx, sandbox.Spec{Argv: []string{"true"}, Workspace: ws, Turn: "not a unit name"}); err == nil {
			t.Error("a turn that cannot name a unit ran")
		}
	})
	t.Run("a captured run's changes apply", func(t *testing.T) {
		res := run(t, sb, sandbox.Spec{View: sandbox.Captured, Argv: sh("echo two >> a.txt; echo new > b.txt"), Workspace: ws})
		if res.ExitCode != 0 || res.Changes == nil || len(res.Changes.Changes) != 2 {
			t.Fatalf("captured run = %+v", res)
		}
		if _, err := res.Changes.Apply(beneath.Jail{Root: ws}); err != nil {
			t.Fatal(err)
		}
		res.Changes.Discard()
		if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "one\ntwo\n" {
			t.Errorf("a.txt after apply = %q", b)
		}
	})
	t.Run("the unit's runtime limit ends a run", func(t *testing.T) {
		res := run(t, sb, sandbox.Spec{Argv: sh("echo started; sleep 3131 & sleep 3132"), Workspace: ws, Limits: sandbox.Limits{Wall: time.Second}})
		if !res.TimedOut || res.ExitCode != -1 || !strings.Contains(res.Text(), "started") {
			t.Errorf("run = timed out %v, exit %d, output %q; want a timeout after the output", res.TimedOut, res.ExitCode, res.Text())
		}
		if left := alive("sleep 313"); len(left) > 0 {
			t.Errorf("after the unit's timeout, still running: %q", left)
		}
	})
	t.Run("cancelling stops the unit", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		started := time.Now()
		_, err := sb.Run(ctx, sandbox.Spec{Argv: sh("sleep 3141"), Workspace: ws})
		if err == nil || time.Since(started) > 20*time.Second {
			t.Errorf("cancelled run = %v after %v, want the context's error promptly", err, time.Since(started))
		}
		if left := alive("sleep 3141"); len(left) > 0 {
			t.Errorf("after cancellation, still running: %q", left)
		}
	})
	entries, _ := os.ReadDir(filepath.Join(host.Dir, "runs"))
	if len(entries) != 0 {
		t.Errorf("run directories left behind: %v", entries)
	}
}
