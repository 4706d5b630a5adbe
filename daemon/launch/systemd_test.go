package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	godbus "github.com/godbus/dbus/v5"

	"shelldon/sandbox"
	"shelldon/testhost/systemdhost"
)

func TestOwnsCgroup(t *testing.T) {
	const unit = "shelldon-turn@t1.service"
	for _, tc := range []struct {
		name, cgroup string
		want         bool
	}{
		{"v2 on the host", "0::/shelldon.slice/shelldon-turns.slice/shelldon-turn@t1.service\n", true},
		{"hybrid inside a container", "9:name=systemd:/payload/shelldon.slice/shelldon-turns.slice/shelldon-turn@t1.service\n4:memory:/\n0::/\n", true},
		{"below the unit", "0::/shelldon.slice/shelldon-turns.slice/shelldon-turn@t1.service/sub\n", true},
		{"another turn", "0::/shelldon.slice/shelldon-turns.slice/shelldon-turn@t10.service\n", false},
		{"same name in another slice", "0::/system.slice/shelldon-turn@t1.service\n", false},
		{"core itself", "0::/shelldon.slice/shelldon.service\n", false},
		{"empty", "", false},
		{"garbage", "::::\n\x00\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ownsCgroup(tc.cgroup, unit); got != tc.want {
				t.Errorf("ownsCgroup(%q, %s) = %v, want %v", tc.cgroup, unit, got, tc.want)
			}
		})
	}
}

// TestUnitMemoryBound: with a cgroup limit the unit leaves RLIMIT_DATA
// out, so a growing worker meets the kernel's OOM killer (and its turn
// is recorded as oom-kill) rather than the Go runtime's mmap failure.
func TestUnitMemoryBound(t *testing.T) {
	for _, tc := range []struct {
		name              string
		limits            Limits
		wantData, wantMax bool
	}{
		{"cgroup and rlimit asked", Limits{Data: 256 << 20, Memory: 256 << 20}, false, true},
		{"rlimit only", Limits{Data: 256 << 20}, true, false},
		{"neither", Limits{}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gotData, gotMax bool
			for _, p := range (&Systemd{}).properties(Spec{Argv: []string{"/bin/true"}, Limits: tc.limits}) {
				gotData = gotData || p.Name == "LimitDATA"
				gotMax = gotMax || p.Name == "MemoryMax"
			}
			if gotData != tc.wantData || gotMax != tc.wantMax {
				t.Errorf("properties(%+v): LimitDATA %v, MemoryMax %v; want %v, %v", tc.limits, gotData, gotMax, tc.wantData, tc.wantMax)
			}
		})
	}
}

func TestSystemdRefusesBadSpecs(t *testing.T) {
	s := &Systemd{}
	for _, tc := range []struct {
		name string
		spec Spec
	}{
		{"no command", Spec{Turn: "t1", Reap: time.Second}},
		{"no reap deadline", Spec{Turn: "t1", Argv: []string{"/bin/true"}}},
		{"turn with a slash", Spec{Turn: "../x", Argv: []string{"/bin/true"}, Reap: time.Second}},
		{"turn with a space", Spec{Turn: "a b", Argv: []string{"/bin/true"}, Reap: time.Second}},
		{"empty turn", Spec{Turn: "", Argv: []string{"/bin/true"}, Reap: time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if h, err := s.Start(context.Background(), tc.spec); err == nil {
				t.Errorf("Start(%+v) = %v, nil; want an error", tc.spec, h)
			}
		})
	}
}

func TestValidInstance(t *testing.T) {
	for id, want := range map[string]bool{
		"f78f9a2ff06ce18c": true, "a.b_c:d-e": true, strings.Repeat("x", 200): true,
		"": false, strings.Repeat("x", 201): false, "a b": false, "../x": false, "a\\x2d": false, "é": false, "a@b": false,
	} {
		if got := validInstance(id); got != want {
			t.Errorf("validInstance(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestNewSystemdWithoutSystemd(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		dial func() (*godbus.Conn, error)
	}{
		{"dial fails", func() (*godbus.Conn, error) { return nil, errors.New("no bus") }},
		{"no socket", func() (*godbus.Conn, error) { return systemdhost.Dial("unix:path=" + dir + "/none") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSystemd(context.Background(), tc.dial, SystemdOptions{})
			if !errors.Is(err, ErrNoSystemd) {
				t.Errorf("NewSystemd = %v, %v; want an error wrapping ErrNoSystemd", s, err)
			}
		})
	}
}

// TestSystemdAgainstRealSystemd starts turns' units in a booted systemd
// (a container, on hosts whose PID 1 is not systemd) and reads how they end.
func TestSystemdAgainstRealSystemd(t *testing.T) {
	host := systemdhost.Boot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := NewSystemd(ctx, func() (*godbus.Conn, error) { return systemdhost.Dial(host.BusAddress) }, SystemdOptions{})
	if err != nil {
		t.Fatalf("NewSystemd(%s): %v", host.BusAddress, err)
	}
	defer s.Close()
	if got := s.Name(); got != "systemd" {
		t.Errorf("Name() = %q, want systemd", got)
	}

	start := func(t *testing.T, turn string, reap time.Duration, limits Limits, script string) Handle {
		t.Helper()
		began := time.Now()
		h, err := s.Start(ctx, Spec{Turn: turn, Argv: []string{"/bin/sh", "-c", script}, Env: []string{"TURN=" + turn}, Reap: reap, Description: "test turn " + turn, Limits: limits})
		if err != nil {
			t.Fatalf("Start(%s): %v", turn, err)
		}
		t.Logf("Start(%s) took %s", turn, time.Since(began).Round(time.Microsecond))
		return h
	}
	unitState := func(turn string) string {
		out, _ := host.Exec(ctx, "systemctl", "show", "-P", "LoadState,ActiveState", UnitName(turn))
		return strings.Join(strings.Fields(string(out)), " ")
	}

	for _, tc := range []struct {
		turn   string
		script string
		reap   time.Duration
		want   Exit
		// state is the unit's LoadState and ActiveState once Done has
		// reported: a unit that succeeded is collected, a failed one stays.
		state string
	}{
		{"ok", `test "$TURN" = ok`, time.Minute, Exit{Result: ResultSuccess}, "not-found inactive"},
		{"exit3", "exit 3", time.Minute, Exit{Result: ResultExitCode, Code: 3}, "loaded failed"},
		// systemd itself counts a death by SIGTERM as clean, so the unit
		// is collected; the launcher still reports the signal.
		{"killself", "kill -TERM $$", time.Minute, Exit{Result: ResultSignal, Code: 15}, "not-found inactive"},
		{"timeout", "exec sleep 600", 300 * time.Millisecond, Exit{Result: ResultTimeout, Code: 9}, "loaded failed"},
		{"readonly", "touch /usr/written-by-a-turn", time.Minute, Exit{Result: ResultExitCode, Code: 1}, "loaded failed"},
	} {
		t.Run(tc.turn, func(t *testing.T) {
			h := start(t, tc.turn, tc.reap, Limits{Tasks: 16, CPUQuota: 500 * time.Millisecond, OpenFiles: 64}, tc.script)
			got := waitExit(t, h)
			if got.Result != tc.want.Result || got.Code != tc.want.Code {
				t.Errorf("%s: Done() = %+v, want result %s code %d", tc.script, got, tc.want.Result, tc.want.Code)
			}
			if tc.reap < time.Minute && got.Duration < tc.reap {
				t.Errorf("%s: ran %s, less than its reap deadline %s", tc.script, got.Duration, tc.reap)
			}
			waitFor(t, func() bool { return unitState(tc.turn) == tc.state }, func() string {
				return fmt.Sprintf("unit %s is %q, want %q", UnitName(tc.turn), unitState(tc.turn), tc.state)
			})
		})
	}

	t.Run("argv is literal", func(t *testing.T) {
		const odd = `$HOME ${TURN} $$ %n %%`
		h, err := s.Start(ctx, Spec{Turn: "literal", Argv: []string{"/bin/sh", "-c", `[ "$0" = '` + odd + `' ]`, odd}, Reap: time.Minute})
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		if got := waitExit(t, h); got.Result != ResultSuccess {
			t.Errorf("the worker saw its argv changed: Done() = %+v, want success", got)
		}
	})

	t.Run("missing program", func(t *testing.T) {
		h, err := s.Start(ctx, Spec{Turn: "missing", Argv: []string{"/no/such/worker"}, Reap: time.Minute})
		if err == nil {
			t.Errorf("Start(/no/such/worker) = %v, nil; want an error", h)
		}
	})

	t.Run("name collision", func(t *testing.T) {
		// A unit a crashed core left behind, failed.
		if out, err := host.Exec(ctx, "systemd-run", "--unit="+UnitName("collide"), "--slice="+TurnSlice, "/bin/false"); err != nil {
			t.Fatalf("systemd-run: %v: %s", err, out)
		}
		waitFor(t, func() bool { return unitState("collide") == "loaded failed" }, func() string {
			return "the leftover unit is " + unitState("collide")
		})
		h := start(t, "collide", time.Minute, Limits{}, "exit 0")
		if got := waitExit(t, h); got.Result != ResultSuccess {
			t.Errorf("Done() of the restarted collide = %+v, want success", got)
		}
	})

	t.Run("owns and kill", func(t *testing.T) {
		h := start(t, "owned", time.Minute, Limits{}, "sleep 600 & wait")
		if h.PID() <= 0 {
			t.Fatalf("PID() = %d, want the main pid", h.PID())
		}
		main := hostPid(t, host.Leader, h.PID())
		for _, tc := range []struct {
			name string
			pid  int
			want bool
		}{
			{"main process", main, true},
			{"container's systemd", host.Leader, false},
			{"this test", os.Getpid(), false},
			{"no such pid", 1 << 30, false},
			{"negative", -1, false},
		} {
			if got := h.Owns(tc.pid); got != tc.want {
				t.Errorf("Owns(%s, %d) = %v, want %v", tc.name, tc.pid, got, tc.want)
			}
		}
		h.Kill()
		h.Kill() // a second Kill is harmless
		if got := waitExit(t, h); got.Result != ResultSignal || got.Code != 9 {
			t.Errorf("Done() after Kill = %+v, want signal 9", got)
		}
		if out, _ := host.Exec(ctx, "systemctl", "show", "-P", "NTasks", UnitName("owned")); strings.TrimSpace(string(out)) != "" && strings.TrimSpace(string(out)) != "0" && strings.TrimSpace(string(out)) != "[not set]" {
			t.Errorf("the killed unit still has %s tasks", out)
		}
	})

	t.Run("a command starts in the network namespace it is given", func(t *testing.T) {
		// A turn unit has a private network: a namespace that is not the
		// host's, for the command unit to be put in.
		holder := start(t, "netns", time.Minute, Limits{}, "sleep 600 & wait")
		defer func() {
			holder.Kill()
			waitExit(t, holder)
		}()
		want, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", hostPid(t, host.Leader, holder.PID())))
		if err != nil {
			t.Fatal(err)
		}
		runIn := func(name, netns string) (sandbox.UnitExit, string, error) {
			t.Helper()
			out, err := os.CreateTemp(t.TempDir(), "out")
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			exit, err := s.RunUnit(ctx, sandbox.UnitRun{Name: name, Argv: []string{"/bin/sh", "-c", "readlink /proc/self/ns/net /proc/1/ns/net"},
				Limits: sandbox.DefaultLimits, Output: out, NetworkNamespace: netns})
			b, _ := os.ReadFile(out.Name())
			return exit, string(b), err
		}
		exit, out, err := runIn("shelldon-run@netns-1.service", fmt.Sprintf("/proc/%d/ns/net", holder.PID()))
		if lines := strings.Fields(out); err != nil || exit.Result != "success" || len(lines) != 2 || lines[0] != want || lines[1] == want {
			t.Errorf("a command unit given the turn's namespace %s: %+v, %v, %q; want it in that namespace and not in its host's", want, exit, err, out)
		}
		if exit, out, err := runIn("shelldon-run@netns-2.service", "/proc/1/fd/999999"); err == nil || out != "" {
			t.Errorf("a command unit given a namespace that is not there: %+v, %v, %q; want it not started", exit, err, out)
		}
	})

	// MemoryMax's kill is not tested here: on a host of cgroup v1, as this
	// one is, nspawn hands the booted systemd a read-only memory hierarchy,
	// so no limit could hold. Both VM suites, which boot a kernel with
	// cgroup v2, test it through this launcher: a worker grown past its
	// MemoryMax ends as oom-kill (checkWorkerOOMKilled in cmd/shelldon).
}

// waitExit waits, with a deadline, for the one Exit a handle reports.
func waitExit(t *testing.T, h Handle) Exit {
	t.Helper()
	select {
	case e := <-h.Done():
		t.Logf("exit %+v", e)
		return e
	case <-time.After(30 * time.Second):
		h.Kill()
		t.Fatalf("no Exit within 30s")
	}
	return Exit{}
}

// waitFor polls cond until it holds, failing with what says why at the deadline.
func waitFor(t *testing.T, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(what())
		}
		<-tick.C
	}
}

// hostPid finds the host pid of the process that is pid in the container
// whose PID 1 is leader.
func hostPid(t *testing.T, leader, pid int) int {
	t.Helper()
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", leader))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if other, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", p)); other != ns {
			continue
		}
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "NSpid:" && f[len(f)-1] == strconv.Itoa(pid) {
				return p
			}
		}
	}
	t.Fatalf("no host pid for pid %d of the container", pid)
	return 0
}

// TestStopLeftovers: the turn and command units a dead core left running
// are stopped by the next one, and nothing else is touched.
func TestStopLeftovers(t *testing.T) {
	host := systemdhost.Boot(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, unit := range []string{UnitName("left"), "shelldon-run@left-1.service", "bystander.service"} {
		host.Must(t, "systemd-run", "--unit="+unit, "sleep", "300")
	}
	s, err := NewSystemd(ctx, func() (*godbus.Conn, error) { return systemdhost.Dial(host.BusAddress) }, SystemdOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stopped, err := s.StopLeftovers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(stopped)
	if want := []string{"shelldon-run@left-1.service", UnitName("left")}; !slices.Equal(stopped, want) {
		t.Errorf("StopLeftovers stopped %v, want %v", stopped, want)
	}
	for unit, want := range map[string]string{UnitName("left"): "inactive", "shelldon-run@left-1.service": "inactive", "bystander.service": "active"} {
		out, _ := host.Exec(ctx, "systemctl", "is-active", unit)
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("%s is %s, want %s", unit, got, want)
		}
	}
	if again, err := s.StopLeftovers(ctx); err != nil || len(again) != 0 {
		t.Errorf("a second StopLeftovers = %v, %v; want nothing to stop", again, err)
	}
}
