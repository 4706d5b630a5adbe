package vm

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"shelldon/images"
	"shelldon/sandbox/image"
	"shelldon/testhost"
)

// CacheDir is where the VM's root file system is built. It is not the
// sandbox image's cache (nor the test host's): a successful build removes
// every other image in its cache.
const CacheDir = "/var/lib/shelldon/testvm-images"

// ForwardAddress is the guest's side of [Options.Forward]: a connection
// from the guest to ForwardAddress:port reaches the host loopback port
// that port is mapped to.
const ForwardAddress = "10.0.2.100"

const (
	defaultMemoryMB = 512
	// minMemoryMB is about what systemd, sshd and a python3 need to boot.
	minMemoryMB = 256
	// diskTimeout bounds making a test's disk, installing its debs included.
	diskTimeout = 5 * time.Minute
	// probeTimeout bounds one ssh attempt while the guest boots.
	probeTimeout  = 15 * time.Second
	probeInterval = time.Second
	// poweroffTimeout is how long a clean shutdown may take before qemu
	// is killed.
	poweroffTimeout = 60 * time.Second
	// consoleTailLines is how much of the serial console an error quotes.
	consoleTailLines = 40
	kernelCmdline    = "root=/dev/vda rw systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all quiet console="
)

// machine is what a guest architecture decides: the qemu that emulates
// it, its machine's flags, the console's device and the root's recipe.
type machine struct {
	qemu, qemuPackage string
	flags             []string // after -accel: the board and its CPU
	console           string   // the serial console's device in the guest
	// bootTimeout bounds the boot from starting qemu to a settled
	// system state.
	bootTimeout time.Duration
	recipeName  string
	recipe      []byte
	// buildTakes bounds how long building the root takes.
	buildTakes time.Duration
	// image builds the root from the recipe once per test binary.
	image func() (image.Image, error)
}

// machines are the guests Boot can boot, by Debian architecture: the
// host's own (amd64) and the board's (arm64, a Raspberry Pi Zero 2W's
// Cortex-A53, emulated by TCG).
var machines = map[string]*machine{
	"amd64": {
		qemu: "qemu-system-x86_64", qemuPackage: "qemu-system-x86", console: "ttyS0",
		// Under TCG a boot takes about 20 s on a 2026 amd64 host.
		bootTimeout: 180 * time.Second,
		recipeName:  "images/testvm.recipe",
		recipe:      images.TestVMRecipe,
		buildTakes:  10 * time.Minute,
		image:       buildOnce("images/testvm.recipe", images.TestVMRecipe, "amd64"),
	},
	"arm64": {
		qemu: "qemu-system-aarch64", qemuPackage: "qemu-system-arm", console: "ttyAMA0",
		flags: []string{"-M", "virt", "-cpu", "cortex-a53"},
		// Every instruction emulated: TCG boots an arm64 guest in
		// minutes, not seconds, on a loaded host.
		bootTimeout: 10 * time.Minute,
		recipeName:  "images/testvm-arm64.recipe",
		recipe:      images.TestVMArm64Recipe,
		// Its initrd made under qemu-user took 15 minutes on a loaded
		// 2-core host.
		buildTakes: 30 * time.Minute,
		image:      buildOnce("images/testvm-arm64.recipe", images.TestVMArm64Recipe, "arm64"),
	},
}

// buildOnce builds an architecture's root (once per cache and recipe; then
// it is found in the cache) the first time a test asks.
func buildOnce(name string, recipe []byte, arch string) func() (image.Image, error) {
	return sync.OnceValues(func() (image.Image, error) {
		return image.BuildRecipe(CacheDir, name, recipe, arch)
	})
}

// machineFor is the machine of a Debian architecture; "" is amd64.
func machineFor(arch string) (*machine, error) {
	if arch == "" {
		arch = "amd64"
	}
	m, ok := machines[arch]
	if !ok {
		return nil, fmt.Errorf("options: Arch %q: want amd64 or arm64", arch)
	}
	return m, nil
}

// Options says what to boot.
type Options struct {
	// Arch is the guest's Debian architecture: "" or amd64 (this host's,
	// under KVM where it works), or arm64 (the board's, always under
	// TCG).
	Arch string
	// MemoryMB is the guest's memory; 0 means 512.
	MemoryMB int
	// Debs are .deb files installed into the guest's root before it
	// boots, so it comes up with them installed and their units enabled.
	Debs []string
	// Forward maps a guest port on [ForwardAddress] to a host loopback
	// port: how the guest reaches the test's servers, and all it reaches.
	Forward map[int]int
	// Trees are host directories copied to the same path in the guest
	// (the sandbox image's cache, say, which the guest cannot build
	// without a network).
	Trees []string
}

// VM is one booted guest, powered off when its test ends.
type VM struct {
	// Console is the file the guest's serial console is written to.
	Console string
	// Disk is the guest's disk image, a sparse file removed with the test.
	Disk string
	// SSHPort is the host loopback port the guest's sshd answers on.
	SSHPort int
	// BootTime is how long it took from starting qemu to a settled
	// system state.
	BootTime time.Duration

	ssh     string // the ssh program
	key     string // the test's private key, authorized for the guest's root
	control string // the socket of the ssh master connection

	// What tells, when ssh stops reaching the guest, why (diagnose.go).
	t             testing.TB
	monitorSocket string // qemu's human monitor
	qemuPID       int
	master        *sshMaster
	booted        atomic.Bool // ssh failing before it is the boot's own business
	stopping      atomic.Bool // and after it, the power-off's
	diagnosed     sync.Once
}

// Require skips t, or fails it under SHELLDON_REQUIRE_ALL=1, unless this
// host can boot a test VM of the Debian architecture arch ("" for amd64):
// an amd64 host, root, and the tools installed (for arm64 also
// qemu-user-static registered with binfmt_misc, which builds its root).
// Boot checks the same; a test calls Require first when it has slow work
// to do before booting (building a .deb, say).
func Require(t testing.TB, arch string) {
	t.Helper()
	m, err := machineFor(arch)
	if err != nil {
		t.Fatalf("vm.Require: %v", err)
	}
	requireTools(t, arch, m)
}

// tools are the paths of the programs Boot runs.
type tools struct {
	qemu, mkfs, ssh, sshKeygen, nspawn string
}

func requireTools(t testing.TB, arch string, m *machine) tools {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		testhost.Missing(t, "an amd64 host", "the test VMs' roots are built with this host's Debian tools for amd64 and, under qemu-user-static, arm64")
	}
	testhost.Root(t)
	if arch != "" && arch != "amd64" {
		if err := image.CheckEmulation(arch); err != nil {
			testhost.Missing(t, "qemu-user-static registered with binfmt_misc", err.Error())
		}
	}
	found := tools{
		qemu:      testhost.Tool(t, m.qemu, m.qemuPackage),
		mkfs:      testhost.Tool(t, "mkfs.ext4", "e2fsprogs"),
		ssh:       testhost.Tool(t, "ssh", "openssh-client"),
		sshKeygen: testhost.Tool(t, "ssh-keygen", "openssh-client"),
		nspawn:    testhost.Tool(t, "systemd-nspawn", "systemd-container"),
	}
	testhost.Tool(t, "mmdebstrap", "mmdebstrap")
	return found
}

// Boot builds the VM's root file system (once per cache, recipe and
// architecture), makes this test a disk from a copy of it, boots it under
// qemu and waits until systemd says the system is running (or degraded,
// whose failed units it logs). The guest is powered off when the test
// ends. It skips the test when root or a tool is missing, and fails it
// when the guest does not come up within its machine's boot timeout (3
// minutes for amd64, 10 for arm64), quoting the serial console's end.
func Boot(t testing.TB, opts Options) *VM {
	t.Helper()
	m, err := machineFor(opts.Arch)
	if err != nil {
		t.Fatalf("vm.Boot: %v", err)
	}
	tools := requireTools(t, opts.Arch, m)
	var socat string
	if len(opts.Forward) > 0 {
		socat = testhost.Tool(t, "socat", "socat")
	}
	if err := opts.check(); err != nil {
		t.Fatalf("vm.Boot: %v", err)
	}
	if recipe, err := image.ParseRecipe(m.recipeName, m.recipe); err == nil && !image.Built(CacheDir, recipe, opts.Arch) {
		testhost.TimeToBuild(t, "the test VM's root from "+m.recipeName, m.buildTakes)
	}
	built, err := m.image()
	if err != nil {
		t.Fatalf("build the test VM image from %s: %v", m.recipeName, err)
	}
	if built.Fresh {
		t.Logf("test VM image built in %s: %s", built.Took, built.Root)
	}

	// A short directory: the ssh master's socket path must fit sun_path,
	// and qemu's option syntax has no room for commas in paths.
	dir := testhost.ShortDir(t)
	v := &VM{Console: filepath.Join(dir, "console.log"), Disk: filepath.Join(dir, "disk.img"), ssh: tools.ssh,
		key: filepath.Join(dir, "id_ed25519"), control: filepath.Join(dir, "ssh-master"),
		t: t, monitorSocket: filepath.Join(dir, "monitor")}
	if out, err := exec.Command(tools.sshKeygen, "-q", "-t", "ed25519", "-N", "", "-C", "shelldon-test", "-f", v.key).CombinedOutput(); err != nil {
		t.Fatalf("make the test's ssh key: %v\n%s", err, out)
	}
	publicKey, err := os.ReadFile(v.key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	kernel, initrd, err := bootFiles(built.Root)
	if err != nil {
		t.Fatal(err)
	}

	diskCtx, cancelDisk := context.WithTimeout(context.Background(), diskTimeout)
	defer cancelDisk()
	started := time.Now()
	size, err := makeDisk(diskCtx, disk{image: built.Root, path: v.Disk, work: dir, publicKey: publicKey, debs: opts.Debs, trees: opts.Trees, mkfs: tools.mkfs, nspawn: tools.nspawn})
	if err != nil {
		t.Fatalf("make the test VM's disk: %v", err)
	}
	t.Logf("test VM disk made in %s: %d MiB, %d MiB reserved on the host", time.Since(started).Round(time.Millisecond), size.apparent>>20, size.allocated>>20)

	if v.SSHPort, err = freePort(); err != nil {
		t.Fatal(err)
	}
	qemuLog := filepath.Join(dir, "qemu.log")
	logFile, err := os.Create(qemuLog)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	accel := acceleration{"tcg,thread=multi", "an emulated architecture"}
	if m == machines["amd64"] {
		accel = chooseAccelerator(tools.qemu, kernel, initrd)
	}
	cmd := exec.Command(tools.qemu, qemuArgs(opts, m, v, accel.name, kernel, initrd, socat)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// qemu must not outlive a test binary that dies without cleaning up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	ctx, cancel := context.WithTimeout(context.Background(), m.bootTimeout)
	defer cancel()
	started = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start qemu: %v", err)
	}
	v.qemuPID = cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if err := v.powerOff(cmd, exited, v.booted.Load()); err != nil {
			t.Errorf("power off the test VM: %v\n%s", err, v.consoleTail())
		}
		v.master.stop()
	})

	v.master, err = v.waitReady(ctx, t, exited, m.bootTimeout)
	if err != nil {
		qemuOut, _ := os.ReadFile(qemuLog)
		t.Fatalf("boot the test VM: %v\nqemu: %s\nconsole (%s):\n%s", err, qemuOut, v.Console, v.consoleTail())
	}
	v.BootTime = time.Since(started)
	v.booted.Store(true)
	t.Logf("test VM booted in %s (%s, %s; ssh on 127.0.0.1:%d)", v.BootTime.Round(time.Millisecond), accel.name, accel.why, v.SSHPort)
	return v
}

func (o Options) check() error {
	if o.MemoryMB != 0 && o.MemoryMB < minMemoryMB {
		return fmt.Errorf("options: MemoryMB %d: want 0 (for %d) or at least %d", o.MemoryMB, defaultMemoryMB, minMemoryMB)
	}
	for guest, host := range o.Forward {
		if guest < 1 || guest > 65535 || host < 1 || host > 65535 {
			return fmt.Errorf("options: Forward %d → %d: ports run from 1 to 65535", guest, host)
		}
	}
	for _, deb := range o.Debs {
		if !strings.HasSuffix(deb, ".deb") {
			return fmt.Errorf("options: Debs: %s is not a .deb file", deb)
		}
		if _, err := os.Stat(deb); err != nil {
			return fmt.Errorf("options: Debs: %w", err)
		}
	}
	return nil
}

// bootFiles finds the kernel and its initrd in the root's /boot. The
// root's /vmlinuz symlink is not followed: were it absolute, it would
// lead to the host's own kernel.
func bootFiles(root string) (kernel, initrd string, err error) {
	kernels, err := filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
	if err != nil || len(kernels) == 0 {
		return "", "", fmt.Errorf("no kernel in %s/boot", root)
	}
	// One kernel is installed; were there more, the newest sorts last
	// among Debian's same-ABI names.
	slices.Sort(kernels)
	kernel = kernels[len(kernels)-1]
	initrd = filepath.Join(root, "boot", "initrd.img-"+strings.TrimPrefix(filepath.Base(kernel), "vmlinuz-"))
	if _, err := os.Stat(initrd); err != nil {
		return "", "", fmt.Errorf("initrd of %s: %w", kernel, err)
	}
	return kernel, initrd, nil
}

// freePort is a loopback TCP port that was free a moment ago, for qemu to
// listen on.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// qemuArgs boots the kernel directly (no firmware disk, no boot loader)
// with the disk on virtio. The network is qemu's user mode with
// restrict=on, so the guest has no route out: sshd is reached through a
// host forward on loopback, and each Options.Forward through a guest
// forward that runs socat for every connection (a guest forward to a tcp
// character device would carry one connection for the whole boot).
func qemuArgs(opts Options, m *machine, v *VM, accel, kernel, initrd, socat string) []string {
	memory := opts.MemoryMB
	if memory == 0 {
		memory = defaultMemoryMB
	}
	netdev := fmt.Sprintf("user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:%d-:22", v.SSHPort)
	guestPorts := make([]int, 0, len(opts.Forward))
	for guest := range opts.Forward {
		guestPorts = append(guestPorts, guest)
	}
	slices.Sort(guestPorts)
	for _, guest := range guestPorts {
		netdev += fmt.Sprintf(",guestfwd=tcp:%s:%d-cmd:%s - TCP:127.0.0.1:%d", ForwardAddress, guest, socat, opts.Forward[guest])
	}
	args := append([]string{"-accel", accel}, m.flags...)
	if accel == "kvm" {
		args = append(args, "-cpu", "host")
	}
	return append(args,
		"-m", strconv.Itoa(memory), "-smp", "2",
		"-nodefaults", "-nographic", "-no-reboot",
		"-kernel", kernel, "-initrd", initrd, "-append", kernelCmdline+m.console,
		// The disk is thrown away with the test, so nothing needs flushing.
		"-drive", "file="+v.Disk+",format=raw,if=virtio,cache=unsafe",
		"-netdev", netdev, "-device", "virtio-net-pci,netdev=net0,romfile=", // no network boot ROM: the kernel is given
		"-device", "virtio-rng-pci",
		"-serial", "file:"+v.Console,
		// For the diagnosis when the guest stops answering (diagnose.go).
		"-monitor", "unix:"+v.monitorSocket+",server=on,wait=off")
}

// waitReady waits for sshd to answer, opens the master connection every
// later command shares, and waits for systemd to settle.
func (v *VM) waitReady(ctx context.Context, t testing.TB, exited chan error, bootTimeout time.Duration) (*sshMaster, error) {
	tick := time.NewTicker(probeInterval)
	defer tick.Stop()
	for {
		attempt, cancel := context.WithTimeout(ctx, probeTimeout)
		_, err := v.Exec(attempt, "true")
		cancel()
		if err == nil {
			break
		}
		select {
		case exitErr := <-exited:
			exited <- exitErr // for the cleanup
			return nil, fmt.Errorf("qemu exited during boot: %v", exitErr)
		case <-ctx.Done():
			return nil, fmt.Errorf("ssh did not answer within %s; last: %v", bootTimeout, err)
		case <-tick.C:
		}
	}
	master, err := v.startMaster()
	if err != nil {
		return nil, err
	}
	out, err := v.Exec(ctx, "systemctl", "is-system-running", "--wait")
	state := strings.TrimSpace(string(out))
	switch {
	case state == "running":
	case state == "degraded":
		failed, _ := v.Exec(ctx, "systemctl", "--failed", "--no-legend")
		t.Logf("test VM is degraded; failed units:\n%s", failed)
	default:
		return master, fmt.Errorf("system state %q: %v", state, err)
	}
	return master, nil
}

// powerOff asks a booted guest to power off and waits for qemu to exit,
// killing it when it does not; a guest that did not boot is killed at
// once.
func (v *VM) powerOff(cmd *exec.Cmd, exited chan error, booted bool) error {
	select {
	case <-exited:
		return nil // it stopped on its own; the boot error says why
	default:
	}
	if !booted {
		_ = cmd.Process.Kill()
		<-exited
		return nil
	}
	v.stopping.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	// The connection may drop before ssh hears back; qemu exiting is
	// what counts.
	_, _ = v.Exec(ctx, "systemctl", "poweroff")
	cancel()
	timer := time.NewTimer(poweroffTimeout)
	defer timer.Stop()
	select {
	case err := <-exited:
		if err != nil {
			return fmt.Errorf("qemu: %w", err)
		}
		return nil
	case <-timer.C:
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("no power-off within %s; killed qemu", poweroffTimeout)
	}
}

// consoleTail is the end of the serial console, for error messages.
func (v *VM) consoleTail() string {
	data, err := os.ReadFile(v.Console)
	if err != nil {
		return fmt.Sprintf("(no console: %v)", err)
	}
	lines := strings.Split(strings.ReplaceAll(string(data), "\r", ""), "\n")
	if len(lines) > consoleTailLines {
		lines = lines[len(lines)-consoleTailLines:]
	}
	return strings.Join(lines, "\n")
}
