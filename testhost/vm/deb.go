package vm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"shelldon/testhost"
)

// BuildDeb builds shelldon's .deb for arch (amd64, arm64 or armhf) with
// `make deb-<arch>` in the repository's root, as a release does, into a
// directory removed with the test, and returns its path. An amd64 one is
// what [Options.Debs] boots a guest with.
func BuildDeb(t testing.TB, arch string) string {
	t.Helper()
	return buildDeb(t, arch)
}

// BuildDebWithTestHooks is BuildDeb of a binary built with the
// shelldon_testhooks tag, whose core and workers act on the test hooks'
// messages (a wedged loop, a worker that grows past its memory limit):
// for the end-to-end tests of faults, never for release.
func BuildDebWithTestHooks(t testing.TB, arch string) string {
	t.Helper()
	return buildDeb(t, arch, "GOFLAGS=-tags=shelldon_testhooks")
}

func buildDeb(t testing.TB, arch string, env ...string) string {
	t.Helper()
	make := testhost.Tool(t, "make", "make")
	root, err := repositoryRoot()
	if err != nil {
		t.Fatal(err)
	}
	dist := t.TempDir()
	build := exec.Command(make, "deb-"+arch, "DIST="+dist)
	build.Dir = root
	build.Env = append(os.Environ(), env...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make deb-%s: %v\n%s", arch, err, out)
	}
	debs, err := filepath.Glob(filepath.Join(dist, "shelldon_*_"+arch+".deb"))
	if err != nil || len(debs) != 1 {
		t.Fatalf("make deb-%s made %v, want one .deb", arch, debs)
	}
	return debs[0]
}

// repositoryRoot is the nearest directory at or above the working
// directory (a test's package) that holds go.mod.
func repositoryRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the repository: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("find the repository: no go.mod above the working directory")
		}
		dir = parent
	}
}
