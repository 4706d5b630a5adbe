package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"shelldon/daemon"
	"shelldon/testhost"
	"shelldon/worker"
)

// TestReleaseBuildHasNoTestHooks builds shelldon and shelldon-worker as
// `make release` does and finds none of the test hooks' messages in them —
// not core's wedged loop, not the worker that eats memory — while builds
// with the shelldon_testhooks tag have each its own (so the check can fail).
func TestReleaseBuildHasNoTestHooks(t *testing.T) {
	goTool := testhost.Tool(t, "go", "golang")
	for _, tc := range []struct {
		name string
		tags []string
	}{
		{"release", nil},
		{"with the test hooks", []string{"-tags", "shelldon_testhooks"}},
	} {
		for _, bin := range []struct{ command, hook, message string }{
			{"shelldon", "the wedge", daemon.WedgeMessage},
			{"shelldon-worker", "the hog", worker.HogMessage},
		} {
			t.Run(tc.name+"/"+bin.command, func(t *testing.T) {
				out := filepath.Join(t.TempDir(), bin.command)
				args := append([]string{"build", "-trimpath", "-ldflags", "-s -w"}, tc.tags...)
				build := exec.Command(goTool, append(args, "-o", out, "shelldon/cmd/"+bin.command)...)
				build.Env = append(os.Environ(), "CGO_ENABLED=0")
				if msg, err := build.CombinedOutput(); err != nil {
					t.Fatalf("go build: %v\n%s", err, msg)
				}
				binary, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := bytes.Contains(binary, []byte(bin.message)), tc.tags != nil; got != want {
					t.Errorf("the %s build of %s holds %s's message %q: %v, want %v", tc.name, bin.command, bin.hook, bin.message, got, want)
				}
			})
		}
	}
}
