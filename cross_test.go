package shelldon

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"shelldon/testhost"
)

// The board runs linux/arm64 on a 64-bit OS and linux/arm (GOARM=7) on a
// 32-bit one, where an int is 32 bits and a 64-bit atomic must be aligned
// by hand. The packages' own tests run on those architectures under
// qemu-user (`make test-cross`), so that such a bug fails here and not on
// the owner's board.

// crossPackages are the packages whose tests run under qemu-user, each
// with the tests left out there (a regular expression for -test.skip, ""
// for none) and why. Each needs nothing qemu-user cannot give: no nspawn,
// systemd or image of its architecture, no second run of its own binary
// (root, where a test needs it, as in the other levels). What is left out
// runs natively in the other levels.
var crossPackages = map[string]struct{ skip, why string }{
	"shelldon/broker":                           {},
	"shelldon/bus":                              {},
	"shelldon/clock":                            {},
	"shelldon/tailbuf":                          {},
	"shelldon/config":                           {},
	"shelldon/setup":                            {},
	"shelldon/contracts":                        {},
	"shelldon/daemon/approval":                  {},
	"shelldon/transports/chat":                  {},
	"shelldon/daemon/commands":                  {},
	"shelldon/daemon/driver":                    {},
	"shelldon/daemon/handoff":                   {},
	"shelldon/daemon/hub":                       {},
	"shelldon/daemon/intake":                    {},
	"shelldon/daemon/media":                     {},
	"shelldon/daemon/mood":                      {},
	"shelldon/daemon/ops":                       {},
	"shelldon/daemon/owner":                     {},
	"shelldon/daemon/progress":                  {},
	"shelldon/daemon/procmem":                   {},
	"shelldon/daemon/schedule":                  {},
	"shelldon/daemon/pairing":                   {},
	"shelldon/worker/skills":                    {},
	"shelldon/daemon/sdnotify":                  {},
	"shelldon/daemon/statedir":                  {},
	"shelldon/transports/telegram/telegramtest": {},
	"shelldon/daemon/tokencap":                  {},
	"shelldon/daemon/tokens":                    {},
	"shelldon/daemon/turns":                     {},
	"shelldon/demomodel":                        {},
	"shelldon/cmd/shelldon-demo-mcp":            {},
	"shelldon/manual":                           {},
	"shelldon/panel":                            {},
	"shelldon/panel/epd":                        {},
	"shelldon/panel/moment":                     {},
	"shelldon/panel/render":                     {},
	"shelldon/daemon": {`^TestGatesRunOneAtATime$|^TestAProposalInItsGateOutlivesAStop$|^TestOnlyTrustedUsersJoin$`,
		"the gates need the sandbox's image (" + foreignImage + "), and the trust test " + selfExec + " as other users"},
	"shelldon/daemon/launch": {`^TestLaunchers$/^child$/^AppliesLimits$|^TestLaunchers$/^systemd$|^TestSystemdAgainstRealSystemd$|^TestStopLeftovers$`,
		"qemu-user ignores a guest's RLIMIT_DATA, which would bound qemu itself, and a real systemd needs a test host's image (" + foreignImage + ")"},
	"shelldon/sandbox/cgroup": {`^TestV2StartAndKillOnTheV2Mount$`,
		"qemu-user does not implement clone3, which starting a process inside a control group of cgroup v2 takes"},
	"shelldon/beneath":             {`/^openat2$`, "qemu-user does not implement openat2; each test's walk way runs"},
	"shelldon/daemon/fetch":        {`^TestGetIgnoresProxyFromEnvironment$`, selfExec},
	"shelldon/atomicfile":          {`^TestWriteFileUnwritableDirectory$/^read-only_directory$`, selfExec + " as another user"},
	"shelldon/daemon/journal":      {`^TestWire$`, selfExec},
	"shelldon/transports/telegram": {`^TestReadingUpdatesKeepsLittleOnTheHeap$`, selfExec + " for a heap of its own"},
	"shelldon/tools":               {`^TestPythonEval|^TestEvaluator`, selfExec + " as the python_eval evaluator"},
	"shelldon/daemon/mcp": {`^TestTheOwnersTools|^TestAQuietServer|^TestADeadServer|^TestARecycledServer|^TestAHungServer|^TestAServer|^TestAFloodingServer|^TestAWritingServer`,
		"its servers run in the sandbox, whose image " + foreignImage},
	"shelldon/worker":           {`^TestServeEvaluatesInAChildProcess$`, selfExec + " as the python_eval evaluator"},
	"shelldon/daemon/toolstore": {`^TestAKeptToolIgnoresTheWorkspacesModules$`, "a kept tool runs in the sandbox, whose image " + foreignImage},
	"shelldon/daemon/state": {`^TestTheLockIsFreeWhenCloseReturns$`,
		startsAProgram + "; the lock it tests is the kernel's, which the other levels run natively (its four goroutines' forks once waited 10 min under qemu-aarch64-static)"},
	"shelldon/daemon/approval/approved": {`^TestExistingTestsStayAsTheyWere$|^TestAnApprovedCommandStartsTheSandboxOnce$`,
		startsAProgram + " (Python, reading the tests' syntax as the guard does)"},
	"shelldon/daemon/visible": {`^TestArgvBash$`, startsAProgram + " (bash, which parses the argv back)"},
	"shelldon/giveback": {`^TestUnmapProgramPagesLeavesOnlyWhatRunsAfter$`,
		"qemu-user reads the test binary's code pages itself as it translates them, so which stay resident is the emulator's; the kernel's dropping them runs natively (under qemu-arm with -count=3 it kept 1,876 of 2,572 kB)"},
	"shelldon/faces":  {`^TestDrawableRangesMatchFont$`, startsAProgram + " (fc-query, which reads the font's coverage)"},
	"shelldon/policy": {`^TestAwkProgramsTheReaderPassesWriteNothing$`, startsAProgram + " (awk, running the programs the reader passes)"},
}

// startsAProgram is why a test that starts another program does not run
// under qemu-user: Debian 12's qemu-user is 7.2, under which Go's os/exec
// is broken and its wait for a child through a pidfd can hang for good
// (golang/go#68976, #69259); a test binary of the armv7 level once ran
// out of its time in CI that way. What such a test checks is the other
// program's, not the architecture's, and the native levels run it.
const startsAProgram = "it starts another program, which qemu-user 7.2 can leave Go waiting for"

// selfExec is why a test that starts its own binary again cannot run
// under qemu-user: without binfmt_misc the kernel cannot execute a binary
// of another architecture, and qemu-user does not follow an exec.
const selfExec = "it runs the test binary again"

// foreignImage is why a test that needs a root file system (the sandbox's,
// a test host's) cannot have one under qemu-user: the image is built for
// the test binary's architecture, and mmdebstrap runs a foreign one only
// through binfmt_misc.
const foreignImage = "mmdebstrap builds it for the test's architecture, which runs here only through binfmt_misc"

// notCrossPackages are the packages whose tests do not run under
// qemu-user, and why.
var notCrossPackages = map[string]string{
	"shelldon":                          "its tests read the repository with this machine's go, and it holds this level",
	"shelldon/cmd/shelldon":             "the whole pet: core and the worker binary on this machine, and the sandbox",
	"shelldon/cmd/shelldon-demo-model":  "no tests",
	"shelldon/cmd/shelldon-worker":      "its tests run the test binary again; the worker's own code is package worker's, which this level runs",
	"shelldon/daemon/doctor":            "it boots a real systemd from a test host's image: " + foreignImage,
	"shelldon/daemon/selfcode":          "the gate runs pytest in the sandbox, whose image " + foreignImage,
	"shelldon/transports/chat/chattest": "no tests",
	"shelldon/transports/transporttest": "no tests",
	"shelldon/daemon/hub/hubtest":       "no tests",
	"shelldon/daemon/launch/launchtest": "no tests",
	"shelldon/daemon/mcp/mcptest":       "no tests",
	"shelldon/demomodel/phrases":        "no tests",
	"shelldon/images":                   "no tests",
	"shelldon/panel/displaytest":        "no tests",
	"shelldon/panel/epd/epdtest":        "no tests",
	"shelldon/panel/render/rendertest":  "no tests",
	"shelldon/sandbox":                  "systemd-nspawn over the sandbox's image: " + foreignImage,
	"shelldon/sandbox/image":            "its tests build the sandbox's image: " + foreignImage,
	"shelldon/sandbox/image/imagetest":  "no tests",
	"shelldon/sandbox/sandboxtest":      "no tests",
	"shelldon/testhost":                 "its test runs the test binary again",
	"shelldon/testhost/systemdhost":     "a real systemd booted from a test host's image: " + foreignImage,
	"shelldon/testhost/vm":              "qemu-system and a test VM's image: " + foreignImage,
	"shelldon/units":                    "a real systemd booted from a test host's image: " + foreignImage,
}

// qemuUser is the qemu-user program that runs binaries of each of the
// board's architectures here (amd64, the other released platform, runs
// natively in the other levels).
var qemuUser = map[string]string{"arm64": "qemu-aarch64-static", "arm": "qemu-arm-static"}

// TestPackagesOnTheBoardsArchitectures runs the tests of crossPackages
// for each of the board's architectures in turn under qemu-user: go test
// builds each package's test binary once and runs it with qemu as its
// -exec program, not through binfmt_misc, which a container may lack.
func TestPackagesOnTheBoardsArchitectures(t *testing.T) {
	for _, p := range releasedPlatforms {
		if qemuUser[p.goarch] == "" {
			continue
		}
		t.Run(p.goarch, func(t *testing.T) {
			qemu := testhost.Tool(t, qemuUser[p.goarch], "qemu-user-static")
			started := time.Now()
			var failed []string
			for _, run := range crossRuns() {
				args := append([]string{"test", "-exec", qemu, "-count=1", "-timeout", crossTimeout.String()}, run.packages...)
				if run.skip != "" {
					args = append(args, "-skip", run.skip)
				}
				cmd := exec.Command("go", args...)
				// Asynchronous preemption off: its signals can hang a Go
				// program under qemu-user, mostly on arm (golang/go#67355,
				// #70329), and what this level is for (32-bit ints, the
				// alignment of 64-bit atomics) does not depend on it.
				cmd.Env = append(os.Environ(), "GOOS="+p.goos, "GOARCH="+p.goarch, "GOARM="+p.goarm, "CGO_ENABLED=0", "GODEBUG=asyncpreemptoff=1")
				out, err := cmd.CombinedOutput()
				t.Logf("go %s\n%s", strings.Join(args, " "), out)
				if err != nil {
					failed = append(failed, crossFailures(out, run.packages)...)
				}
			}
			t.Logf("%s: %d packages in %v", p, len(crossPackages), time.Since(started).Round(time.Second))
			if len(failed) > 0 {
				t.Errorf("tests failed on %s under %s (output above):\n%s", p, qemuUser[p.goarch], strings.Join(failed, "\n"))
			}
		})
	}
}

// crossTimeout bounds each package's test binary under qemu-user. The
// slowest package takes about 30 s there; a binary still running after
// crossTimeout is stuck, and go test's timeout prints what it was running.
const crossTimeout = 5 * time.Minute

// crossFailures names what failed in the output of one go test of
// packages: each failed test and package, and for a binary that ran out of
// time the tests it was running, so that the last lines of a long log say
// which. Output with no such line (a build that failed) names the packages
// of the run.
func crossFailures(out []byte, packages []string) []string {
	var failures, running []string
	inRunning := false
	for _, line := range strings.Split(string(out), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "panic: test timed out"):
			inRunning, running = false, nil
			failures = append(failures, trimmed)
		case trimmed == "running tests:":
			inRunning = true
		case inRunning && strings.HasPrefix(line, "\t\t") && trimmed != "":
			running = append(running, trimmed)
		case strings.HasPrefix(trimmed, "--- FAIL: "):
			inRunning = false
			failures = append(failures, trimmed)
		case strings.HasPrefix(line, "FAIL\t"):
			inRunning = false
			failure := strings.Join(strings.Fields(line), " ")
			if len(running) > 0 {
				failure += " (it was running " + strings.Join(running, ", ") + ")"
				running = nil
			}
			failures = append(failures, failure)
		default:
			inRunning = false
		}
	}
	if len(failures) == 0 {
		return []string{"go test " + strings.Join(packages, " ") + " failed with no test named (a build error?)"}
	}
	return failures
}

// crossRun is one go test of packages that leave out the same tests.
type crossRun struct {
	packages []string
	skip     string
}

// crossRuns groups crossPackages by what they leave out: one go test for
// all that leave nothing out, one for each other, so that a -skip reaches
// only the package it was written for.
func crossRuns() []crossRun {
	var whole crossRun
	var runs []crossRun
	for pkg, c := range crossPackages {
		if c.skip == "" {
			whole.packages = append(whole.packages, pkg)
		} else {
			runs = append(runs, crossRun{[]string{pkg}, c.skip})
		}
	}
	slices.Sort(whole.packages)
	slices.SortFunc(runs, func(a, b crossRun) int { return strings.Compare(a.packages[0], b.packages[0]) })
	return append([]crossRun{whole}, runs...)
}

// TestEveryPackageIsChosenForTheBoardsArchitectures keeps the choice
// whole: a new package must be put in crossPackages or notCrossPackages,
// with its reason.
func TestEveryPackageIsChosenForTheBoardsArchitectures(t *testing.T) {
	listed := map[string]bool{}
	for _, p := range listPackages(t) {
		listed[p.ImportPath] = true
		_, cross := crossPackages[p.ImportPath]
		_, notCross := notCrossPackages[p.ImportPath]
		switch {
		case cross && notCross:
			t.Errorf("%s is both in crossPackages and in notCrossPackages (cross_test.go)", p.ImportPath)
		case !cross && !notCross:
			t.Errorf("%s is in neither crossPackages nor notCrossPackages (cross_test.go): run its tests under qemu-user unless they need what qemu-user cannot give, and say which", p.ImportPath)
		}
	}
	for pkg, why := range notCrossPackages {
		if !listed[pkg] || why == "" {
			t.Errorf("notCrossPackages (cross_test.go) names %s, which is no package of the module or has no reason", pkg)
		}
	}
	for pkg, c := range crossPackages {
		if !listed[pkg] || (c.skip != "") != (c.why != "") {
			t.Errorf("crossPackages (cross_test.go) names %s, which is no package of the module or leaves tests out without a reason", pkg)
		}
	}
}

func TestCrossFailuresNameWhatFailed(t *testing.T) {
	tests := []struct {
		name, out string
		want      []string
	}{
		{"a failed test",
			"ok  \tshelldon/bus\t0.1s\n--- FAIL: TestX (0.00s)\n    x_test.go:9: boom\nFAIL\nFAIL\tshelldon/clock\t0.2s\nFAIL\n",
			[]string{"--- FAIL: TestX (0.00s)", "FAIL shelldon/clock 0.2s"}},
		{"a binary out of time",
			"ok  \tshelldon/bus\t0.1s\npanic: test timed out after 5m0s\n\trunning tests:\n\t\tTestHangs (5m0s)\n\t\tTestHangs/sub (4m59s)\n\ngoroutine 7 [running]:\nmain.main()\n\t/x.go:1 +0x1\nFAIL\tshelldon/policy\t300.012s\nFAIL\n",
			[]string{"panic: test timed out after 5m0s", "FAIL shelldon/policy 300.012s (it was running TestHangs (5m0s), TestHangs/sub (4m59s))"}},
		{"a build that failed",
			"# shelldon/bus\nbus/bus.go:1:1: syntax error\n",
			[]string{"go test shelldon/bus shelldon/clock failed with no test named (a build error?)"}},
	}
	for _, tt := range tests {
		got := crossFailures([]byte(tt.out), []string{"shelldon/bus", "shelldon/clock"})
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: crossFailures = %q, want %q", tt.name, got, tt.want)
		}
	}
}
