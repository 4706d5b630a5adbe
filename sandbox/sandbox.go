package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"shelldon/contracts"
	"shelldon/daemon/fetch"
	"shelldon/sandbox/cgroup"
	"shelldon/sandbox/image"
	"shelldon/tailbuf"
)

// Errors that name what the host lacks. Each error wrapping one of them
// says how to fix it.
var (
	// ErrNoNspawn means systemd-nspawn is not installed.
	ErrNoNspawn = errors.New("systemd-nspawn is not installed (apt-get install systemd-container)")
	// ErrNoImage means the sandbox image has not been built.
	ErrNoImage = errors.New("the sandbox image is not built (run `make image` or `shelldon image build`)")
	// ErrNotRoot means the sandbox runs without the privileges that
	// systemd-nspawn and overlay mounts need.
	ErrNotRoot = errors.New("the sandbox needs root (run shelldon as its system service, or as root)")
	// ErrWorkspace means the workspace directory cannot be used.
	ErrWorkspace = errors.New("workspace unusable")
)

// containerWorkspace is where the workspace appears inside the container.
const containerWorkspace = "/" + image.MountPoint

// DefaultRunDir holds the layers of runs in progress and of captured runs
// whose changes wait for the owner. It must be a file system that can be
// an overlay's upper layer (ext4, tmpfs; not overlayfs itself).
const DefaultRunDir = "/var/lib/shelldon/runs"

// Config says where the sandbox finds its parts.
type Config struct {
	// Image is the root file system every run starts from (the Root of a
	// built sandbox image). It is never written.
	Image string
	// RunDir is where runs keep their layers; DefaultRunDir when empty.
	RunDir string
	// Log receives one line per run; nil discards.
	Log *slog.Logger
	// Units, where systemd is PID 1, runs each container in a transient
	// unit that holds its limits (core passes its systemd client). Nil
	// puts each run in a control group of the sandbox's own.
	Units Units
	// Disk is the Limits.Disk of a spec that leaves it zero;
	// DefaultLimits.Disk when zero.
	Disk int64
	// Vault is the secrets directory. No run sees it, should it ever lie
	// inside a workspace or a bound directory. Empty means there is none.
	Vault string
	// User, when set, is every container's root on the host, whoever
	// owns the workspace: the container runs in a user namespace that
	// maps its root, and only its root, to this unprivileged user, and
	// sees the workspace through an idmapped mount on which the
	// workspace owner's files are that user's. Nil makes the container's
	// root the workspace's owner: the host's root, without a user
	// namespace, for a workspace of root's.
	User *User
}

// Units runs one command in a transient systemd unit.
type Units interface {
	// RunUnit starts run's unit, waits for its end (killing it when ctx
	// ends first), and says how it ended. An error means the unit could
	// not be started or followed.
	RunUnit(ctx context.Context, run UnitRun) (UnitExit, error)
}

// UnitRun is one command for [Units].
type UnitRun struct {
	Name string // shelldon-run@<id>.service
	Argv []string
	// Limits become the unit's MemoryMax (with no swap), CPUQuota,
	// TasksMax and RuntimeMaxSec.
	Limits Limits
	// Output receives the command's stderr, and its stdout unless Stdout
	// is set.
	Output *os.File
	// Input, when set, is the command's stdin; nil is /dev/null.
	Input *os.File
	// Stdout, when set, receives the command's stdout apart from Output.
	Stdout *os.File
	// NetworkNamespace, when not empty, is a network namespace to start
	// the command in (the unit's NetworkNamespacePath); the unit must
	// fail rather than start without it.
	NetworkNamespace string
}

// UnitExit is how a unit ended, in systemd's words.
type UnitExit struct {
	// Result is the unit's Result: success, exit-code, signal, timeout,
	// oom-kill.
	Result string
	// Code is the exit status, or the signal.
	Code int
	// MemoryPeak is the unit's peak memory, where systemd says.
	MemoryPeak int64
}

// Sandbox runs commands in throwaway systemd-nspawn containers.
type Sandbox struct {
	image  string
	runDir string
	nspawn string
	units  Units // nil: runs go in control groups of their own
	log    *slog.Logger
	disk   int64
	vault  string
	user   *User
	idmaps idmaps
	looks  gitLooks // what each repository's look found, while its state holds
}

// New checks that the host can run sandboxed commands and returns the
// sandbox, or an error wrapping [ErrNotRoot], [ErrNoNspawn] or [ErrNoImage].
func New(cfg Config) (*Sandbox, error) {
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	nspawn, err := exec.LookPath("systemd-nspawn")
	if err != nil {
		return nil, ErrNoNspawn
	}
	if fi, err := os.Stat(filepath.Join(cfg.Image, "usr", "bin", "python3")); cfg.Image == "" || err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: no image at %q", ErrNoImage, cfg.Image)
	}
	if cfg.User != nil && cfg.User.UID == 0 {
		return nil, errRootUser
	}
	s := &Sandbox{image: cfg.Image, runDir: cfg.RunDir, nspawn: nspawn, units: cfg.Units, log: cfg.Log, disk: cfg.Disk, vault: cfg.Vault, user: cfg.User}
	if s.runDir == "" {
		s.runDir = DefaultRunDir
	}
	if err := (Limits{Disk: s.disk}).withDefaults().check(); err != nil {
		return nil, fmt.Errorf("sandbox disk: %w", err)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	for what, p := range map[string]string{"image": s.image, "run directory": s.runDir} {
		if err := checkMountablePath(what, p); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(s.runDir, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox run directory: %w", err)
	}
	if err := quietPropagationDir(); err != nil {
		s.log.Warn("nspawn will complain about its propagation directory on every run", "err", err)
	}
	return s, nil
}

// Result is what one run did.
type Result struct {
	// ExitCode is the command's exit status; -1 when it was killed
	// (timeout, cancellation, or the container as a whole).
	ExitCode int
	// Output is the tail of stdout and stderr together, at most
	// Limits.Output bytes, exactly as written (not always UTF-8; see
	// [Result.Text]).
	Output []byte
	// OutputDropped counts the bytes cut before Output.
	OutputDropped int64
	Duration      time.Duration
	// TimedOut is true when the wall-time limit killed the run.
	TimedOut bool
	// OutOfMemory is true when the memory limit killed a process of the
	// run.
	OutOfMemory bool
	// MemoryPeak is the run's peak memory in bytes, where the host
	// measures it.
	MemoryPeak int64
	// Enforced names the limits that held: "wall", "output" and "disk"
	// always, "memory", "tasks" and "cpu" where the host could enforce
	// them.
	Enforced []string
	// UserNamespace is true when the container's root was an unprivileged
	// user on the host (the workspace's owner); false when the workspace
	// belongs to root and the container ran without one.
	UserNamespace bool
	// DiskFull is true when the run's writes took all of Limits.Disk: a
	// write of the command's may have been cut short.
	DiskFull bool
	// Changes is what a Captured run changed, waiting to be applied or
	// discarded; nil for other views.
	Changes *ChangeSet
	// Withheld says, a sentence each for the model and the owner, what
	// the run could not see beyond the credentials every run is kept
	// from: a repository whose git objects were hidden, and why.
	Withheld []string
}

// Run runs spec's command in a fresh container and returns what it did.
// An error means the run could not happen or its result could not be
// collected (an error wrapping [ErrBadSpec], [ErrWorkspace], or the
// host's failure); a command that fails, times out or runs out of memory
// is a Result, not an error. Nothing the command started outlives Run.
func (s *Sandbox) Run(ctx context.Context, spec Spec) (res Result, err error) {
	return s.run(ctx, spec, nil)
}

// Talk runs spec's command as [Sandbox.Run] does, but with its stdin and
// stdout given to talk while it runs: for one exchange with a program
// that speaks over them, an MCP server's call whose writes must come
// back as a change set (a [Process] cannot have a Captured view). Once
// talk returns, the command's stdin is closed (talk may close it
// first, and either end: Talk closes them again), which tells it to end,
// and Talk waits for it as Run does, within the spec's limits; the
// result is Run's, its Output the command's stderr. An error of talk's
// is returned with the result, which stays the caller's to discard.
func (s *Sandbox) Talk(ctx context.Context, spec Spec, talk func(stdin io.WriteCloser, stdout io.ReadCloser) error) (Result, error) {
	if talk == nil {
		return Result{}, badSpec("no exchange to have with the command")
	}
	return s.run(ctx, spec, talk)
}

// run is Run, and Talk when talk is set.
func (s *Sandbox) run(ctx context.Context, spec Spec, talk func(stdin io.WriteCloser, stdout io.ReadCloser) error) (res Result, err error) {
	r, lim, err := s.prepare(ctx, spec)
	if err != nil {
		return Result{}, err
	}
	defer func() {
		if cErr := r.close(); cErr != nil && err == nil {
			err = cErr
		}
	}()
	id, fsys, c, upper, ws := r.id, r.fsys, r.c, r.upper, r.ws

	var talked error
	if talk == nil {
		res, err = s.execute(ctx, id, spec, lim, c, stdio{})
	} else {
		res, talked, err = s.executeTalking(ctx, id, spec, lim, c, talk)
	}
	if err != nil {
		return Result{}, fmt.Errorf("sandbox run %s: %w", id, err)
	}
	defer func() {
		if err == nil && talked != nil {
			err = talked
		}
	}()
	res.Withheld = c.git.withheld
	if res.DiskFull, err = fsys.full(); err != nil {
		return Result{}, fmt.Errorf("sandbox run %s: %w", id, err)
	}
	log := s.log
	if spec.Turn != "" { // a run for no turn (the gate, `shelldon sandbox run`) names none
		log = log.With("turn", spec.Turn)
	}
	log.Info("sandboxed command", contracts.AuditEvent, contracts.EventSandboxRun, "run", id,
		"view", spec.View.String(), "command", quoteArgv(spec.Argv), "network", spec.Network,
		"exit", res.ExitCode, "took", res.Duration.Round(time.Millisecond), "timed_out", res.TimedOut,
		"oom", res.OutOfMemory, "disk_full", res.DiskFull, "memory_peak", res.MemoryPeak, "output_bytes", int64(len(res.Output))+res.OutputDropped)

	if spec.View == Captured {
		if err := fsys.unmountOverlays(); err != nil {
			return Result{}, fmt.Errorf("sandbox run %s: %w", id, err)
		}
		if err := c.git.strip(upper); err != nil {
			return Result{}, fmt.Errorf("sandbox run %s: %w", id, err)
		}
		changes, err := scanUpper(upper, ws)
		if err != nil {
			return Result{}, fmt.Errorf("sandbox run %s: reading its changes: %w", id, err)
		}
		layer, err := fsys.detach()
		if err != nil {
			return Result{}, fmt.Errorf("sandbox run %s: %w", id, err)
		}
		res.Changes = newLayerChangeSet(layer, ws, changes)
	}
	return res, nil
}

// prepared is one run's setup on the host: its directory, its file
// system, what its container is given, and its way out.
type prepared struct {
	id     string
	dir    string
	fsys   *runFS
	c      container
	upper  string // the writable layer, "" for a read-only view
	ws     string // the workspace, resolved
	egress *egress
}

// prepare checks spec and sets up its run: the run's directory and file
// system, the view of the workspace and the bound directories, and the
// network namespace with its proxy when the spec asks for the network.
// On failure nothing of it is left.
func (s *Sandbox) prepare(ctx context.Context, spec Spec) (_ *prepared, _ Limits, err error) {
	if spec.Limits.Disk == 0 {
		spec.Limits.Disk = s.disk
	}
	if err := spec.check(); err != nil {
		return nil, Limits{}, err
	}
	lim := spec.Limits.withDefaults()
	ws, owner, err := openWorkspace(spec.Workspace, spec.Dir)
	if err != nil {
		return nil, Limits{}, err
	}
	r := &prepared{id: newRunID(), ws: ws}
	r.dir = filepath.Join(s.runDir, r.id)
	if err := os.Mkdir(r.dir, 0o700); err != nil {
		return nil, Limits{}, fmt.Errorf("sandbox run %s: %w", r.id, err)
	}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if r.fsys, err = mountRunFS(r.dir, lim.Disk); err != nil {
		return nil, Limits{}, fmt.Errorf("sandbox run %s: %w", r.id, err)
	}
	lower, root, err := s.asRoot(r.fsys, ws, owner)
	if err != nil {
		return nil, Limits{}, fmt.Errorf("sandbox run %s: %w", r.id, err)
	}
	if r.c, r.upper, err = s.view(ctx, r.fsys, lower, root, spec, r.id); err != nil {
		return nil, Limits{}, fmt.Errorf("sandbox run %s: %w", r.id, err)
	}
	if spec.Network {
		if r.egress, err = startEgress(fetch.Dialer{}.DialContext, s.log.With("turn", spec.Turn, "run", r.id)); err != nil {
			return nil, Limits{}, fmt.Errorf("sandbox run %s: %w", r.id, err)
		}
		r.c.netns, r.c.env = r.egress.ns, append(r.c.env, r.egress.env()...)
	}
	return r, lim, nil
}

// close ends the run's way out, takes its file system down and removes
// its directory.
func (r *prepared) close() error {
	if r.egress != nil {
		r.egress.close()
	}
	var err error
	if r.fsys != nil {
		if uErr := r.fsys.unmount(); uErr != nil {
			err = fmt.Errorf("sandbox run %s: %w", r.id, uErr)
		}
	}
	if rmErr := removeRunDir(r.dir); rmErr != nil && err == nil {
		err = rmErr
	}
	return err
}

// view builds, in the run's file system, what the container is given of
// the host: an overlay of the workspace ws (as the container's root o
// sees it, [Sandbox.asRoot]) over the layer that masks its credentials,
// those git's objects hold included (gitmask.go), with a writable layer
// unless the view is read-only; an overlay of each bound directory over
// its mask; /tmp and /var/tmp. It returns the writable layer, "" for a
// read-only view.
func (s *Sandbox) view(ctx context.Context, fsys *runFS, ws string, o owner, spec Spec, id string) (container, string, error) {
	c := container{owner: o, writable: spec.View != ReadOnly}
	vault, err := vaultID(s.vault)
	if err != nil {
		return c, "", err
	}
	mask := fsys.path(maskName)
	repos, err := buildMaskFindingRepos(mask, ws, vault, maxMaskEntries)
	if err != nil {
		return c, "", err
	}
	if c.git, err = s.maskGit(ctx, fsys, ws, o, mask, repos, spec, id); err != nil {
		return c, "", err
	}
	c.binds, c.env = c.git.binds, c.git.env
	var upper, work string
	if c.writable {
		var st unix.Stat_t
		if err := unix.Stat(ws, &st); err != nil {
			return c, "", fmt.Errorf("%w: %v", ErrWorkspace, err)
		}
		// The upper layer is the container's root's to write, and its
		// root is what the container sees of the workspace's.
		if upper, err = fsys.mkdir(upperName, os.FileMode(st.Mode&0o7777), o); err != nil {
			return c, "", err
		}
		if work, err = fsys.mkdir(workName, 0o700, owner{}); err != nil {
			return c, "", err
		}
	}
	if c.workspace, err = fsys.overlay(mergedName, []string{mask, ws}, upper, work); err != nil {
		return c, "", err
	}
	for i, b := range spec.Binds {
		source, err := s.boundAsRoot(fsys, fmt.Sprintf("%s-%d", idmapBind, i), b.Source)
		if err != nil {
			return c, "", err
		}
		mask := fsys.path(fmt.Sprintf("%s-%d", maskName, i))
		if err := buildMask(mask, source, vault, maxMaskEntries); err != nil {
			return c, "", err
		}
		bound, err := fsys.overlay(fmt.Sprintf("bind-%d", i), []string{mask, source}, "", "")
		if err != nil {
			return c, "", err
		}
		c.binds = append(c.binds, Bind{Source: bound, Target: b.Target})
	}
	if c.tmp, err = fsys.mkdir(tmpName, 0o1777, o); err != nil {
		return c, "", err
	}
	if c.varTmp, err = fsys.mkdir(varTmpName, 0o1777, o); err != nil {
		return c, "", err
	}
	return c, upper, nil
}

// executeTalking is execute with the command's stdin and stdout piped to
// talk; once talk is done the command's stdin is closed and execute is
// waited for. It returns talk's error apart from execute's.
func (s *Sandbox) executeTalking(ctx context.Context, id string, spec Spec, lim Limits, c container, talk func(io.WriteCloser, io.ReadCloser) error) (Result, error, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return Result{}, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return Result{}, nil, err
	}
	type executed struct {
		res Result
		err error
	}
	done := make(chan executed, 1)
	go func() {
		res, err := s.execute(ctx, id, spec, lim, c, stdio{in: inR, out: outW})
		// The command is gone: its stdout ends for talk, and a write to
		// its stdin fails rather than wait.
		outW.Close()
		inR.Close()
		done <- executed{res, err}
	}()
	talked := talk(inW, outR)
	inW.Close()
	ran := <-done
	outR.Close()
	return ran.res, talked, ran.err
}

// stdio is what a container's command reads and writes besides the
// output the sandbox keeps.
type stdio struct {
	// in is the command's stdin; nil is /dev/null.
	in *os.File
	// out is the command's stdout; nil sends it with stderr to the
	// output the sandbox keeps (Result.Output).
	out *os.File
}

// execute starts the container and waits for it within the limits, in a
// transient unit where the sandbox has systemd's, in a control group of
// its own otherwise.
func (s *Sandbox) execute(ctx context.Context, id string, spec Spec, lim Limits, c container, std stdio) (Result, error) {
	out := tailbuf.New(lim.Output)
	res := Result{Enforced: []string{"wall", "output", "disk"}, UserNamespace: c.owner.uid != 0}
	argv := append([]string{s.nspawn}, nspawnArgs(s.image, spec, c)...)
	started := time.Now()
	var err error
	if s.units != nil {
		err = s.executeInUnit(ctx, id, spec, argv, lim, c.netns, out, std, &res)
	} else {
		err = s.executeInGroup(ctx, id, argv, lim, c.netns, out, std, &res)
	}
	if err != nil {
		return Result{}, err
	}
	res.Duration = time.Since(started)
	res.Output, res.OutputDropped = out.Bytes()
	if res.TimedOut || ctx.Err() != nil {
		res.ExitCode = -1
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

// executeInUnit runs argv as shelldon-run@<id>.service: systemd holds
// every limit, the wall time included, and the output comes back through
// a pipe whose write end systemd is handed.
func (s *Sandbox) executeInUnit(ctx context.Context, id string, spec Spec, argv []string, lim Limits, netns *os.File, out io.Writer, std stdio, res *Result) error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("output pipe: %w", err)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		io.Copy(out, r)
		r.Close()
	}()
	run := UnitRun{Name: unitName(spec.Turn, id), Argv: argv, Limits: lim, Output: w, Input: std.in, Stdout: std.out}
	if netns != nil {
		run.NetworkNamespace = namespacePath(netns)
	}
	exit, err := s.units.RunUnit(ctx, run)
	w.Close() // with systemd's copy gone too, the copy ends
	<-copied
	if err != nil {
		return fmt.Errorf("sandbox unit: %w", err)
	}
	// systemd takes MemoryMax silently where the unit's control group has
	// no memory controller (a Pi kernel without cgroup_enable=memory, a
	// systemd in a container on a cgroup v1 host), and then measures no
	// peak either: a memory limit held only where memory was measured.
	if exit.MemoryPeak > 0 {
		res.Enforced = append(res.Enforced, "memory", "swap")
	}
	res.Enforced = append(res.Enforced, "tasks", "cpu")
	res.ExitCode, res.MemoryPeak = exit.Code, exit.MemoryPeak
	switch exit.Result {
	case "timeout":
		res.TimedOut = true
	case "oom-kill":
		res.OutOfMemory, res.ExitCode = true, -1
	case "signal":
		res.ExitCode = -1
	}
	return nil
}

// unitName is a run's unit: shelldon-run@<turn>-<n>.service for the nth
// run of a turn, so that `systemctl list-units 'shelldon-run@<turn>-*'`
// finds a turn's commands; shelldon-run@<run id>.service outside a turn.
func unitName(turn, id string) string {
	if turn == "" {
		return "shelldon-run@" + id + ".service"
	}
	return fmt.Sprintf("shelldon-run@%s-%d.service", turn, runsOfTurn(turn))
}

// runsOfTurn counts a turn's runs, from 1.
func runsOfTurn(turn string) int {
	turnRuns.mu.Lock()
	defer turnRuns.mu.Unlock()
	if turnRuns.turn != turn {
		turnRuns.turn, turnRuns.n = turn, 0
	}
	turnRuns.n++
	return turnRuns.n
}

// turnRuns is the count for the turn now running: turns run one at a
// time, so one counter is enough.
var turnRuns struct {
	mu   sync.Mutex
	turn string
	n    int
}

// executeInGroup runs argv directly, in a control group of the run's own
// that holds the limits the host can enforce, and keeps the wall time
// itself.
func (s *Sandbox) executeInGroup(ctx context.Context, id string, argv []string, lim Limits, netns *os.File, out io.Writer, std stdio, res *Result) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	group, err := cgroup.New("run-"+id, cgroup.Limits{MemoryMax: lim.Memory, TasksMax: int64(lim.Tasks), CPUQuota: lim.CPU})
	if err != nil {
		s.log.Warn("running without memory, task and CPU limits", "run", id, "err", err)
		group = nil
	} else {
		defer group.Delete()
		res.Enforced = append(res.Enforced, group.Enforced()...)
	}
	// nspawn needs nothing from shelldon's environment, which may hold a
	// provider key in development.
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SYSTEMD_LOG_LEVEL=warning"}
	cmd.Stdout, cmd.Stderr = out, out // one pipe, so the order of the two streams holds
	if std.out != nil {
		cmd.Stdout = std.out
	}
	if std.in != nil { // a nil *os.File in the interface would not be /dev/null
		cmd.Stdin = std.in
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Should something inherit the pipe and outlive the container, do not
	// wait for it forever.
	cmd.WaitDelay = 5 * time.Second

	start := cmd.Start
	if group != nil {
		start = func() error { return group.Start(cmd) }
	}
	if netns != nil {
		err = startIn(netns, start)
	} else {
		err = start()
	}
	if err != nil {
		return fmt.Errorf("start systemd-nspawn: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	wall := time.NewTimer(lim.Wall)
	defer wall.Stop()
	var waitErr error
	select {
	case waitErr = <-done:
	case <-wall.C:
		res.TimedOut = true
		waitErr = s.stop(cmd, group, id, done)
	case <-ctx.Done():
		waitErr = s.stop(cmd, group, id, done)
	}
	if group != nil {
		// With --as-pid2 the container's end ends all of it; a group
		// that still holds something is emptied all the same.
		if err := group.Kill(); err != nil {
			s.log.Error("emptying the run's control group failed", "run", id, "err", err)
		}
		if st, err := group.Stats(); err == nil {
			res.MemoryPeak, res.OutOfMemory = st.MemoryPeak, st.OOMKills > 0
		}
	}
	res.ExitCode = exitCode(waitErr)
	return nil
}

// stop ends a run early: the whole control group at once where there is
// one; otherwise nspawn is asked to kill its container (--kill-signal)
// and is killed itself if it does not manage.
func (s *Sandbox) stop(cmd *exec.Cmd, group *cgroup.Group, id string, done <-chan error) error {
	if group != nil {
		if err := group.Kill(); err != nil {
			s.log.Error("killing the run's control group failed", "run", id, "err", err)
		}
	} else {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return <-done
	}
}

// quoteArgv writes an argument list so that the log shows exactly what
// ran, each argument quoted where it needs to be.
func quoteArgv(argv []string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			quoted[i] = a
		} else {
			quoted[i] = strconv.Quote(a)
		}
	}
	return strings.Join(quoted, " ")
}

func exitCode(err error) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	default:
		return -1
	}
}

// owner is who owns the workspace on the host.
type owner struct{ uid, gid uint32 }

// openWorkspace resolves the workspace to a real directory and checks
// that the working directory exists inside it without leaving it.
func openWorkspace(dir, sub string) (string, owner, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", owner{}, fmt.Errorf("%w: %v (create the directory, or fix workspace in the configuration)", ErrWorkspace, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", owner{}, fmt.Errorf("%w: %v", ErrWorkspace, err)
	}
	if !fi.IsDir() {
		return "", owner{}, fmt.Errorf("%w: %s is not a directory", ErrWorkspace, dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", owner{}, fmt.Errorf("%w: cannot tell who owns %s", ErrWorkspace, dir)
	}
	if sub != "" {
		root, err := os.OpenRoot(real)
		if err != nil {
			return "", owner{}, fmt.Errorf("%w: %v", ErrWorkspace, err)
		}
		defer root.Close()
		if sfi, err := root.Stat(filepath.Clean(sub)); err != nil || !sfi.IsDir() {
			return "", owner{}, badSpec("working directory %q is not a directory inside the workspace", sub)
		}
	}
	return real, owner{uid: st.Uid, gid: st.Gid}, nil
}

func newRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// removeRunDir removes a run's directory, which holds nothing once the
// run's file system is off it; it refuses while the file system is still
// mounted there.
func removeRunDir(dir string) error {
	if mounted, err := isMountPoint(dir); err != nil || mounted {
		return fmt.Errorf("not removing run directory %s: its file system is still mounted (%v)", dir, err)
	}
	if err := os.Remove(dir); err != nil {
		return fmt.Errorf("remove run directory: %w", err)
	}
	return nil
}
