package cgroup

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// v1Group is a group on a cgroup v1 host: one directory per hierarchy.
type v1Group struct {
	cg cgroup1.Cgroup
	// dirs is the group's directory in each of its hierarchies.
	dirs []string
	// freezer is the group's directory in the freezer hierarchy, "" when
	// there is none.
	freezer string
}

// pather is a v1 subsystem that lives in a directory tree.
type pather interface {
	cgroup1.Subsystem
	Path(path string) string
}

// freezeWait bounds how long one round of Kill waits for the group to
// freeze.
const freezeWait = 500 * time.Millisecond

// joinScript moves the shell itself into the group — $1 says how many
// cgroup.procs files follow it — reports so on the descriptor numbered by
// the format verb, closes that, and then becomes the program, whose path
// and arguments come last. The file names and arguments arrive as
// positional parameters; nothing but the descriptor number is spliced
// into the script's text.
const joinScript = `n=$1; shift
while [ "$n" -gt 0 ]; do echo $$ >"$1" || exit 125; shift; n=$((n - 1)); done
echo %[1]s >&%[2]d; exec %[2]d>&-
exec "$@"`

// joined is what joinScript reports once it is in every hierarchy.
const joined = "joined"

// v1Hierarchies are the v1 hierarchies under root that a group uses:
// memory and pids, which New requires, and cpu, cpuacct and freezer where
// they are mounted.
func v1Hierarchies(root string) []pather {
	var mounted []pather
	for _, s := range []pather{
		cgroup1.NewMemory(root, cgroup1.OptionalSwap()),
		cgroup1.NewPids(root),
		cgroup1.NewCpu(root),
		cgroup1.NewCpuacct(root),
		cgroup1.NewFreezer(root),
	} {
		if _, err := os.Lstat(s.Path("/")); err == nil {
			mounted = append(mounted, s)
		}
	}
	return mounted
}

func hierarchyOf(subsystems []pather) cgroup1.Hierarchy {
	return func() ([]cgroup1.Subsystem, error) {
		out := make([]cgroup1.Subsystem, len(subsystems))
		for i, s := range subsystems {
			out[i] = s
		}
		return out, nil
	}
}

func (h host) newV1(name string, l Limits) (_ *Group, err error) {
	nested := h.nestV1(groupSuffix(name))
	var used []pather
	var dirs []string
	var memoryPath string
	have := map[cgroup1.Name]bool{}
	for _, s := range v1Hierarchies(h.root) {
		p, err := nested(s.Name())
		if errors.Is(err, cgroup1.ErrControllerNotActive) {
			continue // this process is in no group of that hierarchy
		}
		if err != nil {
			return nil, fmt.Errorf("find own cgroup: %w", err)
		}
		dir := s.Path(p)
		if _, err := os.Lstat(dir); err == nil {
			return nil, fmt.Errorf("%s: %w", dir, fs.ErrExist)
		}
		used = append(used, s)
		dirs = append(dirs, dir)
		have[s.Name()] = true
		if s.Name() == cgroup1.Memory {
			memoryPath = p
		}
	}
	var missing []string
	for _, c := range []cgroup1.Name{cgroup1.Memory, cgroup1.Pids} {
		if !have[c] {
			missing = append(missing, string(c))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: no %s hierarchy under %s", ErrUnavailable, strings.Join(missing, " or "), h.root)
	}

	// Swap counts against the limit only where the kernel accounts it
	// (no swapaccount=0 on its command line).
	_, swapErr := os.Stat(filepath.Join(h.root, string(cgroup1.Memory), "memory.memsw.limit_in_bytes"))
	swap := l.MemoryMax > 0 && swapErr == nil
	// Without CFS bandwidth control in the kernel there is no quota file.
	_, quotaErr := os.Stat(filepath.Join(h.root, string(cgroup1.Cpu), "cpu.cfs_quota_us"))
	cpu := l.CPUQuota > 0 && have[cgroup1.Cpu] && quotaErr == nil
	res := &specs.LinuxResources{Memory: &specs.LinuxMemory{}, Pids: &specs.LinuxPids{}, CPU: &specs.LinuxCPU{}}
	if l.MemoryMax > 0 {
		res.Memory.Limit = &l.MemoryMax
	}
	if swap {
		res.Memory.Swap = &l.MemoryMax
	}
	if l.TasksMax > 0 {
		res.Pids.Limit = &l.TasksMax
	}
	if cpu {
		quota, period := quotaMicros(l), uint64(cpuPeriod)
		res.CPU.Quota, res.CPU.Period = &quota, &period
	}

	defer func() {
		if err != nil {
			// The directories are empty, so rmdir takes them.
			for _, d := range dirs {
				_ = os.Remove(d)
			}
		}
	}()
	cg, err := cgroup1.New(nested, res, cgroup1.WithHierarchy(hierarchyOf(used)))
	if err != nil {
		return nil, unavailableIfDenied(err)
	}
	return &Group{path: memoryPath, enforced: enforcedList(l, swap, cpu), b: newV1Group(cg, nested)}, nil
}

func loadV1(root, path string) (backend, error) {
	p := cgroup1.StaticPath(path)
	cg, err := cgroup1.Load(p, cgroup1.WithHierarchy(hierarchyOf(v1Hierarchies(root))))
	if errors.Is(err, cgroup1.ErrCgroupDeleted) {
		return nil, fmt.Errorf("%w: in no v1 hierarchy under %s", fs.ErrNotExist, root)
	}
	if err != nil {
		return nil, err
	}
	return newV1Group(cg, p), nil
}

func newV1Group(cg cgroup1.Cgroup, p cgroup1.Path) v1Group {
	var g v1Group
	g.cg = cg
	for _, s := range cg.Subsystems() {
		// Both New and Load resolved every subsystem's path already.
		rel, _ := p(s.Name())
		dir := s.(pather).Path(rel)
		g.dirs = append(g.dirs, dir)
		if s.Name() == cgroup1.Freezer {
			g.freezer = dir
		}
	}
	return g
}

// start runs cmd through joinScript and returns once the shell is in the
// group, so that Kill can find it from then on; cmd's fields are as the
// caller set them again when start returns.
func (g v1Group) start(cmd *exec.Cmd) error {
	if cmd.Path == "" || cmd.Err != nil {
		return cmd.Start() // reports cmd's own error and runs nothing
	}
	report, reportW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer report.Close()
	prog := cmd.Path
	if !strings.Contains(prog, "/") {
		// exec.Cmd runs such a path from Dir; a shell would search $PATH.
		prog = "./" + prog
	}
	origPath, origArgs, origExtra := cmd.Path, cmd.Args, cmd.ExtraFiles
	cmd.ExtraFiles = append(slices.Clip(origExtra), reportW)
	reportFD := 2 + len(cmd.ExtraFiles) // ExtraFiles start at descriptor 3
	args := []string{"/bin/sh", "-c", fmt.Sprintf(joinScript, joined, reportFD), "shelldon-cgroup-join", strconv.Itoa(len(g.dirs))}
	for _, d := range g.dirs {
		args = append(args, filepath.Join(d, "cgroup.procs"))
	}
	args = append(args, prog)
	if len(origArgs) > 1 {
		args = append(args, origArgs[1:]...)
	}
	cmd.Path, cmd.Args = "/bin/sh", args
	err = cmd.Start()
	reportW.Close()
	cmd.Path, cmd.Args, cmd.ExtraFiles = origPath, origArgs, origExtra
	if err != nil {
		return err
	}
	// The shell closes its end before exec, or dies: either way this ends.
	got, _ := io.ReadAll(report)
	if strings.TrimSpace(string(got)) != joined {
		// The shell said why on cmd's standard error.
		return fmt.Errorf("could not join the group: %w", cmd.Wait())
	}
	return nil
}

func (g v1Group) procs() ([]int, error) {
	// A process moved out of one hierarchy is still found through another.
	seen := map[int]bool{}
	var pids []int
	for _, s := range g.cg.Subsystems() {
		ps, err := g.cg.Processes(s.Name(), true)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if !seen[p.Pid] {
				seen[p.Pid] = true
				pids = append(pids, p.Pid)
			}
		}
	}
	return pids, nil
}

func (g v1Group) kill(deadline time.Time) (err error) {
	if g.freezer != "" {
		state := filepath.Join(g.freezer, "freezer.state")
		// Thaw even after a half-done freeze: a group left frozen would
		// never die.
		defer func() {
			if thawErr := os.WriteFile(state, []byte("THAWED"), 0); thawErr != nil && err == nil {
				err = fmt.Errorf("thaw: %w", thawErr)
			}
		}()
		if err := freezeV1(state, deadline); err != nil {
			return err
		}
	}
	pids, err := g.procs()
	if err != nil {
		return err
	}
	return sigkill(pids)
}

// freezeV1 stops every process in the group, so that none forks while the
// kill goes round. cgroup1's own Freeze waits without end, and a process
// stuck in the kernel can hold a group in FREEZING for good; after
// freezeWait the kill goes ahead on a partly frozen group — the signal
// lands when the group thaws.
func freezeV1(state string, deadline time.Time) error {
	if until := time.Now().Add(freezeWait); until.Before(deadline) {
		deadline = until
	}
	for {
		if err := os.WriteFile(state, []byte("FROZEN"), 0); err != nil {
			return fmt.Errorf("freeze: %w", err)
		}
		current, err := os.ReadFile(state)
		if err != nil {
			return fmt.Errorf("freeze: %w", err)
		}
		if strings.TrimSpace(string(current)) == "FROZEN" || time.Now().After(deadline) {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
}

func (g v1Group) stats() (Stats, error) {
	m, err := g.cg.Stat(cgroup1.IgnoreNotExist)
	if err != nil {
		return Stats{}, err
	}
	return Stats{
		MemoryPeak: int64(m.GetMemory().GetUsage().GetMax()),
		OOMKills:   int64(m.GetMemoryOomControl().GetOomKill()),
		CPUTime:    time.Duration(m.GetCPU().GetUsage().GetTotal()),
		Tasks:      int64(m.GetPids().GetCurrent()),
	}, nil
}

func (g v1Group) remove() error {
	if err := g.cg.Delete(); err != nil && !errors.Is(err, cgroup1.ErrCgroupDeleted) {
		return err
	}
	return nil
}
