package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3/cgroup2"
	"golang.org/x/sys/unix"
)

// v2Group is a group in the unified cgroup v2 hierarchy.
type v2Group struct {
	m   *cgroup2.Manager
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
	res := &cgroup2.Resources{Memory: &cgroup2.Memory{}, Pids: &cgroup2.Pids{Max: l.TasksMax}}
	if l.MemoryMax > 0 {
		res.Memory.Max = &l.MemoryMax
	}
	cpu := l.CPUQuota > 0 && parent.usable("cpu")
	if cpu {
		quota, period := quotaMicros(l), uint64(cpuPeriod)
		res.CPU = &cgroup2.CPU{Max: cgroup2.NewCPUMax(&quota, &period)}
	}
	g, err := createV2(h.root, group, res)
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
		var noSwap int64
		if err := g.m.Update(&cgroup2.Resources{Memory: &cgroup2.Memory{Swap: &noSwap}}); err != nil {
			return nil, fmt.Errorf("cap swap: %w", err)
		}
	}
	return &Group{path: group, enforced: enforcedList(l, swap, cpu), b: g}, nil
}

// createV2 makes the group at group below the v2 mount root, enabling in
// every ancestor the controllers res uses.
func createV2(root, group string, res *cgroup2.Resources) (v2Group, error) {
	m, err := cgroup2.NewManager(root, group, res)
	if err != nil {
		return v2Group{}, err
	}
	return v2Group{m: m, dir: filepath.Join(root, group)}, nil
}

func loadV2(root, group string) (backend, error) {
	dir := filepath.Join(root, group)
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	m, err := cgroup2.Load(group, cgroup2.WithMountpoint(root))
	if err != nil {
		return nil, err
	}
	return v2Group{m: m, dir: dir}, nil
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

func (g v2Group) procs() ([]int, error) {
	pids, err := g.m.Procs(true)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(pids))
	for i, p := range pids {
		out[i] = int(p)
	}
	return out, nil
}

func (g v2Group) kill(time.Time) error {
	// cgroup.kill (Linux 5.14) kills the whole subtree at once, forks in
	// flight included; before it, one signal per listed process.
	if _, err := os.Stat(filepath.Join(g.dir, "cgroup.kill")); err == nil {
		return g.m.Kill()
	}
	pids, err := g.procs()
	if err != nil {
		return err
	}
	return sigkill(pids)
}

func (g v2Group) stats() (Stats, error) {
	m, err := g.m.StatFiltered(cgroup2.StatPids | cgroup2.StatCPU | cgroup2.StatMemory | cgroup2.StatMemoryEvents)
	if err != nil {
		return Stats{}, err
	}
	return Stats{
		MemoryPeak: int64(m.GetMemory().GetMaxUsage()),
		OOMKills:   int64(m.GetMemoryEvents().GetOomKill()),
		CPUTime:    time.Duration(m.GetCPU().GetUsageUsec()) * time.Microsecond,
		Tasks:      int64(m.GetPids().GetCurrent()),
	}, nil
}

func (g v2Group) remove() error {
	if err := g.m.Delete(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
