package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The cgroup file system is read and written here directly: the few files
// a run's group needs (its limits, cgroup.procs, cgroup.kill, and the
// counters Stats reads). github.com/containerd/cgroups/v3's cgroup1 and
// cgroup2 packages did this before, but they link their statistics as
// protobuf types and, for v2 device filters, cilium/ebpf: 4.7 MB of the
// stripped arm64 binary for a dozen files (BENCHMARKS.md).

// errNotInHierarchy means this process is in no group of a v1 hierarchy:
// /proc/self/cgroup has no line for its controller.
var errNotInHierarchy = errors.New("this process is in no group of that hierarchy")

// v1Path gives a group's path in the v1 hierarchy of controller.
type v1Path func(controller string) (string, error)

// staticV1Path is the same path p in every v1 hierarchy, as systemd lays
// out a unit's group.
func staticV1Path(p string) v1Path {
	return func(string) (string, error) { return p, nil }
}

// ownCgroups are this process's groups from /proc/self/cgroup, by
// controller: "memory", "name=systemd", and "" for the v2 line.
func ownCgroups() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	return parseCgroupFile(b), nil
}

// parseCgroupFile reads the lines "id:controllers:path" of /proc/PID/cgroup.
func parseCgroupFile(b []byte) map[string]string {
	paths := map[string]string{}
	for line := range strings.Lines(string(b)) {
		fields := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(fields) != 3 {
			continue
		}
		for _, c := range strings.Split(fields[1], ",") {
			paths[c] = fields[2]
		}
	}
	return paths
}

// ownV2Path is suffix below this process's own v2 group.
func ownV2Path(suffix string) (string, error) {
	paths, err := ownCgroups()
	if err != nil {
		return "", err
	}
	own, ok := paths[""]
	if !ok {
		return "", errors.New("/proc/self/cgroup has no cgroup v2 line")
	}
	return path.Join(own, suffix), nil
}

// ownV1Path is suffix below this process's own group in each v1
// hierarchy. In a container whose hierarchies are mounted from its own
// group down, /proc/self/cgroup still names the group from the host's
// root; the mount's root (/proc/self/mountinfo) is taken off.
func ownV1Path(suffix string) v1Path {
	paths, err := ownCgroups()
	if err != nil {
		return func(string) (string, error) { return "", err }
	}
	if info, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		belowMountRoots(paths, v1MountRoots(info))
	}
	return func(controller string) (string, error) {
		own, ok := paths[controller]
		if !ok {
			return "", fmt.Errorf("%s: %w", controller, errNotInHierarchy)
		}
		return path.Join(own, suffix), nil
	}
}

// v1MountRoots are the roots of the v1 hierarchies mounted here, by
// controller, from /proc/self/mountinfo: "id parent dev root mountpoint
// options [optional fields] - fstype source superoptions".
func v1MountRoots(mountinfo []byte) map[string]string {
	roots := map[string]string{}
	for line := range strings.Lines(string(mountinfo)) {
		before, after, ok := strings.Cut(strings.TrimSpace(line), " - ")
		fields, tail := strings.Fields(before), strings.Fields(after)
		if !ok || len(fields) < 5 || len(tail) < 3 || tail[0] != "cgroup" {
			continue
		}
		for _, opt := range strings.Split(tail[2], ",") {
			roots[opt] = fields[3]
		}
	}
	return roots
}

// belowMountRoots makes each group's path in paths relative to the root
// its hierarchy is mounted from (roots, by controller).
func belowMountRoots(paths, roots map[string]string) {
	for controller, root := range roots {
		if p, ok := paths[controller]; ok {
			if rel, err := filepath.Rel(root, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				paths[controller] = path.Join("/", rel)
			}
		}
	}
}

// checkGroupPath accepts a group's path as /proc/PID/cgroup shows it:
// absolute, clean, and not a path of the mount itself.
func checkGroupPath(p string) error {
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p || strings.HasPrefix(p, "/sys/fs/cgroup") {
		return fmt.Errorf("%w: cgroup path %q: want an absolute, clean path", ErrInvalid, p)
	}
	return nil
}

// setting is one value written into one of a group's files.
type setting struct{ file, value string }

// write writes the settings into the group's directory dir, in order.
func write(dir string, settings ...setting) error {
	for _, s := range settings {
		if err := os.WriteFile(filepath.Join(dir, s.file), []byte(s.value), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// readGroupFile reads one of a group's files; ok is false where the
// kernel does not offer it here (no such controller, or no such group
// directory in that hierarchy).
func readGroupFile(dir, file string) (data []byte, ok bool, err error) {
	if dir == "" {
		return nil, false, nil
	}
	data, err = os.ReadFile(filepath.Join(dir, file))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	return data, err == nil, err
}

// readCounter reads a file holding one number, such as pids.current; a
// file the kernel does not offer here reads as 0.
func readCounter(dir, file string) (uint64, error) {
	data, ok, err := readGroupFile(dir, file)
	if !ok {
		return 0, err
	}
	return parseCounter(string(data), dir, file)
}

// readKeyed reads the number after key in a file of "key value" lines,
// such as cpu.stat; a missing file or key reads as 0.
func readKeyed(dir, file, key string) (uint64, error) {
	data, ok, err := readGroupFile(dir, file)
	if !ok {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if k, v, found := strings.Cut(strings.TrimSpace(line), " "); found && k == key {
			return parseCounter(v, dir, file+": "+key)
		}
	}
	return 0, nil
}

// parseCounter is the number in text, read from what in the group at dir.
func parseCounter(text, dir, what string) (uint64, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(text), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s/%s: %w", dir, what, err)
	}
	return n, nil
}

// groupProcs lists the processes in the group at dir and in every group
// below it.
func groupProcs(dir string) ([]int, error) {
	var pids []int
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return err
		}
		for _, field := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(field)
			if err != nil {
				return fmt.Errorf("%s/cgroup.procs: %q is not a process id", p, field)
			}
			pids = append(pids, pid)
		}
		return nil
	})
	return pids, err
}

// removeGroupDir removes an empty group's directory; one already gone is
// no error. The kernel refuses (EBUSY) while the last killed processes
// are still being torn down, so it tries again for a moment.
func removeGroupDir(dir string) error {
	delay := 10 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if attempt == 5 {
			return err
		}
		time.Sleep(delay)
		delay *= 2
	}
}
