package vm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// KVMEnv chooses the accelerator: "1" asks for KVM (when /dev/kvm
// opens), "0" for TCG. Unset, Boot finds out: KVM is used when /dev/kvm
// opens and a probe boot of the test kernel under it prints the kernel's
// banner within kvmProbeTimeout. On the machines this project's CI runs
// on, /dev/kvm opens but a KVM guest hangs before its first line, so
// presence alone is not enough. The verdict is kept in [CacheDir] for
// this host kernel and guest kernel, so such a machine pays the probe once.
const KVMEnv = "SHELLDON_VM_KVM"

// kvmProbeTimeout bounds the probe: under KVM the banner comes within a
// second, even on a loaded machine within a few.
const kvmProbeTimeout = 15 * time.Second

// Verdicts of a probe, as kept in the cache.
const (
	kvmWorks = "works"
	kvmHangs = "hangs"
)

var (
	accelOnce sync.Once
	accel     acceleration
)

// acceleration is the accelerator every boot of this process uses, and
// why it was chosen.
type acceleration struct {
	name string // "kvm" or "tcg"
	why  string
}

// chooseAccelerator decides once per process, probing when it must.
func chooseAccelerator(qemu, kernel, initrd string) acceleration {
	accelOnce.Do(func() {
		verdictFile := filepath.Join(CacheDir, "kvm-"+verdictKey(kernel))
		cached, _ := os.ReadFile(verdictFile)
		probe := func() string {
			verdict := kvmHangs
			if probeKVM(qemu, kernel, initrd) {
				verdict = kvmWorks
			}
			// A verdict that cannot be kept is found again next time.
			_ = os.WriteFile(verdictFile, []byte(verdict+"\n"), 0o644)
			return verdict
		}
		accel = decideAccelerator(os.Getenv(KVMEnv), kvmOpens(), strings.TrimSpace(string(cached)), probe)
	})
	return accel
}

// decideAccelerator is the choice itself: env is KVMEnv's value, opens
// whether /dev/kvm opens, cached the kept verdict ("" for none), and
// probe finds the verdict when nothing else settles it.
func decideAccelerator(env string, opens bool, cached string, probe func() string) acceleration {
	switch {
	case env == "0":
		return acceleration{"tcg", KVMEnv + "=0"}
	case !opens:
		return acceleration{"tcg", "/dev/kvm does not open"}
	case env == "1":
		return acceleration{"kvm", KVMEnv + "=1"}
	}
	verdict, how := cached, "kept verdict"
	if verdict != kvmWorks && verdict != kvmHangs {
		verdict, how = probe(), "probe"
	}
	if verdict == kvmWorks {
		return acceleration{"kvm", how + ": KVM boots the kernel"}
	}
	return acceleration{"tcg", how + ": a KVM guest hangs before its first line here"}
}

func kvmOpens() bool {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// verdictKey names a verdict after what decides it: the host's kernel
// and the guest's.
func verdictKey(kernel string) string {
	release, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	sum := sha256.Sum256([]byte(strings.TrimSpace(string(release)) + "\x00" + filepath.Base(kernel)))
	return hex.EncodeToString(sum[:8])
}

// probeKVM boots kernel under KVM with no disk and watches its console
// for the banner, then kills it.
func probeKVM(qemu, kernel, initrd string) bool {
	dir, err := os.MkdirTemp("", "shelldon-kvm-probe-")
	if err != nil {
		return false
	}
	defer os.RemoveAll(dir)
	console := filepath.Join(dir, "console.log")
	ctx, cancel := context.WithTimeout(context.Background(), kvmProbeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, qemu, "-accel", "kvm", "-cpu", "host", "-m", "256",
		"-nodefaults", "-nographic", "-no-reboot", "-kernel", kernel, "-initrd", initrd,
		"-append", "console=ttyS0 panic=-1", "-serial", "file:"+console)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return false
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() { cmd.Process.Kill(); <-exited }()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-exited:
			return false
		case <-tick.C:
			if out, _ := os.ReadFile(console); bytes.Contains(out, []byte("Linux version")) {
				return true
			}
		}
	}
}
