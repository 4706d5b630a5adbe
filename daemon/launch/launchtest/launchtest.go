package launchtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shelldon/daemon/launch"
	"shelldon/testhost"
)

// waitLimit bounds every wait on a worker, so a broken launcher fails the
// test instead of hanging it.
const waitLimit = 20 * time.Second

// Target is one launcher under test, and what the suite must know of
// where its workers run.
type Target struct {
	Launcher launch.Launcher
	// Dir is a directory the workers see at the same path as the test;
	// the suite makes the FIFOs through which a worker tells it a pid
	// there. A worker may be unable to write files there (a read-only
	// view): a FIFO's writer writes to no file system.
	Dir string
	// HostPID maps a pid of the workers' pid namespace (what a Handle's
	// PID and a worker's $$ say) to the test's, where /proc and Owns
	// read it, or to 0 when that process has ended; nil when the two are
	// the same namespace.
	HostPID func(t testing.TB, pid int) int
}

// Impl is one row of a launcher table: a name and how to make the
// launcher, which skips t through package testhost where it cannot run
// here (no root, no systemd) and cleans up after itself.
type Impl struct {
	Name string
	New  func(t *testing.T) Target
}

// Run runs the suite against each launcher of impls, each in a subtest
// named after it.
func Run(t *testing.T, impls []Impl) {
	for _, impl := range impls {
		t.Run(impl.Name, func(t *testing.T) {
			s := &suite{Target: impl.New(t), name: impl.Name}
			for _, c := range []struct {
				name string
				test func(*testing.T)
			}{
				{"ReportsHowTheWorkerEnded", s.reportsHowTheWorkerEnded},
				{"PassesArgvAndEnvAsTheyAre", s.passesArgvAndEnvAsTheyAre},
				{"KillsAtTheReapDeadline", s.killsAtTheReapDeadline},
				{"ReapKillsEverythingTheWorkerStarted", s.reapKillsEverythingTheWorkerStarted},
				{"KillsWhatTheWorkerLeftBehind", s.killsWhatTheWorkerLeftBehind},
				{"Kill", s.kill},
				{"Owns", s.owns},
				{"AppliesLimits", s.appliesLimits},
				{"StartFailsAndLeavesNothingRunning", s.startFailsAndLeavesNothingRunning},
			} {
				t.Run(c.name, c.test)
			}
		})
	}
}

type suite struct {
	Target
	name  string
	turns atomic.Int64
}

// turn is a turn id no other start of this suite used, so a launcher
// that names something after the turn (a unit) starts afresh.
func (s *suite) turn() string {
	return fmt.Sprintf("suite-%s-%d-%d", s.name, os.Getpid(), s.turns.Add(1))
}

func (s *suite) hostPID(t testing.TB, pid int) int {
	t.Helper()
	if s.HostPID == nil {
		return pid
	}
	return s.HostPID(t, pid)
}

// Worker is one started worker and whether its Exit was taken.
type Worker struct {
	launch.Handle
	exited bool
}

// Start starts spec under l; the test's cleanup kills whatever is still
// running and waits for its Exit.
func Start(t *testing.T, l launch.Launcher, spec launch.Spec) *Worker {
	t.Helper()
	h, err := l.Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("%s: Start(%q) = %v", l.Name(), spec.Argv, err)
	}
	w := &Worker{Handle: h}
	t.Cleanup(func() {
		if !w.exited {
			w.Kill()
			w.Wait(t)
		}
	})
	return w
}

// start starts spec as a turn of its own.
func (s *suite) start(t *testing.T, spec launch.Spec) *Worker {
	t.Helper()
	spec.Turn = s.turn()
	return Start(t, s.Launcher, spec)
}

// shell starts /bin/sh -c script with reap and the given environment.
func (s *suite) shell(t *testing.T, script string, reap time.Duration, env ...string) *Worker {
	t.Helper()
	return s.start(t, launch.Spec{Argv: []string{"/bin/sh", "-c", script}, Reap: reap, Env: env})
}

// Wait takes the worker's Exit, and checks that Done yields no second.
func (w *Worker) Wait(t *testing.T) launch.Exit {
	t.Helper()
	select {
	case exit := <-w.Done():
		w.exited = true
		select {
		case again := <-w.Done():
			t.Errorf("Done yielded a second Exit %+v after %+v", again, exit)
		default:
		}
		return exit
	case <-time.After(waitLimit):
		t.Fatalf("worker %d did not report its end within %v", w.PID(), waitLimit)
		return launch.Exit{}
	}
}

// fifo makes a FIFO in the target's directory.
func (s *suite) fifo(t *testing.T) string { return FIFO(t, s.Dir) }

// FIFO makes a FIFO in a fresh directory under dir, through which a
// worker tells the test a pid (see [ReadPID]); it is removed at cleanup.
func FIFO(t testing.TB, dir string) string {
	t.Helper()
	dir, err := os.MkdirTemp(dir, "fifo")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pid")
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A reader still blocked in open (the worker never wrote) is let go.
		if fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			unix.Close(fd)
		}
		os.RemoveAll(dir)
	})
	return path
}

// readPID reads the pid a worker wrote to a FIFO and maps it to the
// test's pid namespace.
func (s *suite) readPID(t *testing.T, fifo string) int {
	t.Helper()
	return s.hostPID(t, ReadPID(t, fifo))
}

// ReadPID reads the pid a worker wrote to a FIFO, so the test knows the
// process exists without polling for a file. The worker may end
// meanwhile; its Exit stays in Done.
func ReadPID(t testing.TB, fifo string) int {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		raw, _ := os.ReadFile(fifo)
		got <- strings.TrimSpace(string(raw))
	}()
	select {
	case raw := <-got:
		pid, err := strconv.Atoi(raw)
		if err != nil {
			t.Fatalf("the worker wrote %q, not a pid", raw)
		}
		return pid
	case <-time.After(waitLimit):
		t.Fatal("the worker wrote no pid")
	}
	return 0
}

// Doomed reports whether pid can no longer run: gone, a zombie, or with a
// SIGKILL pending (the kernel delivers it before the process next reaches
// user space, so nothing it does afterwards is the worker's doing).
func Doomed(t testing.TB, pid int) bool {
	t.Helper()
	if pid <= 0 {
		return true // ended before it was looked up (Target.HostPID)
	}
	_, fields, err := testhost.ProcStat(fmt.Sprintf("/proc/%d/stat", pid))
	if os.IsNotExist(err) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	if state := fields[0]; state == "Z" || state == "X" {
		return true
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if os.IsNotExist(err) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "SigPnd" && name != "ShdPnd") {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(value), 16, 64)
		if err != nil {
			t.Fatalf("/proc/%d/status %s: %v", pid, name, err)
		}
		if mask&(1<<(syscall.SIGKILL-1)) != 0 {
			return true
		}
	}
	return false
}

// KillOnCleanup kills pid when the test ends, should it have escaped the
// launcher.
func KillOnCleanup(t testing.TB, pid int) {
	if pid <= 0 {
		return // an ended process; kill(0) would be the test's own group
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
}

func (s *suite) reportsHowTheWorkerEnded(t *testing.T) {
	tests := []struct {
		script string
		want   launch.Exit
	}{
		{"exit 0", launch.Exit{Result: launch.ResultSuccess}},
		{"exit 3", launch.Exit{Result: launch.ResultExitCode, Code: 3}},
		// systemd counts a death by SIGTERM as a clean exit: a launcher
		// still reports the signal.
		{"kill -TERM $$", launch.Exit{Result: launch.ResultSignal, Code: int(syscall.SIGTERM)}},
		{"kill -KILL $$", launch.Exit{Result: launch.ResultSignal, Code: int(syscall.SIGKILL)}},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			got := s.shell(t, tt.script, waitLimit).Wait(t)
			if got.Result != tt.want.Result || got.Code != tt.want.Code {
				t.Errorf("sh -c %q ended with %+v, want %s %d", tt.script, got, tt.want.Result, tt.want.Code)
			}
			if got.Duration <= 0 || got.Duration >= waitLimit {
				t.Errorf("sh -c %q: Duration = %v, want the time it ran", tt.script, got.Duration)
			}
		})
	}
}

func (s *suite) passesArgvAndEnvAsTheyAre(t *testing.T) {
	// What a shell, or systemd's ExecStart, would expand.
	const odd = `$HOME ${TURN} $$ %n %% "'\`
	w := s.start(t, launch.Spec{
		Argv: []string{"/bin/sh", "-c", `[ "$0" = "$WANT" ] && [ "$1" = "$WANT" ]`, odd, odd},
		Env:  []string{"WANT=" + odd},
		Reap: waitLimit,
	})
	if got := w.Wait(t); got.Result != launch.ResultSuccess {
		t.Errorf("the worker saw its argv or environment changed: Exit = %+v, want success", got)
	}
}

func (s *suite) killsAtTheReapDeadline(t *testing.T) {
	const reap = 300 * time.Millisecond
	got := s.shell(t, "exec sleep 30", reap).Wait(t)
	if got.Result != launch.ResultTimeout {
		t.Errorf("a worker past its reap deadline ended with %+v, want %s", got, launch.ResultTimeout)
	}
	if got.Duration < reap || got.Duration > 10*time.Second {
		t.Errorf("reaped after %v, want promptly after %v", got.Duration, reap)
	}
}

func (s *suite) reapKillsEverythingTheWorkerStarted(t *testing.T) {
	fifo := s.fifo(t)
	w := s.shell(t, `sleep 60 & echo $! > "$FIFO"; wait`, 300*time.Millisecond, "FIFO="+fifo)
	grandchild := s.readPID(t, fifo)
	KillOnCleanup(t, grandchild)
	if got := w.Wait(t); got.Result != launch.ResultTimeout {
		t.Errorf("Exit = %+v, want %s", got, launch.ResultTimeout)
	}
	if !Doomed(t, grandchild) {
		t.Errorf("grandchild %d is still alive after the reap", grandchild)
	}
}

func (s *suite) killsWhatTheWorkerLeftBehind(t *testing.T) {
	fifo := s.fifo(t)
	w := s.shell(t, `sleep 60 & echo $! > "$FIFO"; echo left`, waitLimit, "FIFO="+fifo)
	grandchild := s.readPID(t, fifo)
	KillOnCleanup(t, grandchild)
	got := w.Wait(t)
	if got.Result != launch.ResultSuccess {
		t.Errorf("a worker that exited 0 leaving a grandchild ended with %+v, want %s", got, launch.ResultSuccess)
	}
	if got.Duration > waitLimit/2 {
		t.Errorf("Done came %v after start: the grandchild held it up", got.Duration)
	}
	if !Doomed(t, grandchild) {
		t.Errorf("grandchild %d is still alive after Done", grandchild)
	}
}

func (s *suite) kill(t *testing.T) {
	w := s.shell(t, "sleep 30", waitLimit)
	w.Kill()
	w.Kill() // a second Kill must not panic
	got := w.Wait(t)
	if got.Result != launch.ResultSignal || got.Code != int(syscall.SIGKILL) {
		t.Errorf("Kill() ended the worker with %+v, want %s %d", got, launch.ResultSignal, syscall.SIGKILL)
	}
	w.Kill() // nor a Kill after the end
}

func (s *suite) owns(t *testing.T) {
	fifo := s.fifo(t)
	w := s.shell(t, `sleep 60 & echo $! > "$FIFO"; wait`, waitLimit, "FIFO="+fifo)
	grandchild := s.readPID(t, fifo)
	KillOnCleanup(t, grandchild)
	tests := []struct {
		name string
		pid  int
		want bool
	}{
		{"main process", s.hostPID(t, w.PID()), true},
		{"grandchild", grandchild, true},
		{"core itself", os.Getpid(), false},
		{"core's parent", os.Getppid(), false},
		{"init", 1, false},
		{"zero", 0, false},
		{"negative", -1, false},
		{"no such process", 1 << 30, false},
	}
	for _, tt := range tests {
		if got := w.Owns(tt.pid); got != tt.want {
			t.Errorf("Owns(%s %d) = %v, want %v", tt.name, tt.pid, got, tt.want)
		}
	}
}

func (s *suite) appliesLimits(t *testing.T) {
	limits := launch.Limits{Data: 300 << 20, CPUSeconds: 7, OpenFiles: 33}
	w := s.start(t, launch.Spec{Argv: []string{"/bin/sleep", "30"}, Reap: waitLimit, Limits: limits})
	pid := s.hostPID(t, w.PID())
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Max data size":  strconv.FormatInt(limits.Data, 10),
		"Max cpu time":   strconv.Itoa(limits.CPUSeconds),
		"Max open files": strconv.Itoa(limits.OpenFiles),
	}
	for _, line := range strings.Split(string(raw), "\n") {
		for name, value := range want {
			if !strings.HasPrefix(line, name+" ") {
				continue
			}
			fields := strings.Fields(strings.TrimPrefix(line, name))
			if len(fields) < 2 || fields[0] != value || fields[1] != value {
				t.Errorf("/proc/%d/limits: %q, want soft and hard %s", pid, line, value)
			}
			delete(want, name)
		}
	}
	for name := range want {
		t.Errorf("/proc/%d/limits has no %q line:\n%s", pid, name, raw)
	}
}

// RunningWith reports the pids whose command line is exactly argv.
func RunningWith(t testing.TB, argv []string) []int {
	t.Helper()
	want := strings.Join(argv, "\x00") + "\x00"
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && string(cmdline) == want && !Doomed(t, pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func (s *suite) startFailsAndLeavesNothingRunning(t *testing.T) {
	// A sleep no other test runs, so a leftover is recognisable.
	sleep := []string{"/bin/sleep", "31.4159"}
	tests := []struct {
		name    string
		spec    launch.Spec
		wantErr string
	}{
		{"empty argv", launch.Spec{Reap: time.Second}, "empty command"},
		{"empty program", launch.Spec{Argv: []string{""}, Reap: time.Second}, ""},
		{"missing program", launch.Spec{Argv: []string{"/nonexistent/shelldon-worker"}, Reap: time.Second}, ""},
		{"zero reap", launch.Spec{Argv: sleep}, "no reap deadline"},
		{"negative reap", launch.Spec{Argv: sleep, Reap: -time.Second}, "no reap deadline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Turn = s.turn()
			h, err := s.Launcher.Start(context.Background(), tt.spec)
			if err == nil {
				h.Kill()
				<-h.Done()
				t.Fatalf("Start(%+v) = nil error, want one", tt.spec)
			}
			if h != nil {
				t.Errorf("Start(%+v) returned a handle with its error", tt.spec)
			}
			if !strings.Contains(err.Error(), tt.spec.Turn) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Start(%+v) = %q, want it to name the turn and %q", tt.spec, err, tt.wantErr)
			}
			if left := RunningWith(t, sleep); len(left) > 0 {
				t.Errorf("a failed Start left %q running as %v", sleep, left)
			}
		})
	}
}
