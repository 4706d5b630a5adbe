package testhost

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMissingFailsUnderRequireAll runs a test that lacks a capability in a
// child process, with and without SHELLDON_REQUIRE_ALL, and reads the verdict.
func TestMissingFailsUnderRequireAll(t *testing.T) {
	if os.Getenv("SHELLDON_TEST_TESTHOST_CHILD") == "1" {
		return
	}
	for _, tc := range []struct {
		requireAll string
		want       string
	}{
		{"", "--- SKIP: TestLacksSomething"},
		{"1", "--- FAIL: TestLacksSomething"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLacksSomething$", "-test.v")
		cmd.Env = append(os.Environ(), "SHELLDON_TEST_TESTHOST_CHILD=1", RequireAllEnv+"="+tc.requireAll)
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "needs no-such-unicorn-tool (apt-get install unicorn") {
			t.Errorf("%s=%q: output %q, want %q and the reason", RequireAllEnv, tc.requireAll, out, tc.want)
		}
	}
}

func TestLacksSomething(t *testing.T) {
	if os.Getenv("SHELLDON_TEST_TESTHOST_CHILD") != "1" {
		t.Skip("only runs as the child of TestMissingFailsUnderRequireAll")
	}
	Tool(t, "no-such-unicorn-tool", "unicorn")
}

// TestABuildLongerThanTheTimeoutSkips: a plain `go test` (its timeout 10
// minutes) skips a test that would build for 30, naming make test,
// rather than be killed halfway through the build; with the time, it
// builds.
func TestABuildLongerThanTheTimeoutSkips(t *testing.T) {
	if os.Getenv("SHELLDON_TEST_TESTHOST_CHILD") == "1" {
		return
	}
	for _, tc := range []struct {
		timeout string
		want    []string
	}{
		{"10m", []string{"--- SKIP: TestBuildsForHalfAnHour", "time to build the unicorn root (up to 30m0s", "make test"}},
		{"2h", []string{"--- PASS: TestBuildsForHalfAnHour"}},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBuildsForHalfAnHour$", "-test.v", "-test.timeout="+tc.timeout)
		cmd.Env = append(os.Environ(), "SHELLDON_TEST_TESTHOST_CHILD=1", RequireAllEnv+"=")
		out, _ := cmd.CombinedOutput()
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("-test.timeout=%s: output %q, want %q in it", tc.timeout, out, w)
			}
		}
	}
}

func TestBuildsForHalfAnHour(t *testing.T) {
	if os.Getenv("SHELLDON_TEST_TESTHOST_CHILD") != "1" {
		t.Skip("only runs as the child of TestABuildLongerThanTheTimeoutSkips")
	}
	TimeToBuild(t, "the unicorn root", 30*time.Minute)
}

// TestOwnProcessFindsOnlyThisTestsChildren: a process of the same command
// line that another test binary started is not this test's.
func TestOwnProcessFindsOnlyThisTestsChildren(t *testing.T) {
	sleep := Tool(t, "sleep", "coreutils")
	mine := exec.Command(sleep, "27.1828")
	if err := mine.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { mine.Process.Kill(); mine.Wait() }()
	if got := OwnProcess(t, sleep); got != mine.Process.Pid {
		t.Errorf("OwnProcess(%q) = %d, want this test's child %d", sleep, got, mine.Process.Pid)
	}
	if descends(mine.Process.Pid, mine.Process.Pid) || descends(os.Getpid(), mine.Process.Pid) {
		t.Error("a process counts as its own or its parent's descendant")
	}
	if !descends(mine.Process.Pid, os.Getppid()) {
		t.Error("this test's child does not descend from the test's parent")
	}
}

func TestProcStat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stat")
	if err := os.WriteFile(path, []byte("42 (a) b (c) S 1 42 42 0 -1 4194560 10 0 0 0 7 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	name, fields, err := ProcStat(path)
	if err != nil || name != "a) b (c" || len(fields) != 13 || fields[0] != "S" || fields[11] != "7" || fields[12] != "3" {
		t.Errorf("ProcStat(%q) = %q, %q, %v; want the name with its parentheses, then S … 7 3", path, name, fields, err)
	}
	if _, _, err := ProcStat(filepath.Join(t.TempDir(), "gone")); !os.IsNotExist(err) {
		t.Errorf("ProcStat(a missing file) = %v, want an error os.IsNotExist says yes to", err)
	}
	self, fields, err := ProcStat("/proc/self/stat")
	if err != nil || self == "" || len(fields) < 13 {
		t.Errorf("ProcStat(/proc/self/stat) = %q, %d fields, %v", self, len(fields), err)
	}
}
