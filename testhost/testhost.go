package testhost

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// RequireAllEnv is the variable that turns missing-capability skips into
// failures.
const RequireAllEnv = "SHELLDON_REQUIRE_ALL"

// Missing skips t, or fails it when every level is required, saying what
// is missing and how to get it.
func Missing(t testing.TB, what, fix string) {
	t.Helper()
	if os.Getenv(RequireAllEnv) == "1" {
		t.Fatalf("needs %s (%s); %s=1 forbids skipping", what, fix, RequireAllEnv)
	}
	t.Skipf("needs %s (%s)", what, fix)
}

// Root makes sure the test runs as root.
func Root(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "root", "run `make test` as root")
	}
}

// Tool makes sure a program is on $PATH and returns its path.
func Tool(t testing.TB, name, debianPackage string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, name, "apt-get install "+debianPackage+", or run `make test` as root to install it")
	}
	return p
}

// ShortDir makes a fresh directory with a short path, removed at cleanup,
// for a Unix socket: sun_path holds only 108 bytes, which t.TempDir's
// long names can exceed.
func ShortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// SelfForOthers copies the running test binary where any user can run it
// and returns the copy's path, removed at cleanup: a test that re-executes
// itself as another user needs it, since the binary go test built lives in
// a directory only its builder may enter.
func SelfForOthers(t testing.TB) string {
	t.Helper()
	raw, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatalf("read the test binary: %v", err)
	}
	dir, err := os.MkdirTemp("", "sdbin")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, filepath.Base(os.Args[0]))
	if err := os.WriteFile(out, raw, 0o755); err != nil {
		t.Fatalf("copy the test binary: %v", err)
	}
	return out
}

// Git runs git in dir as a repository's owner on this host would, with a
// fixed identity and no system or user configuration, and returns its
// output, trimmed. It fails t when git fails, and skips it where git is
// missing.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	Tool(t, "git", "git")
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=owner", "GIT_AUTHOR_EMAIL=owner@example.invalid",
		"GIT_COMMITTER_NAME=owner", "GIT_COMMITTER_EMAIL=owner@example.invalid",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %q in %s: %v\n%s", args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TimeToBuild skips t, or fails it where every level is required, when
// building what takes up to takes and t's binary has less time than that
// left before its timeout: a plain `go test ./...` (10 minutes) would
// kill the build halfway, where `make test` gives each level that
// builds the time it needs. Call it only when what is not built yet.
func TimeToBuild(t testing.TB, what string, takes time.Duration) {
	t.Helper()
	timed, ok := t.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return
	}
	deadline, ok := timed.Deadline()
	if left := time.Until(deadline); ok && left < takes {
		Missing(t, fmt.Sprintf("time to build %s (up to %s; this go test's timeout leaves %s)", what, takes, left.Round(time.Second)),
			"run `make test`, whose levels leave the time, or build it first (`make image` for the sandbox image)")
	}
}
