package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"shelldon/daemon"
	"shelldon/daemon/worker"
	"shelldon/testhost"
)

// TestReleaseBuildHasNoTestHooks builds shelldon as `make release` does
// and finds none of the test hooks' messages in it — not a wedged loop,
// not a worker that eats memory — while a build with the
// shelldon_testhooks tag has both (so the check can fail).
func TestReleaseBuildHasNoTestHooks(t *testing.T) {
	goTool := testhost.Tool(t, "go", "golang")
	hooks := map[string]string{"the wedge": daemon.WedgeMessage, "the hog": worker.HogMessage}
	for _, tc := range []struct {
		name  string
		tags  []string
		wants bool
	}{
		{"release", nil, false},
		{"with the test hooks", []string{"-tags", "shelldon_testhooks"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "shelldon")
			args := append([]string{"build", "-trimpath", "-ldflags", "-s -w"}, tc.tags...)
			build := exec.Command(goTool, append(args, "-o", out, "shelldon/cmd/shelldon")...)
			build.Env = append(os.Environ(), "CGO_ENABLED=0")
			if msg, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, msg)
			}
			binary, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			for what, message := range hooks {
				if got := bytes.Contains(binary, []byte(message)); got != tc.wants {
					t.Errorf("the %s build holds %s's message %q: %v, want %v", tc.name, what, message, got, tc.wants)
				}
			}
		})
	}
}
