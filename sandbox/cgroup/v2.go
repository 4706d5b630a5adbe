package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// v2Group is a group in the unified cgroup v2 hierarchy.
type v2Group struct {
	dir string
}

// v2Parent is what the caller's own cgroup can hand down to a child.
type v2Parent struct {
	path string
	// offered are the controllers the cgroup has (cgroup.controllers);
	// enabled are those already on for its children (cgroup.subtree_control).
	offered, enabled map[string]bool
	// busy is a cgroup other than the root that holds processes itself:
	// the kernel lets it enable no further controller for its children.
	busy bool
}

func readV2Parent(root, own string) (v2Parent, error) {
	p := v2Parent{path: own}
	var fields [3][]string
	for i, file := range []string{"cgroup.controllers", "cgroup.subtree_control", "cgroup.procs"} {
		b, err := os.ReadFile(filepath.Join(root, own, file))
		if err != nil {
			return v2Parent{}, unavailableIfDenied(err)
		}
		fields[i] = strings.Fields(string(b))
	}
	p.offered, p.enabled = set(fields[0]), set(fields[1])
	p.busy = own != "/" && len(fields[2]) > 0
	return p, nil
}

func set(words []string) map[string]bool {
	s := make(map[string]bool, len(words))
	for _, w := range words {
		s[w] = true
	}
	return s
}

func (p v2Parent) usable(controller string) bool {
	return p.offered[controller] && (!p.busy || p.enabled[controller])
}

// requireMemoryAndPids explains, as ErrUnavailable, why a child of p
// cannot have the controllers a run needs.
func (p v2Parent) requireMemoryAndPids() error {
	for _, c := range []string{"memory", "pids"} {
		switch {
		case !p.offered[c]:
			return fmt.Errorf("%w: cgroup %s has no %s controller", ErrUnavailable, p.path, c)
		case !p.usable(c):
			return fmt.Errorf("%w: cgroup %s holds processes itself, so the kernel will not enable %s for a child of it; "+
				"start shelldon in a leaf of a delegated subtree or in the root cgroup", ErrUnavailable, p.path, c)
		}
	}
	return nil
}

func (h host) newV2(name string, l Limits) (_ *Group, err error) {
	group, err := h.nestV2(groupSuffix(name))
	if err != nil {
		return nil, fmt.Errorf("find own cgroup: %w", err)
	}
	dir := filepath.Join(h.root, group)
	if _, err := os.Lstat(dir); err == nil {
		return nil, fmt.Errorf("%s: %w", dir, fs.ErrExist)
	}
	parent, err := readV2Parent(h.root, path.Dir(path.Dir(group)))
	if err != nil {
		return nil, err
	}
	if err := parent.requireMemoryAndPids(); err != nil {
		return nil, err
	}

	// memory and pids are on even without a limit, for Stats.
	controllers := []string{"memory", "pids"}
	var settings []setting
	if l.MemoryMax > 0 {
		settings = append(settings, setting{"memory.max", strconv.FormatInt(l.MemoryMax, 10)})
	}
	if l.TasksMax > 0 {
		settings = append(settings, setting{"pids.max", strconv.FormatInt(l.TasksMax, 10)})
	}
	cpu := l.CPUQuota > 0 && parent.usable("cpu")
	if cpu {
		controllers = append([]string{"cpu"}, controllers...)
		settings = append(settings, setting{"cpu.max", fmt.Sprintf("%d %d", quotaMicros(l), cpuPeriod)})
	}
	g, err := createV2(h.root, group, controllers, settings)
	if err != nil {
		return nil, unavailableIfDenied(err)
	}
	defer func() {
		if err != nil {
			_ = g.remove()
		}
	}()
	// memory.swap.max exists where the kernel accounts swap; 0 there
	// keeps a run from spilling past memory.max into swap.
	_, swapErr := os.Stat(filepath.Join(dir, "memory.swap.max"))
	swap := l.MemoryMax > 0 && swapErr == nil
	if swap {
		if err := write(dir, setting{"memory.swap.max", "0"}); err != nil {
			return nil, fmt.Errorf("cap swap: %w", err)
		}
	}
	return &Group{path: group, enforced: enforcedList(l, swap, cpu), b: g}, nil
}

// createV2 makes the group at group below the v2 mount root, enables
// controllers for it in every ancestor, and writes settings into it.
func createV2(root, group string, controllers []string, settings []setting) (v2Group, error) {
	dir := filepath.Join(root, group)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return v2Group{}, err
	}
	g := v2Group{dir: dir}
	if err := enableV2(root, group, controllers); err != nil {
		_ = g.remove()
		return v2Group{}, err
	}
	if err := write(dir, settings...); err != nil {
		_ = g.remove()
		return v2Group{}, err
	}
	return g, nil
}

// enableV2 hands controllers down to group through every ancestor, from
// the mount's root to its parent, each cgroup.subtree_control in turn.
// Only the parent's write decides: one above it may fail where the
// controllers are on already and the subtree was delegated to us.
func enableV2(root, group string, controllers []string) error {
	if len(controllers) == 0 {
		return nil
	}
	line := "+" + strings.Join(controllers, " +")
	parts := strings.Split(strings.Trim(group, "/"), "/")
	var err error
	for i := range parts {
		file := filepath.Join(root, filepath.Join(parts[:i]...), "cgroup.subtree_control")
		err = writeExisting(file, line)
	}
	if err != nil {
		return fmt.Errorf("enable %s for %s: %w", strings.Join(controllers, ", "), group, err)
	}
	return nil
}

// writeExisting writes value into a file that must exist.
func writeExisting(file, value string) error {
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	return errors.Join(err, f.Close())
}

func loadV2(root, group string) (backend, error) {
	dir := filepath.Join(root, group)
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	return v2Group{dir: dir}, nil
}

func (g v2Group) start(cmd *exec.Cmd) error {
	fd, err := unix.Open(g.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", g.dir, err)
	}
	// The kernel has placed the child by the time Start returns.
	defer unix.Close(fd)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = fd
	return cmd.Start()
}

func (g v2Group) procs() ([]int, error) { return groupProcs(g.dir) }

func (g v2Group) kill(time.Time) error {
	// cgroup.kill (Linux 5.14) kills the whole subtree at once, forks in
	// flight included; before it, one signal per listed process.
	if _, err := os.Stat(filepath.Join(g.dir, "cgroup.kill")); err == nil {
		return write(g.dir, setting{"cgroup.kill", "1"})
	}
	pids, err := g.procs()
	if err != nil {
		return err
	}
	return sigkill(pids)
}

func (g v2Group) stats() (Stats, error) {
	peak, errPeak := readCounter(g.dir, "memory.peak")
	oomKills, errOOM := readKeyed(g.dir, "memory.events", "oom_kill")
	cpuMicros, errCPU := readKeyed(g.dir, "cpu.stat", "usage_usec")
	tasks, errTasks := readCounter(g.dir, "pids.current")
	if err := errors.Join(errPeak, errOOM, errCPU, errTasks); err != nil {
		return Stats{}, err
	}
	return Stats{
		MemoryPeak: int64(peak),
		OOMKills:   int64(oomKills),
		CPUTime:    time.Duration(cpuMicros) * time.Microsecond,
		Tasks:      int64(tasks),
	}, nil
}

func (g v2Group) remove() error { return removeGroupDir(g.dir) }
