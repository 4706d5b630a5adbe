package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/containerd/cgroups/v3"
	"golang.org/x/sys/unix"

	"shelldon/testhost"
)

// The tests below make real control groups on this machine.

// testName is a group name unique to this test and process.
func testName(t *testing.T) string {
	clean := strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return '-'
	}, t.Name())
	return fmt.Sprintf("test-%d-%s", os.Getpid(), clean)
}

// newLive makes a real group, deleted when the test ends.
func newLive(t *testing.T, l Limits) *Group {
	t.Helper()
	testhost.Root(t)
	g, err := New(testName(t), l)
	if errors.Is(err, ErrUnavailable) {
		testhost.Missing(t, "cgroups with the memory and pids controllers", err.Error())
	}
	if err != nil {
		t.Fatalf("New(%+v) = %v", l, err)
	}
	t.Cleanup(func() {
		if err := g.Delete(); err != nil {
			t.Errorf("Delete() = %v", err)
		}
	})
	return g
}

// groupDirs is the group's directory in each hierarchy it lives in.
func groupDirs(g *Group) []string {
	switch b := g.b.(type) {
	case v1Group:
		var dirs []string
		for _, d := range b.dirs {
			dirs = append(dirs, d.dir)
		}
		return dirs
	case v2Group:
		return []string{b.dir}
	}
	panic(fmt.Sprintf("unknown backend %T", g.b))
}

// checkInGroup reads /proc/<pid>/cgroup and fails unless pid is in g in
// every hierarchy g lives in.
func checkInGroup(t *testing.T, g *Group, pid int, name string) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatalf("%s (pid %d): %v", name, pid, err)
	}
	want := "/" + parentName + "/" + path.Base(g.path) // below the caller's own group, which differs per v1 hierarchy
	controllers := []string{""}                        // the v2 line, "0::/..."
	if _, ok := g.b.(v1Group); ok {
		controllers = []string{"memory", "pids", "cpu", "cpuacct", "freezer"}
	}
	for _, c := range controllers {
		if c != "" && !hierarchyMounted(c) {
			continue
		}
		found := false
		for line := range strings.Lines(string(b)) {
			fields := strings.SplitN(strings.TrimSpace(line), ":", 3)
			if len(fields) == 3 && slices.Contains(strings.Split(fields[1], ","), c) {
				found = true
				if !strings.HasSuffix(fields[2], want) {
					t.Errorf("%s (pid %d) is in %q cgroup %s, want one ending in %s", name, pid, c, fields[2], want)
				}
			}
		}
		if !found {
			t.Errorf("%s (pid %d) has no %q hierarchy in %q", name, pid, c, b)
		}
	}
}

func hierarchyMounted(controller string) bool {
	_, err := os.Lstat(filepath.Join("/sys/fs/cgroup", controller))
	return err == nil
}

// killAtCleanup kills pid when the test ends, so that a test failing
// because Kill missed something leaves nothing behind.
func killAtCleanup(t *testing.T, pid int) {
	t.Cleanup(func() { _ = unix.Kill(pid, unix.SIGKILL) })
}

// checkDead fails unless pid has exited (possibly a zombie nobody reaped).
func checkDead(t *testing.T, pid int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	// The state follows the parenthesised command name.
	state := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))[0]
	if state != "Z" && state != "X" {
		t.Errorf("process %d is in state %s after Kill, want dead", pid, state)
	}
}

// startWithChild starts cmd, a shell script that backgrounds a child,
// prints the child's pid and then waits on its stdin, in g. It returns
// the child's pid and the rest of the script's output; the child is
// killed at cleanup and the script's stdin closed with it.
func startWithChild(t *testing.T, g *Group, cmd *exec.Cmd) (child int, out *bufio.Reader) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close() })
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(cmd); err != nil {
		t.Fatalf("Start: %v", err)
	}
	out = bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the child's pid: %v", err)
	}
	child, err = strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("child pid %q: %v", line, err)
	}
	killAtCleanup(t, child)
	return child, out
}

func TestStartPutsProcessAndChildrenInGroup(t *testing.T) {
	g := newLive(t, Limits{MemoryMax: 256 << 20, TasksMax: 50})
	cmd := exec.Command("/bin/sh", "-c", `sleep 1000 & echo $!; read x`)
	child, _ := startWithChild(t, g, cmd)
	checkInGroup(t, g, cmd.Process.Pid, "started process")
	checkInGroup(t, g, child, "its child")
	pids, err := g.b.procs()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(pids)
	if want := []int{min(cmd.Process.Pid, child), max(cmd.Process.Pid, child)}; !reflect.DeepEqual(pids, want) {
		t.Errorf("group holds %v, want %v", pids, want)
	}

	if err := g.Kill(); err != nil {
		t.Errorf("Kill: %v", err)
	}
	checkDead(t, cmd.Process.Pid)
	checkDead(t, child)
	_ = cmd.Process.Kill() // should Kill have missed it, Wait still returns
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("Wait after Kill = %v, want killed by SIGKILL", err)
	}
}

func TestStartKeepsArgsEnvDirAndStreams(t *testing.T) {
	g := newLive(t, Limits{TasksMax: 20})
	dir := t.TempDir()
	args := []string{"a b", "", "$(touch pwned)", "*", `"q'`, "new\nline", "-c"}
	cmd := exec.Command("/bin/sh", append([]string{"-c", `printf '[%s]' "$@" "$FOO" "$PWD"; echo err >&2`, "zero"}, args...)...)
	cmd.Env = []string{"FOO=bar"}
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := g.Start(cmd); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("Wait: %v (stderr %q)", err, stderr.String())
	}
	want := "[a b][][$(touch pwned)][*][\"q'][new\nline][-c][bar][" + dir + "]"
	if stdout.String() != want || stderr.String() != "err\n" {
		t.Errorf("output %q, stderr %q; want %q, %q", stdout.String(), stderr.String(), want, "err\n")
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("an argument was run as shell code")
	}
}

func TestTasksMaxStopsForkBomb(t *testing.T) {
	const tasksMax = 20
	g := newLive(t, Limits{TasksMax: tasksMax})
	if !slices.Contains(g.Enforced(), EnforcedTasks) {
		t.Fatalf("Enforced() = %q, want tasks", g.Enforced())
	}
	// A file, not a pipe: the sleeps keep their stderr open, and Wait
	// would wait for them to close a pipe.
	stderr, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd := exec.Command("/bin/sh", "-c", `for i in $(seq 100); do sleep 60 & done`)
	cmd.Stderr = stderr
	if err := g.Start(cmd); err != nil {
		t.Fatalf("Start: %v", err)
	}
	waitErr := cmd.Wait()
	msg, _ := os.ReadFile(stderr.Name())
	if waitErr == nil || !strings.Contains(strings.ToLower(string(msg)), "fork") {
		t.Errorf("fork loop ended with %v, stderr %q; want a failed fork", waitErr, msg)
	}

	st, err := g.Stats()
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	sleeps, err := g.b.procs()
	if err != nil {
		t.Fatal(err)
	}
	if st.Tasks > tasksMax || len(sleeps) > tasksMax || len(sleeps) < tasksMax/2 {
		t.Errorf("group holds %d processes, %d tasks; want between %d and %d", len(sleeps), st.Tasks, tasksMax/2, tasksMax)
	}

	if err := g.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	left, err := g.b.procs()
	if err != nil || len(left) != 0 {
		t.Errorf("after Kill the group holds %v, %v; want nothing", left, err)
	}
	for _, pid := range sleeps {
		checkDead(t, pid)
	}
}

func TestMemoryMaxKillsHog(t *testing.T) {
	const memoryMax = 64 << 20
	g := newLive(t, Limits{MemoryMax: memoryMax, TasksMax: 20})
	if !slices.Contains(g.Enforced(), EnforcedMemory) {
		t.Fatalf("Enforced() = %q, want memory", g.Enforced())
	}
	if !slices.Contains(g.Enforced(), EnforcedSwap) {
		t.Logf("this host does not account swap: the memory limit covers RAM only")
	}
	// tail holds a "line" without end: 300 MiB of it, were it allowed.
	cmd := exec.Command("/bin/sh", "-c", `head -c 300M /dev/zero | tail >/dev/null; echo "tail ended with $?"`)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := g.Start(cmd); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("Wait: %v (output %q)", err, out.String())
	}
	if got := out.String(); !strings.HasSuffix(got, "tail ended with 137\n") {
		t.Errorf("output %q, want tail killed by SIGKILL (137)", got)
	}
	st, err := g.Stats()
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if st.OOMKills < 1 {
		t.Errorf("Stats().OOMKills = %d, want at least 1", st.OOMKills)
	}
	if st.MemoryPeak < memoryMax*3/4 || st.MemoryPeak > memoryMax {
		t.Errorf("Stats().MemoryPeak = %d, want close to the %d limit", st.MemoryPeak, memoryMax)
	}
	if st.CPUTime <= 0 {
		t.Errorf("Stats().CPUTime = %v, want the hog's time", st.CPUTime)
	}
}

func TestCPUQuotaIsWritten(t *testing.T) {
	g := newLive(t, Limits{CPUQuota: 0.5})
	if !slices.Contains(g.Enforced(), EnforcedCPU) {
		testhost.Missing(t, "the cpu controller with CFS bandwidth control", "a kernel with CONFIG_CFS_BANDWIDTH")
	}
	files := map[string]string{"cpu.cfs_quota_us": "50000", "cpu.cfs_period_us": "100000", "cpu.max": "50000 100000"}
	found := 0
	for _, dir := range groupDirs(g) {
		for file, want := range files {
			b, err := os.ReadFile(filepath.Join(dir, file))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			found++
			if got := strings.TrimSpace(string(b)); err != nil || got != want {
				t.Errorf("%s/%s = %q, %v; want %q", dir, file, got, err, want)
			}
		}
	}
	if found == 0 {
		t.Errorf("no CPU quota file in %q", groupDirs(g))
	}
}

func TestDeleteKillsAndRemoves(t *testing.T) {
	g := newLive(t, Limits{TasksMax: 10})
	cmd := exec.Command("sleep", "1000")
	if err := g.Start(cmd); err != nil {
		t.Fatalf("Start: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if err := g.Delete(); err != nil {
		t.Errorf("Delete: %v", err)
	}
	checkDead(t, cmd.Process.Pid)
	_ = cmd.Process.Kill() // should Delete have missed it, Wait still returns
	if err := <-done; err == nil {
		t.Error("sleep exited cleanly, want killed")
	}
	for _, dir := range groupDirs(g) {
		if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after Delete: %v, want gone", dir, err)
		}
	}
	if err := g.Delete(); err != nil {
		t.Errorf("second Delete = %v, want nil", err)
	}
	if err := g.Kill(); err != nil {
		t.Errorf("Kill after Delete = %v, want nil", err)
	}

	// A command started into the deleted group must not run at all.
	cmd = exec.Command("/bin/sh", "-c", "echo ran")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := g.Start(cmd); err == nil {
		err = cmd.Wait()
		if err == nil || strings.Contains(out.String(), "ran") {
			t.Errorf("Start into a deleted group ran the command: %v, output %q", err, out.String())
		}
	}
}

func TestLoadReadsStatsOfExistingGroup(t *testing.T) {
	g := newLive(t, Limits{MemoryMax: 256 << 20, TasksMax: 20})
	cmd := exec.Command("/bin/sh", "-c", `head -c 20M /dev/zero | tail | wc -c`)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := g.Start(cmd); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := cmd.Wait(); err != nil || strings.TrimSpace(out.String()) != strconv.Itoa(20<<20) {
		t.Fatalf("Wait = %v, output %q", err, out.String())
	}
	loaded, err := Load(g.path)
	if err != nil {
		t.Fatalf("Load(%q) = %v", g.path, err)
	}
	st, err := loaded.Stats()
	if err != nil {
		t.Fatalf("Stats of the loaded group: %v", err)
	}
	if st.MemoryPeak < 20<<20 || st.OOMKills != 0 {
		t.Errorf("Load(%q).Stats() = %+v, want a peak of at least 20 MiB and no OOM kill", g.path, st)
	}
	if len(loaded.Enforced()) != 0 {
		t.Errorf("Load(...).Enforced() = %q, want none", loaded.Enforced())
	}

	if _, err := Load("/shelldon/no-such-group"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of a missing group = %v, want fs.ErrNotExist", err)
	}
}

// TestV2StartAndKillOnTheV2Mount runs the v2 code on this host's v2
// mount: a hybrid host's (which has no controllers but does place
// processes with CLONE_INTO_CGROUP, kill groups with cgroup.kill and count
// CPU time), or a unified host's whole hierarchy.
func TestV2StartAndKillOnTheV2Mount(t *testing.T) {
	testhost.Root(t)
	var unified string
	switch cgroups.Mode() {
	case cgroups.Hybrid:
		unified = "/sys/fs/cgroup/unified"
	case cgroups.Unified:
		unified = "/sys/fs/cgroup"
	default:
		testhost.Missing(t, "a cgroup v2 hierarchy (this host mounts only v1)", "boot with systemd.unified_cgroup_hierarchy=1, as a Raspberry Pi OS of today does")
	}
	name := testName(t)
	group, err := ownV2Path(groupSuffix(name))
	if err != nil {
		t.Fatal(err)
	}
	b, err := createV2(unified, group, nil, nil)
	if err != nil {
		t.Fatalf("createV2(%s): %v", group, err)
	}
	g := &Group{path: group, b: b}
	t.Cleanup(func() {
		if err := g.Delete(); err != nil {
			t.Errorf("Delete: %v", err)
		}
		if _, err := os.Lstat(b.dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after Delete: %v, want gone", b.dir, err)
		}
		// Leave the v2 mount as it was, unless another test process is
		// using the parent too.
		_ = os.Remove(filepath.Dir(b.dir))
	})

	cmd := exec.Command("/bin/sh", "-c", `sleep 1000 & echo $!; i=0; while [ $i -lt 20000 ]; do i=$((i + 1)); done; echo spun; read x`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	child, r := startWithChild(t, g, cmd)
	if !cmd.SysProcAttr.Setpgid {
		t.Error("Start dropped SysProcAttr.Setpgid")
	}
	if pgid, err := unix.Getpgid(cmd.Process.Pid); err != nil || pgid != cmd.Process.Pid {
		t.Errorf("process group %d, %v; want its own", pgid, err)
	}
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	checkInGroup(t, g, cmd.Process.Pid, "started process")
	checkInGroup(t, g, child, "its child")

	st, err := g.Stats()
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if st.CPUTime <= 0 {
		t.Errorf("Stats().CPUTime = %v after a busy loop, want more", st.CPUTime)
	}

	if err := g.Kill(); err != nil {
		t.Errorf("Kill: %v", err)
	}
	checkDead(t, cmd.Process.Pid)
	checkDead(t, child)
	_ = cmd.Process.Kill() // should Kill have missed it, Wait still returns
	if err := cmd.Wait(); err == nil {
		t.Error("Wait after Kill = nil, want killed")
	}

	loaded, err := host{mode: cgroups.Unified, root: unified}.load(group)
	if err != nil {
		t.Fatalf("load(%s): %v", group, err)
	}
	if st, err := loaded.Stats(); err != nil || st.CPUTime <= 0 {
		t.Errorf("loaded group's Stats() = %+v, %v; want its CPU time", st, err)
	}
}
