package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"shelldon/demomodel"
)

// helpTopics are every command and verb an owner can ask about, as
// `shelldon help` lists them.
var helpTopics = []string{
	"up", "daemon", "broker", "chat", "turns", "doctor",
	"policy", "policy check", "image", "image build", "image status",
	"sandbox", "sandbox run", "panel", "tools", "tools restore", "version",
}

// cliCase is one command line and what its user gets back: the exit
// status, and words on stdout and on stderr (run's error, for a test
// that calls run).
type cliCase struct {
	args   []string
	status int
	stdout []string
	stderr []string
}

// commandLineCases are the command lines every command must answer
// without a running pet: help, usage errors and the results that are a
// "no". A case that needs a state directory gets a fresh one.
func commandLineCases(t *testing.T) []cliCase {
	missing := filepath.Join(t.TempDir(), "nonexist.toml")
	var cases []cliCase
	for _, topic := range helpTopics {
		words := strings.Fields(topic)
		want := []string{"usage: shelldon " + topic, "example:\n  "}
		if topic != "image" {
			want = append(want, "--config FILE", "--state-dir DIR")
		}
		for _, args := range [][]string{append(words, "--help"), append(words, "-h"), append([]string{"help"}, words...)} {
			cases = append(cases, cliCase{args: args, status: 0, stdout: want})
		}
	}
	top := []string{"usage: shelldon <command>", "shelldon help <command>", "demo model"}
	for _, topic := range helpTopics {
		if !strings.Contains(topic, " ") {
			top = append(top, "\n  "+topic+" ")
		}
	}
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"help", "help"}, {"help", "--help"}} {
		cases = append(cases, cliCase{args: args, status: 0, stdout: top})
	}
	// No command at all is a command line shelldon cannot take, as an
	// unknown one is: the list of commands goes to stderr.
	cases = append(cases, cliCase{args: nil, status: 2, stderr: top})

	usage := func(args []string, want ...string) cliCase {
		return cliCase{args: args, status: 2, stderr: append(want, "shelldon help")}
	}
	cases = append(cases,
		usage([]string{"feed"}, `shelldon: unknown command "feed"`),
		usage([]string{"--bogus"}, `unknown command "--bogus"`),
		usage([]string{"help", "feed"}, `"feed"`),
		usage([]string{"policy"}, "check"),
		usage([]string{"policy", "judge", "ls"}, `"judge"`),
		usage([]string{"policy", "check"}, "one argument"),
		usage([]string{"policy", "check", "ls", "extra"}, "one argument"),
		usage([]string{"policy", "check", "rm -rf x", "--json"}, "flags go before the command", "shelldon policy check --json 'rm -rf x'"),
		usage([]string{"image"}, "build", "status"),
		usage([]string{"image", "frob"}, `"frob"`),
		usage([]string{"image", "status", "extra"}, `unexpected argument "extra"`),
		usage([]string{"sandbox"}, "run"),
		usage([]string{"sandbox", "run", "true"}, "--"),
		usage([]string{"sandbox", "run", "--view", "wild", "--", "true"}, `"wild"`, "read-only"),
		usage([]string{"tools", "restore"}, "NAME"),
		usage([]string{"tools", "extra"}, `unexpected argument "extra"`),
		usage([]string{"turns", "-n", "0"}, "-n 0", "1 or more"),
		usage([]string{"turns", "-n", "-5"}, "-n -5", "1 or more"),
		usage([]string{"turns", "-n", "many"}, "many"),
		usage([]string{"doctor", "extra"}, `unexpected argument "extra"`),
		// The worker and the evaluator are shelldon-worker's now.
		usage([]string{"worker"}, `unknown command "worker"`),
		usage([]string{"eval"}, `unknown command "eval"`),
	)
	for _, args := range [][]string{
		{"up"}, {"daemon"}, {"broker"}, {"chat"}, {"turns"}, {"doctor"}, {"policy", "check"},
		{"image", "build"}, {"image", "status"}, {"sandbox", "run"}, {"panel"}, {"tools"}, {"tools", "restore", "x"},
		{"version"},
	} {
		cases = append(cases, usage(append(args, "--bogus"), "flag provided but not defined: -bogus", "shelldon help "+strings.Join(args[:min(len(args), 2)], " ")))
	}
	// --config names a file that must be there, for every command that
	// takes it.
	for _, args := range [][]string{
		{"up"}, {"daemon"}, {"broker"}, {"chat"}, {"turns"}, {"policy", "check", "--config", missing, "ls"},
		{"image", "build"}, {"image", "status"}, {"sandbox", "run", "--config", missing, "--", "true"}, {"panel"},
		{"tools"}, {"tools", "restore", "x"}, {"version"},
	} {
		if !strings.Contains(strings.Join(args, " "), missing) {
			args = append(args, "--config", missing)
		}
		cases = append(cases, cliCase{args: args, status: 1, stderr: []string{missing, "no such file"}})
	}
	cases = append(cases, cliCase{args: []string{"doctor", "--config", missing}, status: 1, stdout: []string{"FAIL configuration", missing}})

	// Results that are a "no" exit 1.
	cases = append(cases,
		cliCase{args: []string{"policy", "check", "ls -la | head"}, status: 0, stdout: []string{"safe: runs without asking"}},
		cliCase{args: []string{"policy", "check", "rm -rf build"}, status: 1, stdout: []string{"asks: look closely"}},
		cliCase{args: []string{"policy", "check", "--json", "rm -rf build"}, status: 1, stdout: []string{`"safe": false`}},
		cliCase{args: []string{"image", "status", "--cache", t.TempDir()}, status: 1, stdout: []string{"current: none"}},
		cliCase{args: []string{"version"}, status: 0, stdout: []string{"shelldon "}},
	)
	return cases
}

// runBinary runs this test binary as shelldon, as a shell would, and
// returns what it printed and its exit status.
func runBinary(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		status = ee.ExitCode()
	case err != nil:
		t.Fatalf("run shelldon %q: %v", args, err)
	}
	return out.String(), errOut.String(), status
}

// check compares what a run of the case printed and how it exited with
// what the case wants; how says which run it was.
func (tc cliCase) check(t *testing.T, how string, stdout, stderr string, status int) {
	t.Helper()
	if status != tc.status {
		t.Errorf("%s %q exited %d, want %d\nstdout: %s\nstderr: %s", how, tc.args, status, tc.status, stdout, stderr)
	}
	for _, want := range tc.stdout {
		if !strings.Contains(stdout, want) {
			t.Errorf("%s %q printed on stdout\n%s\nwant %q in it", how, tc.args, stdout, want)
		}
	}
	for _, want := range tc.stderr {
		if !strings.Contains(stderr, want) {
			t.Errorf("%s %q printed on stderr\n%s\nwant %q in it", how, tc.args, stderr, want)
		}
	}
	if len(tc.stderr) == 0 && stderr != "" {
		t.Errorf("%s %q printed on stderr %q, want nothing", how, tc.args, stderr)
	}
}

// TestCommandLineOfTheBinary runs every case as its own process: the
// exit status is what a shell and a script see, and a failure is
// reported once.
func TestCommandLineOfTheBinary(t *testing.T) {
	for _, tc := range commandLineCases(t) {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			stdout, stderr, status := runBinary(t, tc.args...)
			tc.check(t, "shelldon", stdout, stderr, status)
		})
	}
}

// TestCommandLine runs every case through run, as main does: the error
// run returns is what main prints on stderr, and exitCode its status.
func TestCommandLine(t *testing.T) {
	for _, tc := range commandLineCases(t) {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			stdout, stderr, err := runCLI(t, tc.args...)
			if err != nil && !errors.As(err, new(reported)) {
				stderr += "shelldon: " + err.Error() + "\n"
			}
			tc.check(t, "run", stdout, stderr, exitCode(err))
		})
	}
}

// TestToolsRestoreOfAnUnknownToolFails: core refuses to restore a tool it
// never put away, and the command says so and fails, for a script too.
func TestToolsRestoreOfAnUnknownToolFails(t *testing.T) {
	p := newPet(t, demomodel.New())
	want := "No quarantined tool is called nosuch"
	// The name before the flags, as the synopsis has it, or after them.
	for _, args := range [][]string{
		{"tools", "restore", "nosuch", "--state-dir", p.cfg.StateDir},
		{"tools", "restore", "--state-dir", p.cfg.StateDir, "nosuch"},
	} {
		if out, _, err := runCLI(t, args...); exitCode(err) != exitNo || !strings.Contains(fmt.Sprint(err), want) || out != "" {
			t.Errorf("shelldon %q = %q, %v; want the error %q and exit status 1", args, out, err, want)
		}
		if _, stderr, status := runBinary(t, args...); status != exitNo || !strings.Contains(stderr, want) {
			t.Errorf("shelldon %q exited %d, printed %q; want status 1 and %q", args, status, stderr, want)
		}
	}
}
