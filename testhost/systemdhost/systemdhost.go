package systemdhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"

	"shelldon/images"
	"shelldon/sandbox/image"
	"shelldon/testhost"
)

// CacheDir is where the test-host image is built. It is not the sandbox
// image's cache: a successful build removes every other image in its
// cache, and the two recipes would take turns deleting each other.
const CacheDir = "/var/lib/shelldon/testhost-images"

// sharedRoot holds each container's shared directory on the host. It is
// under /run, not /tmp: a unit with PrivateTmp= would not see a
// directory under the container's /tmp.
const sharedRoot = "/run/shelldon-test"

// sigPoweroff is SIGRTMIN+4, on which systemd powers off. systemd counts
// from glibc's SIGRTMIN, 34 (glibc keeps the kernel's first two for
// itself).
const sigPoweroff = unix.Signal(34 + 4)

const (
	// bootTimeout bounds the boot up to a settled system state.
	bootTimeout = 60 * time.Second
	// poweroffTimeout is how long a clean shutdown may take before the
	// container is killed.
	poweroffTimeout = 20 * time.Second
	pollInterval    = 20 * time.Millisecond
)

// Host is one booted container whose PID 1 is systemd.
type Host struct {
	// Leader is the host pid of the container's systemd.
	Leader int
	// BusAddress is the container's system bus, reachable from the host.
	BusAddress string
	// Dir is a directory bound into the container at the same path, so a
	// path under it means the same file on both sides: a bus socket, a
	// state directory, a copy of the test binary (the host's glibc and
	// the image's are both Debian bookworm's).
	Dir string
	// BootTime is how long it took from starting systemd-nspawn to a
	// settled system state.
	BootTime time.Duration
}

var (
	buildOnce sync.Once
	built     image.Image
	buildErr  error
	bootCount int
	bootMu    sync.Mutex
)

// Boot builds the test-host image (once per process) and boots a fresh
// container from a throwaway overlay of it; the container is powered off
// when the test ends. Each of readOnly, a host directory, is bound into
// the container read-only at the same path. It skips the test when root,
// systemd-nspawn or mmdebstrap is missing.
func Boot(t testing.TB, readOnly ...string) *Host {
	t.Helper()
	testhost.Root(t)
	nspawn := testhost.Tool(t, "systemd-nspawn", "systemd-container")
	testhost.Tool(t, "mmdebstrap", "mmdebstrap")
	testhost.Tool(t, "nsenter", "util-linux")
	buildOnce.Do(func() { built, buildErr = buildImage() })
	if buildErr != nil {
		t.Fatalf("build the test-host image: %v", buildErr)
	}
	h, err := boot(t, nspawn, built.Root, readOnly)
	if err != nil {
		t.Fatalf("boot the test host: %v", err)
	}
	t.Logf("test host booted in %s (leader pid %d)", h.BootTime.Round(time.Millisecond), h.Leader)
	return h
}

func buildImage() (image.Image, error) {
	return image.BuildRecipe(CacheDir, "images/testhost.recipe", images.TestHostRecipe, "")
}

func boot(t testing.TB, nspawn, root string, readOnly []string) (*Host, error) {
	bootMu.Lock()
	bootCount++
	name := fmt.Sprintf("shelldon-test-%d-%d", os.Getpid(), bootCount)
	bootMu.Unlock()
	busDir := filepath.Join(testhost.ShortDir(t), "dbus")
	shared := filepath.Join(sharedRoot, name)
	for _, d := range []string{busDir, shared} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("shared directory: %w", err)
		}
	}
	// The shared directory is a shared mount, so that what the host mounts
	// under it later (a sandbox's overlay) shows inside the container too.
	if err := unix.Mount(shared, shared, "", unix.MS_BIND, ""); err != nil {
		return nil, fmt.Errorf("shared directory: %w", err)
	}
	if err := unix.Mount("", shared, "", unix.MS_SHARED, ""); err != nil {
		unix.Unmount(shared, unix.MNT_DETACH)
		return nil, fmt.Errorf("shared directory: %w", err)
	}
	t.Cleanup(func() {
		unix.Unmount(shared, unix.MNT_DETACH)
		os.RemoveAll(shared)
	})

	var log bytes.Buffer
	// The bus socket is made by the container's dbus-daemon in
	// /run/dbus, which is the host's busDir: the host dials it there.
	args := []string{"--quiet", "--boot", "--directory=" + root,
		"--machine=" + name, "--register=no", "--keep-unit",
		"--volatile=overlay", "--console=pipe", "--private-network",
		"--bind=" + busDir + ":/run/dbus",
		"--bind=" + shared}
	for _, dir := range readOnly {
		args = append(args, "--bind-ro="+dir)
	}
	// No Pdeathsig: Linux sends it when the thread that started nspawn
	// ends, and a test binary ends threads (a goroutine that locked one
	// for a namespace and returned), which killed nspawn mid-test. A
	// killed nspawn does not end its container either; poweroff does.
	cmd := exec.Command(nspawn, args...)
	cmd.Stdout, cmd.Stderr = &log, &log
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start systemd-nspawn: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	h := &Host{BusAddress: "unix:path=" + filepath.Join(busDir, "system_bus_socket"), Dir: shared}
	t.Cleanup(func() {
		if err := poweroff(cmd, exited, h); err != nil {
			t.Errorf("power off the test host: %v\n%s", err, log.String())
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var state string
	for {
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			return nil, fmt.Errorf("systemd-nspawn exited during boot: %v\n%s", err, log.String())
		case <-ctx.Done():
			return nil, fmt.Errorf("no settled system state after %s (last %q)\n%s", bootTimeout, state, log.String())
		case <-tick.C:
		}
		if h.Leader == 0 {
			h.Leader = leaderOf(cmd.Process.Pid)
			continue
		}
		state = systemState(ctx, h.BusAddress)
		if state == "running" || state == "degraded" {
			h.BootTime = time.Since(started)
			if state == "degraded" {
				out, _ := h.Exec(ctx, "systemctl", "--failed", "--no-legend")
				t.Logf("test host is degraded; failed units:\n%s", out)
			}
			return h, nil
		}
	}
}

// orphanGone bounds the wait for an orphaned container to end once its
// systemd is killed.
const orphanGone = 10 * time.Second

// killOrphan kills the container whose systemd is leader (0: none) if it
// still runs, which ends its whole PID namespace, and waits for it to be
// gone. The check that leader is still a namespace's PID 1 keeps a pid
// the kernel has since given to another process safe.
func killOrphan(leader int) error {
	if leader == 0 || innermostPid(leader) != 1 {
		return nil
	}
	if err := unix.Kill(leader, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill the orphaned container's systemd (pid %d): %w", leader, err)
	}
	for deadline := time.Now().Add(orphanGone); alive(leader); {
		if time.Now().After(deadline) {
			return fmt.Errorf("the orphaned container's systemd (pid %d) still runs %s after SIGKILL", leader, orphanGone)
		}
		time.Sleep(pollInterval)
	}
	return nil
}

// alive is whether pid is a process that has not exited (a zombie, not
// yet reaped by the machine's init, has).
func alive(pid int) bool {
	_, fields, err := testhost.ProcStat(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && fields[0] != "Z" && fields[0] != "X"
}

// leaderOf is the child of systemd-nspawn that is PID 1 in its own
// namespace — the container's systemd — or 0 while there is none yet.
// Early on nspawn's child is its short-lived outer helper, which must not
// be mistaken for the leader.
func leaderOf(nspawnPid int) int {
	children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", nspawnPid, nspawnPid))
	for _, f := range strings.Fields(string(children)) {
		if pid, err := strconv.Atoi(f); err == nil && innermostPid(pid) == 1 {
			return pid
		}
	}
	return 0
}

// innermostPid is pid's number in the innermost pid namespace it is in,
// or 0 when it cannot be read.
func innermostPid(pid int) int {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			if ids := strings.Fields(rest); len(ids) > 1 {
				n, _ := strconv.Atoi(ids[len(ids)-1])
				return n
			}
		}
	}
	return 0
}

// HostPID is the pid, in this process's namespace, of the process that is
// pid in the container: a launcher's handle names a worker by the pid
// systemd knows it by, while /proc and credentials here carry the other.
// It is 0 when the container has no process pid (any more): one a
// worker left behind may be killed by its unit's stop before it is
// looked up.
func (h *Host) HostPID(t testing.TB, pid int) int {
	t.Helper()
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", h.Leader))
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
		if other, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", p)); other == ns && innermostPid(p) == pid {
			return p
		}
	}
	return 0
}

// systemState is the manager's SystemState, or "" while the bus or
// systemd does not answer yet.
func systemState(ctx context.Context, address string) string {
	conn, err := Connect(ctx, address)
	if err != nil {
		return ""
	}
	defer conn.Close()
	p, err := conn.SystemStateContext(ctx)
	if err != nil {
		return ""
	}
	s, _ := p.Value.Value().(string)
	return s
}

// Dial opens an authenticated connection to the bus at address, as
// go-systemd's NewConnection wants it.
func Dial(address string) (*godbus.Conn, error) {
	conn, err := godbus.Dial(address)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", address, err)
	}
	if err := conn.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("authenticate to %s: %w", address, err)
	}
	if err := conn.Hello(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("hello to %s: %w", address, err)
	}
	return conn, nil
}

// Connect is a go-systemd connection to the systemd behind the bus at
// address.
func Connect(ctx context.Context, address string) (*sddbus.Conn, error) {
	return sddbus.NewConnection(func() (*godbus.Conn, error) { return Dial(address) })
}

// Exec runs argv inside the container, in all its namespaces, and returns
// what it printed (stdout and stderr).
func (h *Host) Exec(ctx context.Context, argv ...string) ([]byte, error) {
	args := append([]string{"--target", strconv.Itoa(h.Leader), "--all", "--"}, argv...)
	out, err := exec.CommandContext(ctx, "nsenter", args...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("in the test host, %s: %w: %s", strings.Join(argv, " "), err, out)
	}
	return out, nil
}

// poweroff asks the container's systemd to power off (SIGRTMIN+4, as
// `systemctl poweroff` would) and waits for systemd-nspawn to exit,
// killing it when it does not.
func poweroff(cmd *exec.Cmd, exited chan error, h *Host) error {
	select {
	case <-exited:
		// nspawn is gone: it ended with its container, or it was killed
		// and the container runs on, its systemd now a child of the
		// machine's init, until it is killed.
		return killOrphan(h.Leader)
	default:
	}
	if h.Leader == 0 {
		cmd.Process.Kill()
		<-exited
		return nil
	}
	if err := unix.Kill(h.Leader, sigPoweroff); err != nil && !errors.Is(err, unix.ESRCH) {
		_ = unix.Kill(h.Leader, unix.SIGKILL)
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("signal the container's systemd: %w", err)
	}
	select {
	case err := <-exited:
		if err != nil {
			return fmt.Errorf("systemd-nspawn: %w", err)
		}
		return nil
	case <-time.After(poweroffTimeout):
		// Killing the container's PID 1 ends its whole PID namespace;
		// killing nspawn alone would leave the container running.
		_ = unix.Kill(h.Leader, unix.SIGKILL)
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("no power-off within %s; killed", poweroffTimeout)
	}
}
