package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"shelldon/daemon/doctor"
	"shelldon/testhost"
)

// builtWorker is shelldon-worker for this test process, built once.
var builtWorker struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// workerBinary builds shelldon-worker beside this test binary — where core
// looks for it, as it does beside an installed shelldon — with this test
// binary's build tags (the test hooks, when the tests have them), once per
// test process, and returns its path. A test that starts core in a child
// process with no turn.worker_command calls it first.
func workerBinary(t testing.TB) string {
	t.Helper()
	goTool := testhost.Tool(t, "go", "golang")
	builtWorker.once.Do(func() {
		self, err := os.Executable()
		if err != nil {
			builtWorker.err = err
			return
		}
		builtWorker.path = filepath.Join(filepath.Dir(self), workerProgram)
		args := []string{"build", "-o", builtWorker.path}
		if tags := buildSetting("-tags"); tags != "" {
			args = append(args, "-tags", tags)
		}
		build := exec.Command(goTool, append(args, "shelldon/cmd/shelldon-worker")...)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		builtWorker.out, builtWorker.err = build.CombinedOutput()
	})
	if builtWorker.err != nil {
		t.Fatalf("build %s: %v\n%s", workerProgram, builtWorker.err, builtWorker.out)
	}
	return builtWorker.path
}

// buildSetting is one of the settings this test binary was built with.
func buildSetting(key string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range info.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// TestCoreFindsTheWorkerBesideItself: with no turn.worker_command, core
// runs shelldon-worker from its own directory, and where there is none it
// says so at once, naming the file and how to put it there.
func TestCoreFindsTheWorkerBesideItself(t *testing.T) {
	worker := workerBinary(t)
	cfg := testConfig(t, "http://127.0.0.1:1")
	cfg.Turn.WorkerCommand = nil
	argv, err := workerArgv(cfg)
	if err != nil || len(argv) != 1 || argv[0] != worker {
		t.Errorf("workerArgv = %q, %v; want [%q]", argv, err, worker)
	}
	cfg.Turn.WorkerCommand = []string{"/opt/worker", "--flag"}
	if argv, err := workerArgv(cfg); err != nil || len(argv) != 2 || argv[0] != "/opt/worker" {
		t.Errorf("workerArgv with turn.worker_command = %q, %v; want the configured one", argv, err)
	}

	// An installed shelldon with no worker beside it, or one that cannot run.
	dir := t.TempDir()
	self := filepath.Join(dir, "shelldon")
	want := "no worker program: stat " + filepath.Join(dir, workerProgram)
	if _, err := workerBeside(self); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "make build") {
		t.Errorf("workerBeside with no worker = %v, want %q and how to fix it", err, want)
	}
	if err := os.WriteFile(filepath.Join(dir, workerProgram), []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := workerBeside(self); err == nil || !strings.Contains(err.Error(), "is not an executable file") {
		t.Errorf("workerBeside with a worker that is not executable = %v, want it refused", err)
	}
}

// TestDoctorNamesTheWorkerProgram: `shelldon doctor` has a line on the
// worker program, OK with its path, or FAIL saying how to install it.
func TestDoctorNamesTheWorkerProgram(t *testing.T) {
	worker := workerBinary(t)
	if c := workerCheck(workerBeside(os.Args[0])); c.Status != doctor.OK || c.Detail != worker {
		t.Errorf("workerCheck with the worker in place = %+v, want ok and %s", c, worker)
	}
	c := workerCheck(workerBeside(filepath.Join(t.TempDir(), "shelldon")))
	if c.Status != doctor.Fail || !strings.Contains(c.Detail, "no worker program") || !strings.Contains(c.Fix, "make install") {
		t.Errorf("workerCheck with no worker = %+v, want FAIL naming the file and the fix", c)
	}
	stdout, _, _ := runBinary(t, "doctor", "--state-dir", testhost.ShortDir(t))
	if !strings.Contains(stdout, "worker program") || !strings.Contains(stdout, worker) {
		t.Errorf("shelldon doctor printed no line on the worker program %s:\n%s", worker, stdout)
	}
}
