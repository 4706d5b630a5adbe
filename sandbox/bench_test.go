package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"shelldon/sandbox"
	"shelldon/sandbox/image/imagetest"
	"shelldon/testhost"
)

// The sandbox's cost is the ratio of each Sandbox benchmark to its Host
// twin, which runs the same command directly. BENCHMARKS.md has figures.

const oneTest = "def test_one():\n    assert 1 + 1 == 2\n"

func benchSandbox(b *testing.B, view sandbox.View, argv ...string) {
	ws := b.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "test_one.py"), []byte(oneTest), 0o644); err != nil {
		b.Fatal(err)
	}
	benchSandboxIn(b, ws, view, argv...)
}

func benchSandboxIn(b *testing.B, ws string, view sandbox.View, argv ...string) {
	img := imagetest.Image(b)
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		res, err := sb.Run(context.Background(), sandbox.Spec{Argv: argv, Workspace: ws, View: view})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("Run(%q) = %d %v: %s", argv, res.ExitCode, err, res.Text())
		}
	}
}

func benchHost(b *testing.B, pkg string, argv ...string) {
	testhost.Tool(b, argv[0], pkg)
	ws := b.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "test_one.py"), []byte(oneTest), 0o644); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PYTEST_ADDOPTS=-p no:cacheprovider")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%q: %v: %s", argv, err, out)
		}
	}
}

func BenchmarkSandboxTrue(b *testing.B) { benchSandbox(b, sandbox.ReadOnly, "true") }
func BenchmarkHostTrue(b *testing.B)    { benchHost(b, "coreutils", "true") }

// BenchmarkSandboxTrue1000Files runs over a workspace of a project's
// size: 1000 files in 50 directories, five of them named like
// credentials, which every run has to find.
func BenchmarkSandboxTrue1000Files(b *testing.B) {
	ws := b.TempDir()
	for d := range 50 {
		dir := filepath.Join(ws, fmt.Sprintf("pkg%02d", d))
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 20 {
			name := fmt.Sprintf("mod%02d.py", f)
			if d%10 == 0 && f == 0 {
				name = ".env"
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte("x = 1\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	benchSandboxIn(b, ws, sandbox.ReadOnly, "true")
}
func BenchmarkSandboxTrueCaptured(b *testing.B) { benchSandbox(b, sandbox.Captured, "true") }
func BenchmarkSandboxPytest(b *testing.B) {
	benchSandbox(b, sandbox.Scratch, "python3", "-m", "pytest", "-q")
}
func BenchmarkHostPytest(b *testing.B) {
	// Debian's own python3, the one the image has too, not whatever
	// PATH finds first.
	if exec.Command("/usr/bin/python3", "-c", "import pytest").Run() != nil {
		testhost.Missing(b, "pytest for /usr/bin/python3", "apt-get install python3-pytest, or run `make test` as root to install it")
	}
	benchHost(b, "python3-pytest", "/usr/bin/python3", "-m", "pytest", "-q")
}
