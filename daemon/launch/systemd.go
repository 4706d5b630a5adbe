package launch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"

	"shelldon/daemon/procmem"
	"shelldon/sandbox"
)

// ErrNoSystemd means there is no systemd to ask for units: no system bus,
// or nothing answering as systemd on it. Core then uses [Child].
var ErrNoSystemd = errors.New("systemd is not reachable")

// TurnSlice is the slice every turn's unit runs in (units/shelldon-turns.slice).
const TurnSlice = "shelldon-turns.slice"

// unitPrefix and unitSuffix make a turn's unit name: shelldon-turn@<turn>.service.
const (
	unitPrefix = "shelldon-turn@"
	unitSuffix = ".service"
)

// validInstance reports whether a turn id can become a unit instance
// name as it is: 1 to 200 of what systemd allows there without escaping.
// (A regexp with {1,200} compiles to 200 copies of the class, and every
// process of the one binary, each worker included, would pay for it at
// start.)
func validInstance(id string) bool {
	if len(id) == 0 || len(id) > 200 {
		return false
	}
	for _, c := range []byte(id) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("_.:-", c) >= 0:
		default:
			return false
		}
	}
	return true
}

const (
	// defaultJobTimeout bounds the wait for a start job's result.
	defaultJobTimeout = 30 * time.Second
	// The end of a unit is noticed by its PropertiesChanged signal; the
	// poll that backs it up (signals are dropped when a buffer is full)
	// starts fast for short workers and backs off to pollMax.
	pollMin = 50 * time.Millisecond
	pollMax = 2 * time.Second
	// propertyTimeout bounds one property read.
	propertyTimeout = 10 * time.Second
	// wakeBuffer is how many property changes may queue between the
	// signal dispatcher and the fan-out to handles.
	wakeBuffer = 256
)

// SystemdOptions says how the systemd launcher shapes each turn's unit.
type SystemdOptions struct {
	// User runs workers as this user; "" leaves systemd's default, root.
	User string
	// JobTimeout bounds the wait for a start job; 0 means 30s.
	JobTimeout time.Duration
}

// Systemd starts each worker as a transient unit shelldon-turn@<turn>.service
// in [TurnSlice], asking systemd over D-Bus. The unit carries the limits,
// the sandboxing switches and the reap deadline (RuntimeMaxUSec), so
// systemd enforces them even if core dies.
//
// Units are started with AddRef, so systemd keeps a finished unit until
// its result has been read; they are then released, and with the default
// CollectMode a unit that succeeded is collected while a failed one stays
// visible (`systemctl --failed`) until reset.
type Systemd struct {
	conn *sddbus.Conn
	// methods is the connection go-systemd sends its calls on: the one
	// holding the units' references, so the one that must release them.
	methods *godbus.Conn
	// signals carries the units' PropertiesChanged.
	signals *godbus.Conn
	opts    SystemdOptions

	mu      sync.Mutex
	watched map[godbus.ObjectPath]chan struct{} // unit → wake-up of its watcher
}

// NewSystemd connects to systemd through dial, which must return a fresh,
// authenticated connection (Hello done) each time it is called; nil dials
// the system bus. An error wrapping [ErrNoSystemd] means systemd cannot
// be asked.
func NewSystemd(ctx context.Context, dial func() (*godbus.Conn, error), opts SystemdOptions) (s *Systemd, err error) {
	if dial == nil {
		dial = dialSystemBus
	}
	if opts.JobTimeout <= 0 {
		opts.JobTimeout = defaultJobTimeout
	}
	s = &Systemd{opts: opts, watched: map[godbus.ObjectPath]chan struct{}{}}
	// go-systemd dials its method connection first, then its signal one.
	s.conn, err = sddbus.NewConnection(func() (*godbus.Conn, error) {
		c, err := dial()
		if err == nil && s.methods == nil {
			s.methods = c
		}
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("%w: connect: %v", ErrNoSystemd, err)
	}
	defer func() {
		if err != nil {
			s.conn.Close()
		}
	}()
	state, err := s.conn.SystemStateContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: ask its state: %v", ErrNoSystemd, err)
	}
	if v, _ := state.Value.Value().(string); v == "stopping" {
		return nil, fmt.Errorf("%w: it is shutting down", ErrNoSystemd)
	}
	// go-systemd's own properties subscriber races with its dispatcher
	// (v22.5.0), so the end of units is heard on a connection of our own.
	if s.signals, err = dial(); err != nil {
		return nil, fmt.Errorf("%w: connect for signals: %v", ErrNoSystemd, err)
	}
	if err := s.subscribe(); err != nil {
		s.signals.Close()
		return nil, fmt.Errorf("subscribe to systemd's signals: %w", err)
	}
	return s, nil
}

func dialSystemBus() (*godbus.Conn, error) {
	conn, err := godbus.SystemBusPrivate()
	if err != nil {
		return nil, fmt.Errorf("system bus: %w", err)
	}
	if err := conn.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("system bus: authenticate: %w", err)
	}
	if err := conn.Hello(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("system bus: hello: %w", err)
	}
	return conn, nil
}

// subscribe has systemd send unit property changes to the signal
// connection and starts handing them to the units' watchers.
func (s *Systemd) subscribe() error {
	err := s.signals.AddMatchSignal(
		godbus.WithMatchInterface("org.freedesktop.DBus.Properties"),
		godbus.WithMatchMember("PropertiesChanged"),
		godbus.WithMatchPathNamespace("/org/freedesktop/systemd1/unit"))
	if err != nil {
		return err
	}
	if err := s.signals.Object(systemdBusName, systemdPath).Call("org.freedesktop.systemd1.Manager.Subscribe", 0).Err; err != nil {
		return err
	}
	signals := make(chan *godbus.Signal, wakeBuffer)
	s.signals.Signal(signals)
	go s.fanOut(signals)
	return nil
}

// fanOut wakes the watcher of every unit whose properties changed. A
// wake-up it has to drop is covered by the watcher's poll.
func (s *Systemd) fanOut(signals <-chan *godbus.Signal) {
	for sig := range signals {
		s.mu.Lock()
		wake := s.watched[sig.Path]
		s.mu.Unlock()
		if wake != nil {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}
}

// Close ends the connections; units still running keep running, and lose
// the reference that kept them for their result.
func (s *Systemd) Close() {
	s.conn.Close()
	s.signals.Close()
}

// Name implements [Launcher].
func (*Systemd) Name() string { return "systemd" }

// leftoverPatterns match the units a core starts: turn workers and
// sandboxed commands.
var leftoverPatterns = []string{unitPrefix + "*" + unitSuffix, "shelldon-run@*.service"}

// StopLeftovers stops the turn and command units an earlier core left
// running when it died mid-turn: no core can take their results, and
// they must not hold memory and the workspace beside the new core's
// turns. It returns the units it stopped.
func (s *Systemd) StopLeftovers(ctx context.Context) ([]string, error) {
	units, err := s.conn.ListUnitsByPatternsContext(ctx, []string{"active", "activating", "reloading"}, leftoverPatterns)
	if err != nil {
		return nil, fmt.Errorf("list leftover units: %w", err)
	}
	var stopped []string
	var errs []error
	for _, u := range units {
		done := make(chan string, 1)
		if _, err := s.conn.StopUnitContext(ctx, u.Name, "replace", done); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", u.Name, err))
			continue
		}
		select {
		case <-done:
		case <-ctx.Done():
			return stopped, ctx.Err()
		}
		stopped = append(stopped, u.Name)
	}
	return stopped, errors.Join(errs...)
}

// UnitName is the unit of a turn's worker.
func UnitName(turn string) string { return unitPrefix + turn + unitSuffix }

// Start implements [Launcher].
func (s *Systemd) Start(ctx context.Context, spec Spec) (Handle, error) {
	if len(spec.Argv) == 0 {
		return nil, fmt.Errorf("start worker for turn %s: empty command", spec.Turn)
	}
	if spec.Reap <= 0 {
		return nil, fmt.Errorf("start worker for turn %s: no reap deadline", spec.Turn)
	}
	if !validInstance(spec.Turn) {
		return nil, fmt.Errorf("start worker for turn %q: not usable in a unit name", spec.Turn)
	}
	h, err := s.launch(ctx, UnitName(spec.Turn), s.properties(spec))
	if err != nil {
		return nil, fmt.Errorf("start worker for turn %s: %w", spec.Turn, err)
	}
	return h, nil
}

// launch starts a transient unit with props and follows it to its end. A
// unit of that name left failed by a crash is reset and started again,
// once.
func (s *Systemd) launch(ctx context.Context, unit string, props []sddbus.Property) (*systemdHandle, error) {
	h := &systemdHandle{s: s, unit: unit, done: make(chan Exit, 1), wake: make(chan struct{}, 1)}
	s.mu.Lock()
	s.watched[unitPath(unit)] = h.wake
	s.mu.Unlock()
	started := time.Now()
	err := s.startUnit(ctx, unit, props)
	var dbusErr godbus.Error
	if errors.As(err, &dbusErr) && dbusErr.Name == "org.freedesktop.systemd1.UnitExists" {
		if resetErr := s.conn.ResetFailedUnitContext(ctx, unit); resetErr != nil {
			err = fmt.Errorf("%w (and reset it: %v)", err, resetErr)
		} else {
			err = s.startUnit(ctx, unit, props)
		}
	}
	var failed jobFailed
	if errors.As(err, &failed) && s.ranAndEnded(ctx, unit) {
		// The worker ran and ended before systemd finished the start
		// job (its exit is seen before its exec): the unit started, and
		// the watcher reports how it ended.
		err = nil
	}
	if err != nil {
		if errors.As(err, &failed) {
			s.release(unit)
		}
		s.forget(unit)
		return nil, fmt.Errorf("unit %s: %w", unit, err)
	}
	svc, err := s.serviceProperties(ctx, unit)
	if err != nil {
		h.Kill()
	} else {
		h.pid = int(asUint(svc["MainPID"]))
		h.cgroup = asString(svc["ControlGroup"])
	}
	go h.watch(started)
	return h, nil
}

// RunUnit implements [sandbox.Units]: a sandboxed command's container
// runs as a transient unit beside the turns, its limits as the unit's,
// its output into run.Output, handed to systemd over the bus.
func (s *Systemd) RunUnit(ctx context.Context, run sandbox.UnitRun) (sandbox.UnitExit, error) {
	if len(run.Argv) == 0 || run.Output == nil {
		return sandbox.UnitExit{}, fmt.Errorf("run unit %s: no command or no output", run.Name)
	}
	instance, ok := strings.CutPrefix(strings.TrimSuffix(run.Name, ".service"), "shelldon-run@")
	if !ok || !validInstance(instance) {
		return sandbox.UnitExit{}, fmt.Errorf("run unit %q: not a shelldon-run@ name systemd takes as it is", run.Name)
	}
	prop := func(name string, v any) sddbus.Property {
		return sddbus.Property{Name: name, Value: godbus.MakeVariant(v)}
	}
	out := godbus.UnixFD(run.Output.Fd())
	l := run.Limits
	props := []sddbus.Property{
		sddbus.PropDescription("shelldon sandboxed command"),
		sddbus.PropSlice(TurnSlice),
		sddbus.PropType("exec"),
		sddbus.PropExecStart(literalArgv(run.Argv), false),
		prop("StandardErrorFileDescriptor", out),
		prop("RuntimeMaxUSec", usec(l.Wall)),
		prop("KillMode", "control-group"),
		prop("KillSignal", int32(syscall.SIGKILL)),
		prop("AddRef", true),
		// A command that fails is an answer, not a fault to keep around.
		prop("CollectMode", "inactive-or-failed"),
		prop("MemoryAccounting", true),
		prop("MemoryMax", uint64(l.Memory)),
		prop("MemorySwapMax", uint64(0)),
		prop("CPUQuotaPerSecUSec", uint64(l.CPU*float64(time.Second/time.Microsecond))),
		prop("TasksMax", uint64(l.Tasks)),
	}
	// A server's stdin and stdout are its own pipes; a command's stdout
	// goes with its stderr, and its stdin is /dev/null.
	if run.Stdout != nil {
		props = append(props, prop("StandardOutputFileDescriptor", godbus.UnixFD(run.Stdout.Fd())))
	} else {
		props = append(props, prop("StandardOutputFileDescriptor", out))
	}
	if run.Input != nil {
		props = append(props, prop("StandardInputFileDescriptor", godbus.UnixFD(run.Input.Fd())))
	}
	if run.NetworkNamespace != "" {
		// systemd fails the unit rather than start it elsewhere.
		props = append(props, prop("NetworkNamespacePath", run.NetworkNamespace))
	}
	h, err := s.launch(ctx, run.Name, props)
	if err != nil {
		return sandbox.UnitExit{}, fmt.Errorf("run sandboxed command: %w", err)
	}
	var e Exit
	select {
	case e = <-h.Done():
	case <-ctx.Done():
		h.Kill()
		e = <-h.Done()
	}
	return sandbox.UnitExit{Result: e.Result, Code: e.Code, MemoryPeak: e.MemoryPeak}, nil
}

// jobFailed is a start job's result other than done.
type jobFailed string

func (r jobFailed) Error() string { return fmt.Sprintf("start job ended %q", string(r)) }

// ranAndEnded reports whether a unit whose start job failed did run its
// command, which then ended: a main process that exited, other than with
// one of systemd's own codes for a unit it could not set up or execute
// (200 to 243), or that a signal ended.
func (s *Systemd) ranAndEnded(ctx context.Context, unit string) bool {
	svc, err := s.serviceProperties(ctx, unit)
	if err != nil || asUint(svc["ExecMainStartTimestampMonotonic"]) == 0 {
		return false
	}
	const cldExited, cldKilled, cldDumped = 1, 2, 3
	switch code, status := asUint(svc["ExecMainCode"]), asUint(svc["ExecMainStatus"]); code {
	case cldExited:
		return status < 200 || status > 243
	case cldKilled, cldDumped:
		return true
	}
	return false
}

// startUnit starts a transient unit and waits for its start job.
func (s *Systemd) startUnit(ctx context.Context, unit string, props []sddbus.Property) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start job: %w", err) // nothing asked of systemd yet
	}
	// The request itself is not cancelled: once it may have reached
	// systemd, the job is seen through and its unit killed below, never
	// left to start after the caller gave up.
	call, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.JobTimeout)
	defer cancel()
	result := make(chan string, 1)
	if _, err := s.conn.StartTransientUnitContext(call, unit, "fail", props, result); err != nil {
		return err
	}
	timer := time.NewTimer(s.opts.JobTimeout)
	defer timer.Stop()
	select {
	case r := <-result:
		if r != "done" {
			return jobFailed(r)
		}
		return nil
	case <-timer.C:
	case <-ctx.Done():
		// Cancelled while systemd starts it: the start is seen through
		// (within the job's bound), so that the kill below finds what it
		// started; a kill sent before the unit's processes exist would
		// leave them running (a stopped MCP server or command that
		// lived on, holding its container's mounts).
		select {
		case <-result:
		case <-timer.C:
		}
	}
	// Whatever the job still does, nothing may be left running.
	s.conn.KillUnitContext(context.Background(), unit, int32(syscall.SIGKILL))
	s.release(unit)
	if ctx.Err() != nil {
		return fmt.Errorf("start job: %w", ctx.Err())
	}
	return fmt.Errorf("start job: no result within %s", s.opts.JobTimeout)
}

func (s *Systemd) properties(spec Spec) []sddbus.Property {
	prop := func(name string, v any) sddbus.Property {
		return sddbus.Property{Name: name, Value: godbus.MakeVariant(v)}
	}
	props := []sddbus.Property{
		sddbus.PropDescription(spec.Description),
		sddbus.PropSlice(TurnSlice),
		sddbus.PropType("exec"), // the start job fails when the worker cannot be executed
		// go-systemd names the flag uncleanIsFailure, but systemd reads it
		// as ignore-failure ("-" before the path): false keeps a failing
		// worker's unit failed.
		sddbus.PropExecStart(literalArgv(spec.Argv), false),
		prop("Environment", append([]string{}, spec.Env...)),
		prop("RuntimeMaxUSec", usec(spec.Reap)),
		// The reap deadline is a kill, as in the child launcher, not a
		// request to stop that a wedged worker could sit out.
		prop("KillMode", "control-group"),
		prop("KillSignal", int32(syscall.SIGKILL)),
		prop("AddRef", true),
		prop("CollectMode", "inactive"),
		prop("NoNewPrivileges", true),
		prop("ProtectSystem", "strict"),
		prop("ProtectHome", "yes"),
		prop("PrivateTmp", true),
		// The worker talks to core over a Unix socket only, reads its
		// state directory, and runs nothing. ProtectKernelTunables=,
		// ProtectKernelModules=, ProtectKernelLogs= and
		// ProtectControlGroups= are left out: with no capabilities and
		// an unprivileged user they would guard what the worker cannot
		// touch anyway, and their mounts cost every turn about 12 ms.
		prop("IPAddressDeny", []ipPrefix{{Family: syscall.AF_INET, Address: make([]byte, 4)}, {Family: syscall.AF_INET6, Address: make([]byte, 16)}}),
		prop("PrivateNetwork", true),
		prop("RestrictAddressFamilies", allowList{Allow: true, Items: []string{"AF_UNIX"}}),
		prop("CapabilityBoundingSet", uint64(0)),
		prop("PrivateDevices", true),
		prop("ProtectClock", true),
		prop("ProtectHostname", true),
		prop("ProtectProc", "invisible"),
		prop("ProcSubset", "pid"),
		prop("RestrictNamespaces", uint64(0)), // no namespace may be made
		prop("RestrictRealtime", true),
		prop("RestrictSUIDSGID", true),
		prop("LockPersonality", true),
		prop("MemoryDenyWriteExecute", true),
		prop("RemoveIPC", true),
		prop("SystemCallArchitectures", []string{"native"}),
		prop("SystemCallFilter", allowList{Allow: true, Items: []string{"@system-service"}}),
		prop("UMask", uint32(0o077)),
	}
	if s.opts.User != "" {
		props = append(props, prop("User", s.opts.User))
	}
	l := spec.Limits
	if l.Memory > 0 {
		props = append(props, prop("MemoryAccounting", true), prop("MemoryMax", uint64(l.Memory)), prop("MemorySwapMax", uint64(0)))
	}
	if l.CPUQuota > 0 {
		props = append(props, prop("CPUQuotaPerSecUSec", usec(l.CPUQuota)))
	}
	if l.Tasks > 0 {
		props = append(props, prop("TasksMax", uint64(l.Tasks)))
	}
	rlimit := func(name string, v uint64) {
		if v > 0 {
			props = append(props, prop("Limit"+name, v), prop("Limit"+name+"Soft", v))
		}
	}
	// Where the cgroup bounds memory, RLIMIT_DATA would only get in its
	// way: it counts the heap arenas the Go runtime maps ahead of use, so
	// a worker that grows ends in the runtime's "out of memory" (an exit
	// code) before the kernel's accounting of what is resident sees it,
	// and the turn would not be recorded as the oom-kill it was.
	if l.Memory == 0 {
		rlimit("DATA", uint64(l.Data))
	}
	rlimit("CPU", uint64(l.CPUSeconds))
	rlimit("NOFILE", uint64(l.OpenFiles))
	return props
}

// literalArgv escapes what systemd would expand in ExecStart when it
// runs it: "$VAR" and "${VAR}" become the environment's values, "$$" a
// single "$". The worker gets exactly the argv of its Spec.
func literalArgv(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = strings.ReplaceAll(a, "$", "$$")
	}
	return out
}

// allowList is an allow (or deny) list, D-Bus type (bas), as
// RestrictAddressFamilies and SystemCallFilter take it.
type allowList struct {
	Allow bool
	Items []string
}

// ipPrefix is one entry of IPAddressDeny, D-Bus type (iayu).
type ipPrefix struct {
	Family    int32
	Address   []byte
	PrefixLen uint32
}

func usec(d time.Duration) uint64 { return uint64(d / time.Microsecond) }

func (s *Systemd) serviceProperties(ctx context.Context, unit string) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, propertyTimeout)
	defer cancel()
	return s.conn.GetUnitTypePropertiesContext(ctx, unit, "Service")
}

func (s *Systemd) forget(unit string) {
	s.mu.Lock()
	delete(s.watched, unitPath(unit))
	s.mu.Unlock()
}

// release drops the reference AddRef took, so systemd may collect the
// unit once it is inactive. It must go out on the connection that took it.
func (s *Systemd) release(unit string) {
	ctx, cancel := context.WithTimeout(context.Background(), propertyTimeout)
	defer cancel()
	s.methods.Object(systemdBusName, unitPath(unit)).CallWithContext(ctx, "org.freedesktop.systemd1.Unit.Unref", 0)
}

const (
	systemdBusName = "org.freedesktop.systemd1"
	systemdPath    = godbus.ObjectPath("/org/freedesktop/systemd1")
)

func unitPath(unit string) godbus.ObjectPath {
	return godbus.ObjectPath("/org/freedesktop/systemd1/unit/" + sddbus.PathBusEscape(unit))
}

type systemdHandle struct {
	s    *Systemd
	unit string
	pid  int
	done chan Exit
	wake chan struct{}
	once sync.Once
	// cgroup is the unit's ControlGroup, whose memory.peak the watcher
	// samples where systemd does not report MemoryPeak (before v255).
	cgroup string
}

// watch waits for the unit to end and reports how.
func (h *systemdHandle) watch(started time.Time) {
	defer h.s.forget(h.unit)
	defer h.s.release(h.unit)
	poll := pollMin
	var sampled int64
	for {
		// memory.peak only grows, so the last sample before the cgroup goes
		// is the run's peak but for what the last poll interval added.
		if peak, ok := procmem.Peak(h.cgroup); ok {
			sampled = max(sampled, peak)
		}
		state, err := h.s.activeState(h.unit)
		if err == nil && (state == "inactive" || state == "failed") {
			var svc map[string]any
			if svc, err = h.s.serviceProperties(context.Background(), h.unit); err == nil {
				e := exitOf(svc, started)
				e.MemoryPeak = max(e.MemoryPeak, sampled)
				h.done <- e
				return
			}
		}
		if err != nil && !h.s.conn.Connected() {
			// Without systemd there is nothing left to watch; the unit's own
			// RuntimeMax still ends the worker.
			h.done <- Exit{Result: ResultExitCode, Code: -1, Duration: time.Since(started)}
			return
		}
		timer := time.NewTimer(poll)
		select {
		case <-h.wake:
		case <-timer.C:
			poll = min(2*poll, pollMax)
		}
		timer.Stop()
	}
}

// activeState is the unit's ActiveState, which the Service interface
// does not carry.
func (s *Systemd) activeState(unit string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), propertyTimeout)
	defer cancel()
	p, err := s.conn.GetUnitPropertyContext(ctx, unit, "ActiveState")
	if err != nil {
		return "", err
	}
	return asString(p.Value.Value()), nil
}

// ExecMainCode values: how the main process ended, as waitid's si_code.
const (
	cldKilled = 2
	cldDumped = 3
)

// exitOf reads a finished service's properties in the launchers' words.
func exitOf(svc map[string]any, started time.Time) Exit {
	e := Exit{Result: asString(svc["Result"]), Code: int(int32(asUint(svc["ExecMainStatus"])))}
	switch e.Result {
	case ResultSuccess, ResultExitCode, ResultSignal, ResultTimeout, ResultOOMKill:
	case "core-dump":
		e.Result = ResultSignal
	default: // resources, protocol, watchdog, start-limit-hit, …
		e.Result = ResultExitCode
		if e.Code == 0 {
			e.Code = -1
		}
	}
	// systemd counts a death by SIGTERM, SIGHUP, SIGINT or SIGPIPE as a
	// clean exit; the child launcher reports every death by a signal.
	if how := asUint(svc["ExecMainCode"]); e.Result == ResultSuccess && (how == cldKilled || how == cldDumped) {
		e.Result = ResultSignal
	}
	if e.Result == ResultSuccess {
		e.Code = 0
	}
	begin, end := asUint(svc["ExecMainStartTimestamp"]), asUint(svc["ExecMainExitTimestamp"])
	if begin > 0 && end >= begin {
		e.Duration = time.Duration(end-begin) * time.Microsecond
	} else {
		e.Duration = time.Since(started)
	}
	if cpu := asUint(svc["CPUUsageNSec"]); cpu != math.MaxUint64 {
		e.CPUTime = time.Duration(cpu)
	}
	if peak := asUint(svc["MemoryPeak"]); peak != math.MaxUint64 && peak <= math.MaxInt64 {
		e.MemoryPeak = int64(peak)
	}
	return e
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}

// asUint reads an unsigned D-Bus number; a property that is missing or of
// another type reads as 0.
func asUint(v any) uint64 {
	switch n := v.(type) {
	case uint64:
		return n
	case uint32:
		return uint64(n)
	case int32:
		return uint64(n)
	}
	return 0
}

// PID implements [Handle]. It is the pid in systemd's pid namespace.
func (h *systemdHandle) PID() int { return h.pid }

// Owns implements [Handle]: a process belongs to the worker when its
// cgroup is the unit's (or below it). It reads /proc, so pid is one of
// this process's pid namespace, which may differ from [systemdHandle.PID]'s.
func (h *systemdHandle) Owns(pid int) bool {
	if pid <= 0 {
		return false
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	return ownsCgroup(string(data), h.unit)
}

// ownsCgroup reports whether a /proc/<pid>/cgroup text puts the process
// in unit's cgroup under the turns slice, in any hierarchy. The path may
// begin with more (the container's own cgroup, when systemd runs in one).
func ownsCgroup(procCgroup, unit string) bool {
	want := "/" + TurnSlice + "/" + unit
	for _, line := range strings.Split(procCgroup, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if path := parts[2]; strings.HasSuffix(path, want) || strings.Contains(path, want+"/") {
			return true
		}
	}
	return false
}

// Done implements [Handle].
func (h *systemdHandle) Done() <-chan Exit { return h.done }

// Kill implements [Handle]: every process of the unit gets SIGKILL.
func (h *systemdHandle) Kill() {
	h.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), propertyTimeout)
		defer cancel()
		h.s.conn.KillUnitContext(ctx, h.unit, int32(syscall.SIGKILL))
	})
}
