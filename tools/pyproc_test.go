package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hashForever is an expression the guards let through that runs until the
// evaluator is killed: a dict key is hashed in one step, and this tuple of
// a thousand references to a tuple of ... has 10^12 items to hash.
const hashForever = `(lambda t: {t: 1})((lambda a: tuple([a] * 1000))((lambda b: tuple([b] * 1000))((lambda c: tuple([c] * 1000))(tuple([0] * 1000)))))`

// children lists this process's child processes.
func children(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if stat := procStat(pid); len(stat) > 1 && stat[1] == strconv.Itoa(os.Getpid()) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procStat is the fields of /proc/pid/stat after the command name: state,
// ppid, pgrp ...; nil when the process is gone.
func procStat(pid int) []string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(raw)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

// limitsOf reads /proc/pid/limits as a map from name to "soft hard".
func limitsOf(pid int) map[string]string {
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	out := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n")[1:] {
		if len(line) < 26 {
			continue
		}
		fields := strings.Fields(line[25:])
		if len(fields) >= 2 {
			out[strings.TrimSpace(line[:25])] = fields[0] + " " + fields[1]
		}
	}
	return out
}

// The evaluator of a call runs under its bounds, with nothing open but its
// standard descriptors and in a group of its own, and is killed at 2 s
// and reaped.
func TestEvaluatorIsBounded(t *testing.T) {
	env := testEnv(t)
	// A descriptor without close-on-exec, as a worker may inherit one
	// from whoever started core.
	planted := filepath.Join(t.TempDir(), "planted")
	if err := os.WriteFile(planted, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(planted, syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	done := make(chan error, 1)
	go func() {
		_, err := runLocal(t, env, "python_eval", evalArgs(hashForever))
		done <- err
	}()
	var pid int
	var limits map[string]string
	for wait := time.Now().Add(evalLimit); pid == 0 || limits["Max open files"] != "3 3"; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(wait) {
			t.Fatalf("no evaluator under its limits within %v: children %v, limits %v", evalLimit, children(t), limits)
		}
		if pids := children(t); len(pids) == 1 {
			pid, limits = pids[0], limitsOf(pids[0])
		}
	}
	for name, want := range map[string]string{"Max cpu time": "3 3", "Max core file size": "0 0"} {
		if limits[name] != want {
			t.Errorf("evaluator's %q = %q, want %q", name, limits[name], want)
		}
	}
	if data := strings.Fields(limits["Max data size"]); len(data) != 2 || data[0] != data[1] || data[0] == "unlimited" {
		t.Errorf("evaluator's data size limit = %q, want one soft and hard limit", limits["Max data size"])
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if n, _ := strconv.Atoi(fd.Name()); n <= 2 {
			continue
		}
		// Beyond 0, 1 and 2 only the Go runtime's own may be open (its
		// cgroup files and poller), all with close-on-exec; an inherited
		// one cannot have it.
		target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		info, _ := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd.Name()))
		var flags int64
		for _, line := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				flags, _ = strconv.ParseInt(strings.TrimSpace(v), 8, 64)
			}
		}
		if target == planted || flags&syscall.O_CLOEXEC == 0 {
			t.Errorf("evaluator holds descriptor %s -> %s (flags %o), which it inherited", fd.Name(), target, flags)
		}
	}
	if stat := procStat(pid); len(stat) < 3 || stat[2] != strconv.Itoa(pid) {
		t.Errorf("evaluator %d is in process group %v, want its own", pid, stat)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "python_eval: stopped after 2 s") {
			t.Errorf("python_eval(%q) = %v, want it stopped after 2 s", hashForever, err)
		}
	case <-time.After(2 * evalLimit):
		t.Fatal("python_eval did not end")
	}
	if stat := procStat(pid); stat != nil {
		t.Errorf("evaluator %d is still there after the call (state %s), want it reaped", pid, stat[0])
	}
}

// An evaluator that dies at its memory limit, whether the runtime says so
// (one allocation past RLIMIT_DATA) or faults (as Go 1.26's collector may
// when a mapping fails), tells the model it ran out of memory.
func TestEvaluatorMemoryLimitIsHard(t *testing.T) {
	env := testEnv(t)
	for _, role := range []string{hogArg, hoardArg} {
		env.Evaluator = append(slices.Clone(testEvaluator), role)
		start := time.Now()
		_, err := runLocal(t, env, "python_eval", evalArgs("1"))
		if want := fmt.Sprintf("python_eval: ran out of memory (%d MiB)", evalMemory>>20); err == nil || !strings.Contains(err.Error(), want) || time.Since(start) > evalLimit {
			t.Errorf("an evaluator that %s answered %v after %v, want %q", map[string]string{hogArg: "maps a gigabyte", hoardArg: "faults holding 7/8 of its memory"}[role], err, time.Since(start), want)
		}
	}
}

// What the worker makes of an evaluator that does not keep to the
// protocol: each ends within the limit, with an error, leaving nothing.
func TestEvaluatorMisbehaving(t *testing.T) {
	env := testEnv(t)
	tests := []struct{ script, wantErr string }{
		{"exec sleep 30", "python_eval: stopped after 2 s"},
		{"head -c 1000000 /dev/zero", "the evaluator's answer was unreadable (131072 bytes)"},
		{"echo not json", "unreadable"},
		{"echo boom >&2; exit 3", "the evaluator failed (exit status 3): boom"},
		{"kill -KILL $$", "the evaluator failed: signal: killed"},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			env.Evaluator = []string{"/bin/sh", "-c", tt.script}
			endsWithin(t, env, limitCase{expr: "1", wantErr: tt.wantErr})
			if left := children(t); len(left) > 0 {
				t.Errorf("left child processes %v behind", left)
			}
		})
	}
	env.Evaluator = []string{filepath.Join(t.TempDir(), "missing")}
	endsWithin(t, env, limitCase{expr: "1", wantErr: "the evaluator failed"})
}

// A turn cancelled while its call runs kills the evaluator at once.
func TestPythonEvalCancelledWhileRunning(t *testing.T) {
	env := testEnv(t)
	tool, _ := Builtins(env).Lookup("python_eval")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := tool.(Local).Run(ctx, evalArgs(hashForever))
	if err == nil || !strings.Contains(err.Error(), "cancelled") || time.Since(start) > time.Second {
		t.Errorf("python_eval cancelled after 200ms = %v after %v, want cancelled at once", err, time.Since(start))
	}
	if left := children(t); len(left) > 0 {
		t.Errorf("left child processes %v behind", left)
	}
}

// hog makes the test binary an evaluator that, under the evaluator's
// bounds, maps a gigabyte in one allocation.
func hog() {
	if err := limitEvaluator(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	held := make([]byte, 1<<30)
	held[len(held)-1] = 1
	fmt.Println(len(held))
}

// hoard makes the test binary an evaluator that, under the evaluator's
// bounds, fills seven eighths of its memory and then faults.
func hoard() {
	if err := limitEvaluator(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The kernel faults each megabyte in as it maps it (MAP_POPULATE):
	// touched a page at a time from here, 7/8 of the race detector's
	// tripled budget took 86,000 faults, at 2 to 12 µs each on these
	// machines, and under load outlasted the evaluator's 2 s.
	for held := int64(0); held < evalMemory*7/8; held += 1 << 20 {
		if _, err := syscall.Mmap(-1, 0, 1<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_POPULATE); err != nil {
			fmt.Fprintf(os.Stderr, "hoard: held %d MiB: %v\n", held>>20, err)
			break
		}
	}
	// A real fault, which the Go runtime dies of at once. (A SIGSEGV sent
	// with kill is not one: the runtime ignores it, and the hoard then
	// lived on until the deadlock detector or the time limit ended it.)
	guard, err := syscall.Mmap(-1, 0, os.Getpagesize(), syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hoard: map a guard page:", err)
		os.Exit(1)
	}
	guard[0] = 1
}
