package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os/exec"
	"path"
	"time"

	"github.com/containerd/cgroups/v3"
	"golang.org/x/sys/unix"
)

// ErrUnavailable means this host offers no writable cgroup hierarchy with
// the memory and pids controllers, so a run's limits cannot be held.
var ErrUnavailable = errors.New("no writable cgroup hierarchy with the memory and pids controllers " +
	"(run shelldon as root; on Raspberry Pi kernels add cgroup_enable=memory to cmdline.txt and reboot)")

// ErrInvalid means a group name, group path or limit was rejected before
// anything was created.
var ErrInvalid = errors.New("invalid cgroup request")

// Limits bound one group; zero means no limit for that resource.
type Limits struct {
	// MemoryMax is in bytes. Swap is held to the same total where the
	// kernel accounts swap, so swapping cannot dodge the limit.
	MemoryMax int64
	// TasksMax caps processes plus threads.
	TasksMax int64
	// CPUQuota is in CPUs: 0.5 is half of one CPU's time.
	CPUQuota float64
}

// Stats is what a group has used.
type Stats struct {
	// MemoryPeak is the most memory the group held at once, in bytes; 0
	// where the kernel does not track it (cgroup v2 before Linux 5.19).
	MemoryPeak int64
	// OOMKills counts processes the OOM killer ended for the group's limit.
	OOMKills int64
	// CPUTime is the CPU time of everything that ran in the group.
	CPUTime time.Duration
	// Tasks is the processes and threads in the group now.
	Tasks int64
}

// The names Enforced reports.
const (
	EnforcedMemory = "memory" // MemoryMax holds
	EnforcedSwap   = "swap"   // swap counts against MemoryMax too
	EnforcedTasks  = "tasks"  // TasksMax holds
	EnforcedCPU    = "cpu"    // CPUQuota holds
)

const (
	// parentName is the directory under the caller's own cgroup that holds
	// every group New makes.
	parentName = "shelldon"
	// maxNameLen keeps names readable in /proc/<pid>/cgroup.
	maxNameLen = 128
	// cpuPeriod is the CFS period, in microseconds, that CPUQuota divides.
	cpuPeriod = 100000
	// minCPUQuota is the kernel's smallest quota, 1 ms per period.
	minCPUQuota = 0.01
	// maxCPUQuota is far beyond any machine, and keeps the quota in
	// microseconds inside the kernel's range.
	maxCPUQuota = 1e6
	// killWait bounds how long Kill waits for the group to empty.
	killWait = 5 * time.Second
)

// Group is one control group. Its methods are safe for concurrent use.
type Group struct {
	path     string // the group's cgroup path, for messages
	enforced []string
	b        backend
}

// backend is a group in one of the two cgroup layouts.
type backend interface {
	// start starts cmd inside the group.
	start(cmd *exec.Cmd) error
	// procs lists every process in the group and below it.
	procs() ([]int, error)
	// kill sends SIGKILL to every process in the group once, giving up
	// on anything slow at deadline.
	kill(deadline time.Time) error
	stats() (Stats, error)
	// remove deletes the group, which must be empty.
	remove() error
}

// host says where this machine's cgroups are; tests substitute a fake tree.
type host struct {
	mode cgroups.CGMode
	// root is where the hierarchies are mounted: the v2 mount, or the
	// directory holding one mount per v1 controller.
	root string
	// nestV1 and nestV2 give the path of suffix below the caller's own
	// cgroup.
	nestV1 func(suffix string) v1Path
	nestV2 func(suffix string) (string, error)
}

func thisHost() host {
	return host{
		mode:   cgroups.Mode(),
		root:   "/sys/fs/cgroup",
		nestV1: ownV1Path,
		nestV2: ownV2Path,
	}
}

// New creates the group <own cgroup>/shelldon/<name>, with l's limits, in
// every hierarchy a run needs. The name is letters, digits, '-', '_', '.'
// and '@', not starting with '.'; a group of that name must not exist
// yet. A limit the host cannot hold (CPUQuota without the cpu controller)
// is left out of [Group.Enforced] rather than failing New.
func New(name string, l Limits) (*Group, error) {
	return thisHost().newGroup(name, l)
}

func (h host) newGroup(name string, l Limits) (*Group, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if err := checkLimits(l); err != nil {
		return nil, fmt.Errorf("cgroup %s: %w", name, err)
	}
	var g *Group
	var err error
	switch h.mode {
	case cgroups.Unified:
		g, err = h.newV2(name, l)
	case cgroups.Legacy, cgroups.Hybrid:
		// A hybrid host keeps its controllers in v1; its v2 mount only
		// tracks processes.
		g, err = h.newV1(name, l)
	default:
		err = fmt.Errorf("%w: no cgroup filesystem at %s", ErrUnavailable, h.root)
	}
	if err != nil {
		return nil, fmt.Errorf("create cgroup %s: %w", name, err)
	}
	return g, nil
}

// Load opens the existing group at path — as /proc/<pid>/cgroup shows it,
// the same in every v1 hierarchy, as systemd lays out a unit's group — to
// read its statistics or kill it. Its Enforced is empty.
func Load(path string) (*Group, error) {
	return thisHost().load(path)
}

func (h host) load(p string) (*Group, error) {
	if err := checkGroupPath(p); err != nil {
		return nil, fmt.Errorf("load cgroup: %w", err)
	}
	var b backend
	var err error
	switch h.mode {
	case cgroups.Unified:
		b, err = loadV2(h.root, p)
	case cgroups.Legacy, cgroups.Hybrid:
		b, err = loadV1(h.root, p)
	default:
		err = fmt.Errorf("%w: no cgroup filesystem at %s", ErrUnavailable, h.root)
	}
	if err != nil {
		return nil, fmt.Errorf("load cgroup %s: %w", p, err)
	}
	return &Group{path: p, b: b}, nil
}

// Start starts cmd inside the group, so that every process it forks is in
// the group too; cmd's Env, Dir, standard streams and SysProcAttr flags
// keep working.
//
// On cgroup v2 the kernel places the new process (clone3 with
// CLONE_INTO_CGROUP, Linux 5.7 or later). On v1 there is no such call, so
// /bin/sh starts first, moves itself into the group and then execs the
// program with cmd's arguments; Start returns once it has joined. The
// program sees its own path as argv[0]; if the shell cannot join, Start
// reaps it and fails, and the program never runs at all.
func (g *Group) Start(cmd *exec.Cmd) error {
	if err := g.b.start(cmd); err != nil {
		return fmt.Errorf("start %s in cgroup %s: %w", cmd.Path, g.path, err)
	}
	return nil
}

// Enforced lists the limits that hold for the group, from EnforcedMemory,
// EnforcedSwap, EnforcedTasks and EnforcedCPU, in that order.
func (g *Group) Enforced() []string {
	return append([]string(nil), g.enforced...)
}

// Kill sends SIGKILL to every process in the group, again and again while
// any remain, and returns once the group is empty or reports what is left
// after a few seconds. Processes that die stay zombies until their parent
// waits for them; the group no longer lists them.
func (g *Group) Kill() error {
	deadline := time.Now().Add(killWait)
	pause := time.Millisecond
	for {
		pids, err := g.b.procs()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("kill cgroup %s: %w", g.path, err)
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kill cgroup %s: processes %v still there after %v", g.path, pids, killWait)
		}
		if err := g.b.kill(deadline); err != nil {
			return fmt.Errorf("kill cgroup %s: %w", g.path, err)
		}
		// The kernel takes a moment to tear down a killed process.
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// Stats reads what the group has used so far.
func (g *Group) Stats() (Stats, error) {
	s, err := g.b.stats()
	if err != nil {
		return Stats{}, fmt.Errorf("read stats of cgroup %s: %w", g.path, err)
	}
	return s, nil
}

// Delete kills everything in the group and removes it. Deleting a group
// that is already gone succeeds.
func (g *Group) Delete() error {
	if err := g.Kill(); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if err := g.b.remove(); err != nil {
		return fmt.Errorf("delete cgroup %s: %w", g.path, err)
	}
	return nil
}

func checkName(name string) error {
	bad := name == "" || len(name) > maxNameLen || name[0] == '.'
	for _, c := range []byte(name) {
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == '@'
		bad = bad || !ok
	}
	if bad {
		return fmt.Errorf("cgroup name %q: %w: want 1 to %d of letters, digits, '-', '_', '.', '@', not starting with '.'",
			name, ErrInvalid, maxNameLen)
	}
	return nil
}

func checkLimits(l Limits) error {
	switch {
	case l.MemoryMax < 0:
		return fmt.Errorf("%w: MemoryMax %d is negative", ErrInvalid, l.MemoryMax)
	case l.TasksMax < 0:
		return fmt.Errorf("%w: TasksMax %d is negative", ErrInvalid, l.TasksMax)
	case math.IsNaN(l.CPUQuota) || l.CPUQuota < 0 || l.CPUQuota > maxCPUQuota:
		return fmt.Errorf("%w: CPUQuota %v is not between 0 and %v CPUs", ErrInvalid, l.CPUQuota, maxCPUQuota)
	case l.CPUQuota > 0 && l.CPUQuota < minCPUQuota:
		return fmt.Errorf("%w: CPUQuota %v is below the kernel's minimum of %v CPUs", ErrInvalid, l.CPUQuota, minCPUQuota)
	}
	return nil
}

// quotaMicros is l's CPU quota per cpuPeriod.
func quotaMicros(l Limits) int64 {
	return int64(math.Round(l.CPUQuota * cpuPeriod))
}

// enforcedList names the limits that hold: l's memory and task limits,
// which New always sets, and swap and cpu as the host allowed.
func enforcedList(l Limits, swap, cpu bool) []string {
	var out []string
	for _, e := range []struct {
		holds bool
		name  string
	}{
		{l.MemoryMax > 0, EnforcedMemory},
		{swap, EnforcedSwap},
		{l.TasksMax > 0, EnforcedTasks},
		{cpu, EnforcedCPU},
	} {
		if e.holds {
			out = append(out, e.name)
		}
	}
	return out
}

// groupSuffix is the path of a group New makes, below the caller's cgroup.
func groupSuffix(name string) string {
	return path.Join(parentName, name)
}

// sigkill signals every pid, skipping those already gone.
func sigkill(pids []int) error {
	for _, pid := range pids {
		if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("kill process %d: %w", pid, err)
		}
	}
	return nil
}

// unavailableIfDenied marks an error of the cgroup filesystem refusing a
// write as ErrUnavailable: the caller is not root, or cgroupfs is
// read-only (as in an unprivileged container).
func unavailableIfDenied(err error) error {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EROFS) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}
