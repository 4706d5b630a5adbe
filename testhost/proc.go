package testhost

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// OwnProcess waits up to 10 s for a process whose command line starts
// with argv0 (its first argument, whole) and that descends from this test
// binary, and returns its pid. Tests of several packages run at once on
// one host: a test that stops or kills "the server" must find its own,
// never another package's, or it fails both.
func OwnProcess(t testing.TB, argv0 string) int {
	t.Helper()
	want := []byte(argv0 + "\x00")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if bytes.HasPrefix(cmdline, want) && descends(pid, os.Getpid()) {
				return pid
			}
		}
	}
	t.Fatalf("no process %s of this test's found within 10 s", argv0)
	return 0
}

// descends says whether pid is a descendant of ancestor, following the
// parents /proc names.
func descends(pid, ancestor int) bool {
	for pid > 1 {
		status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
		if err != nil {
			return false
		}
		parent := 0
		for line := range strings.Lines(string(status)) {
			if v, ok := strings.CutPrefix(line, "PPid:"); ok {
				parent, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if parent == ancestor {
			return true
		}
		pid = parent
	}
	return false
}

// ProcStat reads a /proc stat file (/proc/PID/stat or
// /proc/PID/task/TID/stat) and returns the command name and the fields
// after it, the state first (field 3 of proc(5) is fields[0]). The name
// is in parentheses and may itself hold spaces or parentheses, so the
// fields are counted from its last closing one.
func ProcStat(path string) (name string, fields []string, err error) {
	stat, err := os.ReadFile(path)
	if err != nil {
		return "", nil, err
	}
	open, close := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || close < open {
		return "", nil, fmt.Errorf("%s: no command name in %q", path, stat)
	}
	fields = strings.Fields(string(stat[close+1:]))
	if len(fields) == 0 {
		return "", nil, fmt.Errorf("%s: no fields after the command name in %q", path, stat)
	}
	return string(stat[open+1 : close]), fields, nil
}
