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
)

// v1Group is a group on a cgroup v1 host: one directory per hierarchy.
type v1Group struct {
	dirs []v1Dir
}

// v1Dir is a group's directory in the hierarchy of one controller.
type v1Dir struct{ controller, dir string }

// dir is the group's directory in controller's hierarchy, "" when it
// has none there.
func (g v1Group) dir(controller string) string {
	for _, d := range g.dirs {
		if d.controller == controller {
			return d.dir
		}
	}
	return ""
}

// The v1 controllers a group uses: memory and pids, which New requires,
// and cpu, cpuacct and freezer where they are mounted.
const (
	v1Memory  = "memory"
	v1Pids    = "pids"
	v1CPU     = "cpu"
	v1CPUAcct = "cpuacct"
	v1Freezer = "freezer"
)

// v1Hierarchies are the controllers a group uses whose hierarchies are
// mounted under root (each at root/<controller>; co-mounted ones, such as
// cpu,cpuacct, through the links a distribution makes).
func v1Hierarchies(root string) []string {
	var mounted []string
	for _, c := range []string{v1Memory, v1Pids, v1CPU, v1CPUAcct, v1Freezer} {
		if _, err := os.Lstat(filepath.Join(root, c)); err == nil {
			mounted = append(mounted, c)
		}
	}
	return mounted
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

func (h host) newV1(name string, l Limits) (_ *Group, err error) {
	nested := h.nestV1(groupSuffix(name))
	var g v1Group
	var memoryPath string
	for _, c := range v1Hierarchies(h.root) {
		p, err := nested(c)
		if errors.Is(err, errNotInHierarchy) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("find own cgroup: %w", err)
		}
		dir := filepath.Join(h.root, c, p)
		if _, err := os.Lstat(dir); err == nil {
			return nil, fmt.Errorf("%s: %w", dir, fs.ErrExist)
		}
		g.dirs = append(g.dirs, v1Dir{c, dir})
		if c == v1Memory {
			memoryPath = p
		}
	}
	var missing []string
	for _, c := range []string{v1Memory, v1Pids} {
		if g.dir(c) == "" {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: no %s hierarchy under %s", ErrUnavailable, strings.Join(missing, " or "), h.root)
	}

	// Swap counts against the limit only where the kernel accounts it
	// (no swapaccount=0 on its command line).
	_, swapErr := os.Stat(filepath.Join(h.root, v1Memory, "memory.memsw.limit_in_bytes"))
	swap := l.MemoryMax > 0 && swapErr == nil
	// Without CFS bandwidth control in the kernel there is no quota file.
	_, quotaErr := os.Stat(filepath.Join(h.root, v1CPU, "cpu.cfs_quota_us"))
	cpu := l.CPUQuota > 0 && g.dir(v1CPU) != "" && quotaErr == nil
	settings := map[string][]setting{}
	if l.MemoryMax > 0 {
		// The limit before the limit of memory and swap, which may not be below it.
		settings[v1Memory] = append(settings[v1Memory], setting{"memory.limit_in_bytes", strconv.FormatInt(l.MemoryMax, 10)})
	}
	if swap {
		settings[v1Memory] = append(settings[v1Memory], setting{"memory.memsw.limit_in_bytes", strconv.FormatInt(l.MemoryMax, 10)})
	}
	if l.TasksMax > 0 {
		settings[v1Pids] = []setting{{"pids.max", strconv.FormatInt(l.TasksMax, 10)}}
	}
	if cpu {
		settings[v1CPU] = []setting{{"cpu.cfs_period_us", strconv.Itoa(cpuPeriod)}, {"cpu.cfs_quota_us", strconv.FormatInt(quotaMicros(l), 10)}}
	}

	defer func() {
		if err != nil {
			// The directories are empty, so rmdir takes them.
			for _, d := range g.dirs {
				_ = os.Remove(d.dir)
			}
		}
	}()
	for _, d := range g.dirs {
		if err := os.MkdirAll(d.dir, 0o755); err != nil {
			return nil, unavailableIfDenied(err)
		}
		if err := write(d.dir, settings[d.controller]...); err != nil {
			return nil, unavailableIfDenied(err)
		}
	}
	return &Group{path: memoryPath, enforced: enforcedList(l, swap, cpu), b: g}, nil
}

func loadV1(root, p string) (backend, error) {
	var g v1Group
	for _, c := range v1Hierarchies(root) {
		dir := filepath.Join(root, c, p)
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, err
		}
		g.dirs = append(g.dirs, v1Dir{c, dir})
	}
	if len(g.dirs) == 0 {
		return nil, fmt.Errorf("%w: in no v1 hierarchy under %s", fs.ErrNotExist, root)
	}
	return g, nil
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
		args = append(args, filepath.Join(d.dir, "cgroup.procs"))
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
	for _, d := range g.dirs {
		ps, err := groupProcs(d.dir)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if !seen[p] {
				seen[p] = true
				pids = append(pids, p)
			}
		}
	}
	return pids, nil
}

func (g v1Group) kill(deadline time.Time) (err error) {
	if freezer := g.dir(v1Freezer); freezer != "" {
		state := filepath.Join(freezer, "freezer.state")
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
	memory := g.dir(v1Memory)
	peak, errPeak := readCounter(memory, "memory.max_usage_in_bytes")
	oomKills, errOOM := readKeyed(memory, "memory.oom_control", "oom_kill")
	cpuNanos, errCPU := readCounter(g.dir(v1CPUAcct), "cpuacct.usage")
	tasks, errTasks := readCounter(g.dir(v1Pids), "pids.current")
	if err := errors.Join(errPeak, errOOM, errCPU, errTasks); err != nil {
		return Stats{}, err
	}
	return Stats{
		MemoryPeak: int64(peak),
		OOMKills:   int64(oomKills),
		CPUTime:    time.Duration(cpuNanos),
		Tasks:      int64(tasks),
	}, nil
}

func (g v1Group) remove() error {
	var errs []error
	for _, d := range g.dirs {
		errs = append(errs, removeGroupDir(d.dir))
	}
	return errors.Join(errs...)
}
