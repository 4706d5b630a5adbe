package vm

import (
	"bytes"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"shelldon/testhost"
)

// monitorTimeout bounds one exchange with qemu's monitor: a monitor that
// does not answer within it is itself the finding (qemu's main loop is
// stuck).
const monitorTimeout = 5 * time.Second

// noteUnreachable logs, once per VM and only after the boot and before
// the power-off, what qemu and the host were doing when ssh could not
// reach the guest. A guest that stops answering says nothing of why: the
// monitor tells a paused VM (and why it paused) from a running one,
// qemu's threads tell spinning vCPUs from a stuck process, and the
// host's free space tells the commonest cause of a pause.
func (v *VM) noteUnreachable(why error) {
	if v.t == nil || !v.booted.Load() || v.stopping.Load() {
		return
	}
	v.diagnosed.Do(func() {
		v.t.Logf("ssh could not reach the test VM (%v); what qemu and the host were doing:\n%s", why, v.diagnose())
	})
}

// diagnose describes the VM from the host's side, one finding a line.
func (v *VM) diagnose() string {
	var b strings.Builder
	if status, err := v.monitor("info status"); err != nil {
		fmt.Fprintf(&b, "qemu's monitor: %v\n", err)
	} else {
		fmt.Fprintf(&b, "qemu's monitor: %s\n", status)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(v.Disk), &fs); err != nil {
		fmt.Fprintf(&b, "host: free space beside the disk: %v\n", err)
	} else {
		fmt.Fprintf(&b, "host: %d MiB free on the file system of %s\n", fs.Bavail*uint64(fs.Bsize)>>20, v.Disk)
	}
	b.WriteString(threadsCPU(v.qemuPID, time.Second))
	b.WriteString(v.master.describe())
	fmt.Fprintf(&b, "console (%s), its end:\n%s\n", v.Console, v.consoleTail())
	return b.String()
}

// hmpNoise is what qemu's human monitor adds around an answer: its
// terminal escapes and the prompt.
var hmpNoise = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]|\(qemu\) ?`)

// monitor sends one command to qemu's human monitor and returns its
// answer, without the echo, escapes and prompts.
func (v *VM) monitor(command string) (string, error) {
	conn, err := net.DialTimeout("unix", v.monitorSocket, monitorTimeout)
	if err != nil {
		return "", fmt.Errorf("reach qemu's monitor: %w", err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(monitorTimeout)); err != nil {
		return "", fmt.Errorf("qemu's monitor: %w", err)
	}
	// The greeting ends with the first prompt; the answer with the
	// second.
	var got bytes.Buffer
	readUntilPrompts := func(n int) error {
		buf := make([]byte, 4096)
		for bytes.Count(got.Bytes(), []byte("(qemu) ")) < n {
			k, err := conn.Read(buf)
			got.Write(buf[:k])
			if err != nil {
				return fmt.Errorf("qemu's monitor did not answer %q within %s (its main loop is stuck): %w; it said %q", command, monitorTimeout, err, got.Bytes())
			}
			if got.Len() > 1<<20 {
				return fmt.Errorf("qemu's monitor said more than 1 MiB to %q", command)
			}
		}
		return nil
	}
	if err := readUntilPrompts(1); err != nil {
		return "", err
	}
	if _, err := conn.Write([]byte(command + "\n")); err != nil {
		return "", fmt.Errorf("qemu's monitor: %w", err)
	}
	if err := readUntilPrompts(2); err != nil {
		return "", err
	}
	answer := got.String()[strings.Index(got.String(), "(qemu) ")+len("(qemu) "):]
	answer = strings.TrimSpace(hmpNoise.ReplaceAllString(strings.ReplaceAll(answer, "\r", ""), ""))
	// The first line is the command's echo.
	if _, rest, ok := strings.Cut(answer, "\n"); ok {
		return strings.TrimSpace(rest), nil
	}
	return "", nil
}

// threadsCPU lists pid's threads with their state and the CPU time each
// used over interval: vCPU threads at 0 ms in a running VM mean a guest
// that waits on something, a main thread in D state a host that does not
// answer qemu.
func threadsCPU(pid int, interval time.Duration) string {
	if pid == 0 {
		return "qemu's threads: no process\n"
	}
	before := threadTicks(pid)
	time.Sleep(interval)
	after := threadTicks(pid)
	if len(after) == 0 {
		return fmt.Sprintf("qemu's threads: none under /proc/%d (it has exited)\n", pid)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "qemu's threads (state, CPU in %s, kernel wait):\n", interval)
	ticksPerSecond := int64(100) // USER_HZ on Linux
	for _, tid := range slices.Sorted(maps.Keys(after)) {
		th := after[tid]
		used := th.ticks - before[tid].ticks
		fmt.Fprintf(&b, "  %d %-16s %s %4d ms %s\n", tid, th.name, th.state, used*1000/ticksPerSecond, th.wchan)
	}
	return b.String()
}

type threadSample struct {
	name, state string
	ticks       int64 // user and system, in USER_HZ
	wchan       string
}

// threadTicks reads /proc/pid/task/*/stat, by thread id.
func threadTicks(pid int) map[int]threadSample {
	dirs, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/[0-9]*", pid))
	samples := make(map[int]threadSample, len(dirs))
	for _, dir := range dirs {
		name, fields, err := testhost.ProcStat(filepath.Join(dir, "stat"))
		if err != nil || len(fields) < 13 {
			continue // the thread ended meanwhile
		}
		tid, _ := strconv.Atoi(filepath.Base(dir))
		utime, _ := strconv.ParseInt(fields[11], 10, 64)
		stime, _ := strconv.ParseInt(fields[12], 10, 64)
		wchan, _ := os.ReadFile(filepath.Join(dir, "wchan"))
		samples[tid] = threadSample{name: name, state: fields[0], ticks: utime + stime, wchan: string(wchan)}
	}
	return samples
}
