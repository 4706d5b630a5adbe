package procmem

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Files the readers use; tests point them elsewhere.
var (
	selfStatus = "/proc/self/status"
	selfStatm  = "/proc/self/statm"
	meminfo    = "/proc/meminfo"
	selfCgroup = "/proc/self/cgroup"
	cgroupRoot = "/sys/fs/cgroup"
)

// Self reads one "kB" field of this process's /proc status — "VmHWM"
// (the resident high-water mark) or "VmData" (the data segment) — in
// bytes. (getrusage's maxrss is no stand-in for VmHWM: after an exec it
// keeps the high-water mark of the process that forked.)
func Self(field string) (int64, bool) {
	return kBField(selfStatus, field)
}

// Resident is this process's resident memory now, in bytes: VmRSS, read
// from /proc/self/statm, one short line of numbers where status is forty
// lines of text the kernel formats, as core reads it for every frame the
// panel shows.
func Resident() (int64, bool) {
	raw, err := os.ReadFile(selfStatm)
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(raw))
	if len(fields) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}

// Machine reads the machine's total memory and what is available to new
// work without swapping, in bytes.
func Machine() (total, available int64, ok bool) {
	total, ok1 := kBField(meminfo, "MemTotal")
	available, ok2 := kBField(meminfo, "MemAvailable")
	return total, available, ok1 && ok2
}

// Cgroup reads the memory in use by this process's cgroup (v2) and its
// limit; limit is 0 when there is none ("max").
func Cgroup() (current, limit int64, ok bool) {
	dir := ownCgroup()
	if dir == "" {
		return 0, 0, false
	}
	current, ok = number(filepath.Join(dir, "memory.current"))
	if !ok {
		return 0, 0, false
	}
	limit, _ = number(filepath.Join(dir, "memory.max"))
	return current, limit, true
}

// own is the directory of this process's cgroup (v2), "" when it has
// none, read from selfCgroup once: a service stays in its cgroup, and core
// asks at every frame the panel shows.
var own struct {
	sync.Mutex
	read bool
	dir  string
}

func ownCgroup() string {
	own.Lock()
	defer own.Unlock()
	if own.read {
		return own.dir
	}
	raw, err := os.ReadFile(selfCgroup)
	if err != nil {
		// Not kept: a read that failed is tried again next time.
		return ""
	}
	own.read = true
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, found := strings.CutPrefix(line, "0::"); found {
			own.dir = filepath.Join(cgroupRoot, filepath.Clean("/"+rest))
		}
	}
	return own.dir
}

// Peak reads the high-water mark of a cgroup's memory (memory.peak, kernel
// 5.19 and later), the cgroup named by its path in the hierarchy as
// systemd's ControlGroup property gives it.
func Peak(cgroup string) (int64, bool) {
	if cgroup == "" {
		return 0, false
	}
	return number(filepath.Join(cgroupRoot, filepath.Clean("/"+cgroup), "memory.peak"))
}

func number(path string) (int64, bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	return n, err == nil
}

func kBField(path, field string) (int64, bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		rest, found := strings.CutPrefix(sc.Text(), field+":")
		if !found {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}
