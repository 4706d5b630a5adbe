package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"shelldon/sandbox"
	"shelldon/sandbox/image/imagetest"
)

// TestProcHidesTheHost: inside the container, /proc says nothing of the
// host's paths or of how its kernel was booted.
func TestProcHidesTheHost(t *testing.T) {
	img := imagetest.Image(t)
	runs := filepath.Join(t.TempDir(), "runs-of-the-host")
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: runs})
	if err != nil {
		t.Fatal(err)
	}
	cmdline, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	code := filepath.Join(t.TempDir(), "tool-code-of-the-host")
	if err := os.Mkdir(code, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, o := range owners {
		ws := workspace(t, o.uid, map[string]string{"a.txt": "a"})
		for _, view := range []sandbox.View{sandbox.ReadOnly, sandbox.Captured, sandbox.Scratch} {
			t.Run(o.name+"/"+view.String(), func(t *testing.T) {
				res := run(t, sb, sandbox.Spec{View: view, Workspace: ws, Binds: []sandbox.Bind{{Source: code, Target: "/run/shelldon/tool"}},
					Argv: sh("echo cmdline:; cat /proc/cmdline; echo; echo mountinfo:; cat /proc/self/mountinfo /proc/1/mountinfo")})
				discard(res.Changes)
				out := res.Text()
				if !strings.Contains(out, " /workspace ") {
					t.Fatalf("no mount of /workspace in %s", out)
				}
				if c := strings.TrimSpace(string(cmdline)); c != "" && strings.Contains(out, c) {
					t.Errorf("the container reads the kernel's command line: %s", out)
				}
				for _, host := range []string{ws, runs, code, filepath.Dir(ws)} {
					if strings.Contains(out, host) {
						t.Errorf("mountinfo shows the host path %s: %s", host, out)
					}
				}
			})
		}
	}
}
