package sandbox_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shelldon/sandbox"
	"shelldon/sandbox/image/imagetest"
	"shelldon/sandbox/sandboxtest"
)

// owners are the two ways a workspace is owned (see sandboxtest.Owners).
var owners = sandboxtest.Owners

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
	return sandboxtest.Workspace(t, t.TempDir(), uid, files)
}

func run(t *testing.T, sb *sandbox.Sandbox, spec sandbox.Spec) sandbox.Result {
	t.Helper()
	res, err := sb.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run(%q) = %v", spec.Argv, err)
	}
	return res
}

var sh = sandboxtest.Sh

var readTree = sandboxtest.ReadTree

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
