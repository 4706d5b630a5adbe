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
		stdout    string
		stderr    []string
		workspace []string
	}{
		{"read-only", []string{"--", "cat", "a.txt"}, "hello\n", []string{"exit 0", "limits held: wall, output"}, []string{"a.txt"}},
		{"captured without apply", []string{"--view", "captured", "--", "sh", "-c", "echo new > b.txt"}, "", []string{"created  b.txt", "not applied"}, []string{"a.txt"}},
		{"captured and applied", []string{"--view", "captured", "--apply", "--", "sh", "-c", "echo new > b.txt; echo k > id_rsa"}, "", []string{"refused  id_rsa", "applied 1, refused 1"}, []string{"a.txt", "b.txt"}},
		{"failing", []string{"--", "sh", "-c", "exit 4"}, "", []string{"exit 4"}, []string{"a.txt", "b.txt"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut strings.Builder
			args := append([]string{"sandbox", "run", "--state-dir", state}, tc.args...)
			if err := run(context.Background(), args, nil, &out, &errOut); err != nil {
				t.Fatalf("shelldon %q = %v\n%s", args, err, errOut.String())
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
	for _, bad := range [][]string{{"sandbox"}, {"sandbox", "run", "true"}, {"sandbox", "run", "--view", "wild", "--", "true"}} {
		if err := run(context.Background(), append(bad, "--state-dir", state), nil, &strings.Builder{}, &strings.Builder{}); err == nil {
			t.Errorf("shelldon %q succeeded, want a usage error", bad)
		}
	}
}
