package sandbox

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"shelldon/policy"
)

// View is how a run sees the workspace.
type View int

const (
	// ReadOnly shows the workspace as it is and refuses every write: for
	// commands the policy calls safe and for promoted self-coded tools.
	ReadOnly View = iota
	// Captured shows the workspace writable through an overlay whose upper
	// layer records every change. Nothing reaches the workspace until the
	// caller applies the [ChangeSet]: for commands the owner approved.
	Captured
	// Scratch shows the workspace writable and throws every write away
	// when the run ends: for the pytest gate.
	Scratch
)

func (v View) String() string {
	switch v {
	case ReadOnly:
		return "read-only"
	case Captured:
		return "captured"
	case Scratch:
		return "scratch"
	}
	return fmt.Sprintf("View(%d)", int(v))
}

// Limits bound one run. A zero field takes its value from
// [DefaultLimits].
type Limits struct {
	Memory int64         // bytes of memory, swap included where the host can say so
	CPU    float64       // CPUs of time per second: 0.5 is half of one CPU
	Tasks  int           // processes and threads at once
	Wall   time.Duration // wall-clock time, container start included
	Output int           // bytes of output kept; the tail is kept
	// Disk is the bytes a run may write in all: the workspace's
	// writable layer, /tmp and /var/tmp together. They live in memory
	// (a tmpfs) and count against Memory too, so Disk below Memory is
	// what lets a command that fills it be told the disk is full rather
	// than be killed for its memory.
	Disk int64
}

// DefaultLimits suit a command on a 416 MB board: room for pytest, not
// for a runaway.
var DefaultLimits = Limits{
	Memory: 256 << 20,
	CPU:    1,
	Tasks:  64,
	Wall:   30 * time.Second,
	Output: 64 << 10,
	Disk:   128 << 20,
}

// Bounds of what a spec may ask for. Below the minimums not even the
// container's own init fits; above the maximums a limit stops limiting.
const (
	minMemory    = 32 << 20
	minTasks     = 8
	maxWall      = time.Hour
	maxOutput    = 16 << 20
	minDisk      = 1 << 20
	maxDisk      = 16 << 30
	maxArgvBytes = 128 << 10 // one argument list; the kernel allows more, a sane command needs far less
	maxEnv       = 64
)

// Spec is one command to run in the sandbox.
type Spec struct {
	// Argv is the program and its arguments, run inside the container
	// without a shell unless the program is one.
	Argv []string
	// Workspace is the host directory seen as /workspace.
	Workspace string
	// Dir is the working directory, relative to the workspace; empty
	// means its root.
	Dir string
	// View says how the workspace is seen.
	View View
	// Network lets the command reach the network. Only the git verbs that
	// talk to a remote ask for it; every other run has no interface but
	// loopback.
	Network bool
	// Limits bound the run.
	Limits Limits
	// Env is extra environment, as KEY=VALUE, over a small fixed base
	// (PATH, HOME=/tmp, LANG=C.UTF-8).
	Env []string
	// Turn is the turn the command runs for, if any: it names the run's
	// unit (shelldon-run@<turn>-<n>) and goes in the audit log.
	Turn string
	// Binds are host directories shown read-only inside the container,
	// besides the workspace: a self-coded tool's verified code, say.
	Binds []Bind
}

// Bind shows the host directory Source at Target inside the container,
// read-only.
type Bind struct {
	Source, Target string
}

// ErrBadSpec means a spec cannot be run as written; the error says which
// field is wrong and what would be accepted.
var ErrBadSpec = errors.New("bad sandbox spec")

func badSpec(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadSpec, fmt.Sprintf(format, args...))
}

// withDefaults fills the zero limits from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	l.Memory = cmp.Or(l.Memory, d.Memory)
	l.CPU = cmp.Or(l.CPU, d.CPU)
	l.Tasks = cmp.Or(l.Tasks, d.Tasks)
	l.Wall = cmp.Or(l.Wall, d.Wall)
	l.Output = cmp.Or(l.Output, d.Output)
	l.Disk = cmp.Or(l.Disk, d.Disk)
	return l
}

func (l Limits) check() error {
	switch {
	case l.Memory < minMemory:
		return badSpec("memory limit %d bytes is below the %d MiB the container itself needs", l.Memory, minMemory>>20)
	case l.CPU < 0.01:
		return badSpec("CPU quota %g is below 0.01 of a CPU", l.CPU)
	case l.Tasks < minTasks:
		return badSpec("task limit %d is below the %d the container itself needs", l.Tasks, minTasks)
	case l.Wall < 100*time.Millisecond || l.Wall > maxWall:
		return badSpec("wall time %v is outside 100ms..%v", l.Wall, maxWall)
	case l.Output < 1 || l.Output > maxOutput:
		return badSpec("output cap %d bytes is outside 1..%d", l.Output, maxOutput)
	case l.Disk < minDisk || l.Disk > maxDisk:
		return badSpec("disk limit %d bytes is outside %d MiB..%d GiB", l.Disk, minDisk>>20, maxDisk>>30)
	}
	return nil
}

// check validates what can be validated without touching the host.
func (s Spec) check() error {
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return badSpec("no command to run (Argv is empty)")
	}
	size := 0
	for _, a := range s.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return badSpec("an argument holds a NUL byte, which no program can receive")
		}
		size += len(a) + 1
	}
	if size > maxArgvBytes {
		return badSpec("the command line is %d bytes, over the %d KiB limit; put long input in a file in the workspace and name the file instead", size, maxArgvBytes>>10)
	}
	if s.Workspace == "" || !path.IsAbs(s.Workspace) {
		return badSpec("workspace %q is not an absolute path", s.Workspace)
	}
	if s.Dir != "" {
		clean := path.Clean(s.Dir)
		if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
			return badSpec("working directory %q leaves the workspace; name it relative to the workspace root", s.Dir)
		}
		if reason, denied := policy.Denied(clean); denied {
			return badSpec("working directory %q is hidden from every run: %s", s.Dir, reason)
		}
	}
	if s.View < ReadOnly || s.View > Scratch {
		return badSpec("unknown view %v", s.View)
	}
	for _, b := range s.Binds {
		switch {
		case !path.IsAbs(b.Source) || !path.IsAbs(b.Target) || path.Clean(b.Target) != b.Target:
			return badSpec("bind %q:%q: both must be clean absolute paths", b.Source, b.Target)
		case strings.ContainsAny(b.Source+b.Target, ":,\x00"):
			return badSpec("bind %q:%q: a path with ':' or ',' cannot be bound", b.Source, b.Target)
		case b.Target == "/" || b.Target == containerWorkspace || strings.HasPrefix(b.Target, containerWorkspace+"/"):
			return badSpec("bind target %q would cover the root or the workspace", b.Target)
		}
	}
	if len(s.Env) > maxEnv {
		return badSpec("%d environment variables, over the limit of %d", len(s.Env), maxEnv)
	}
	for _, kv := range s.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsAny(kv, "\x00\n") {
			return badSpec("environment entry %q is not KEY=VALUE on one line", kv)
		}
	}
	return s.Limits.withDefaults().check()
}

// workdir is the working directory inside the container.
func (s Spec) workdir() string {
	if s.Dir == "" {
		return containerWorkspace
	}
	return path.Join(containerWorkspace, path.Clean(s.Dir))
}
