package main

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shelldon/sandbox/cgroup"
	"shelldon/testhost"
)

// The board class BenchmarkBoardClass runs the installed pet in: the
// throughput of one Cortex-A53 core at 1 GHz, the Raspberry Pi Zero 2 W's,
// and the memory an owner's Zero 2 W leaves to Linux.
//
// No pure-Go workload has a published figure on a Zero 2 W, so the
// board's speed comes from one that has: 7-Zip's LZMA benchmark, whose
// single-threaded rating on a Raspberry Pi Zero 2 (RP3A0) at 1000 MHz is
// 838 MIPS (sbc-bench's results, "7-zip single" column, run 3E85:
// https://github.com/ThomasKaiser/sbc-bench/blob/master/Sorted-Results.md).
// The calibration workload (boardWorkloadOp, flate compression: integer,
// branchy and cache-bound as LZMA is) was measured on the machine the
// figures in BENCHMARKS.md come from beside `7zz b -mmt1` (7-Zip 26.02):
// boardReferenceOps ops per CPU-second where 7-Zip rated
// boardReference7ZipMIPS (its R/U total, per 100 % of one CPU). A Zero 2 W
// therefore does boardReferenceOps × 838 / boardReference7ZipMIPS ops a
// second: boardOpsPerSecond. At run time the workload is measured here
// (ops per CPU-second of one thread) and the quota is that figure's share
// of one CPU, then checked by running the workload under it. The quota is
// cpu.max on cgroup v2 and cpu.cfs_quota_us on v1 (package cgroup writes
// whichever the host has), over a period of 100 ms.
const (
	zero2W7ZipMIPS         = 838
	boardReference7ZipMIPS = 3066 // two runs, 3041 and 3092, on an AMD EPYC VM, 4 December 2026
	boardReferenceOps      = 157  // the median of ten 2 s runs beside them
	boardOpsPerSecond      = float64(boardReferenceOps) * zero2W7ZipMIPS / boardReference7ZipMIPS
	// boardMemory is a Zero 2 W's 512 MB less what its firmware and GPU
	// keep: what `free` shows there, for everything the pet runs (core,
	// broker, panel, workers and sandboxes).
	boardMemory = 416 << 20
)

// boardWorkloadEnv makes the test binary run the calibration workload
// for the duration it holds and print its ops per wall-clock second:
// the process a candidate quota is checked with, in a group of its own.
const boardWorkloadEnv = "SHELLDON_BOARD_WORKLOAD"

// boardWorkloadInput is the text each op compresses: 64 KiB of words
// from a fixed list in a fixed pseudo-random order, compressible as
// prose is. The same bytes on every machine and every run.
var boardWorkloadInput = func() []byte {
	words := strings.Fields("the pet owner asked for a small tool that reads the weather and writes a short note " +
		"about rain wind and sun to the board's screen every morning before work while the kettle boils")
	var text bytes.Buffer
	state := uint32(2463534242)
	for text.Len() < 64<<10 {
		state ^= state << 13 // xorshift32: deterministic, no seed from the clock
		state ^= state >> 17
		state ^= state << 5
		text.WriteString(words[state%uint32(len(words))])
		text.WriteByte(" \n"[state>>31])
	}
	return text.Bytes()[:64<<10]
}()

// boardWorkload runs ops of the calibration workload; one compressor is
// reused, so an op allocates nothing and the garbage collector stays
// out of the figure.
type boardWorkload struct{ w *flate.Writer }

func newBoardWorkload() *boardWorkload {
	w, err := flate.NewWriter(io.Discard, 6)
	if err != nil {
		panic(err) // level 6 is always valid
	}
	return &boardWorkload{w: w}
}

// op compresses boardWorkloadInput once, at flate's default level.
func (b *boardWorkload) op() {
	b.w.Reset(io.Discard)
	b.w.Write(boardWorkloadInput)
	b.w.Close()
}

// threadCPU is the CPU time of the calling thread.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err) // Linux always has the clock
	}
	return time.Duration(ts.Nano())
}

// opsPerCPUSecond runs the workload on one locked thread for at least
// spend of its CPU time and returns ops per CPU-second: this machine's
// speed per core, whatever else shares it.
func opsPerCPUSecond(spend time.Duration) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w := newBoardWorkload()
	w.op() // warm the caches and the compressor's tables
	start := threadCPU()
	n := 0
	for threadCPU()-start < spend {
		w.op()
		n++
	}
	return float64(n) / (threadCPU() - start).Seconds()
}

// runBoardWorkload is the test binary run with boardWorkloadEnv: ops per
// wall-clock second over the duration the variable holds, on stdout.
func runBoardWorkload() int {
	d, err := time.ParseDuration(os.Getenv(boardWorkloadEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	runtime.GOMAXPROCS(1) // the work of one thread, as the figure is
	w := newBoardWorkload()
	w.op()
	start := time.Now()
	n := 0
	for time.Since(start) < d {
		w.op()
		n++
	}
	fmt.Println(float64(n) / time.Since(start).Seconds())
	return 0
}

// boardQuota is a calibrated CPU quota for the board class.
type boardQuota struct {
	// HereOps is the workload's ops per CPU-second here, unconstrained.
	HereOps float64
	// CPUs is the quota, in CPUs (cpu.max's quota over its period).
	CPUs float64
	// UnderQuotaOps is the workload's ops per wall-clock second under it,
	// against boardOpsPerSecond, the board's.
	UnderQuotaOps float64
}

// calibrateBoardQuota measures the workload here and finds the quota
// that gives one thread of it the board's throughput: the first guess is
// the share of one CPU the figures say, then each try under a quota
// corrects it by what it missed (the scheduler's periods cost a little),
// until it is within 5 % (or four tries have run: a busy machine's
// scheduler may not give the quota at all).
func calibrateBoardQuota(b *testing.B) boardQuota {
	b.Helper()
	q := boardQuota{HereOps: opsPerCPUSecond(time.Second)}
	q.CPUs = boardOpsPerSecond / q.HereOps
	for try := 0; ; try++ {
		q.UnderQuotaOps = workloadUnderQuota(b, q.CPUs, try)
		b.Logf("calibration: %.0f ops/CPU-s here; under %.3f CPUs %.1f ops/s, the board's %.1f", q.HereOps, q.CPUs, q.UnderQuotaOps, boardOpsPerSecond)
		miss := boardOpsPerSecond / q.UnderQuotaOps
		if math.Abs(miss-1) < 0.05 || try == 3 { // the table shows how near the last try came
			return q
		}
		q.CPUs *= miss
	}
}

// workloadUnderQuota runs the workload for two seconds in a group of its
// own limited to cpus, and returns its ops per wall-clock second.
func workloadUnderQuota(b *testing.B, cpus float64, try int) float64 {
	b.Helper()
	group := newBoardGroup(b, fmt.Sprintf("board-calibrate-%d-%d", os.Getpid(), try), cgroup.Limits{CPUQuota: cpus})
	defer group.Delete()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), boardWorkloadEnv+"=2s")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := group.Start(cmd); err != nil {
		b.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("the calibration workload: %v\n%s", err, out.String())
	}
	ops, err := strconv.ParseFloat(strings.TrimSpace(out.String()), 64)
	if err != nil {
		b.Fatalf("the calibration workload printed %q: %v", out.String(), err)
	}
	return ops
}

// newBoardGroup makes a control group below this process's own with
// limits l, and checks the host holds them: it skips, naming what is
// missing, where it cannot. The group, what runs in it and the groups
// made below it go at cleanup.
func newBoardGroup(b *testing.B, name string, l cgroup.Limits) *cgroup.Group {
	b.Helper()
	testhost.Root(b)
	group, err := cgroup.New(name, l)
	if err != nil {
		testhost.Missing(b, "a writable cgroup hierarchy with the cpu and memory controllers ("+err.Error()+")",
			"run as root on a host with cgroups")
	}
	enforced := group.Enforced()
	for _, want := range []struct {
		set  bool
		name string
	}{{l.CPUQuota > 0, cgroup.EnforcedCPU}, {l.MemoryMax > 0, cgroup.EnforcedMemory}} {
		if want.set && !strings.Contains(strings.Join(enforced, " "), want.name) {
			group.Delete()
			testhost.Missing(b, "the cgroup "+want.name+" controller (the group holds only "+strings.Join(enforced, ", ")+")",
				"mount the cpu and memory controllers (cgroup v2, or v1 with both)")
		}
	}
	b.Cleanup(func() {
		group.Kill()
		removeNestedGroups(b, name)
		if err := group.Delete(); err != nil {
			b.Error(err)
		}
	})
	return group
}

// removeNestedGroups removes the groups left below the group name, in
// every hierarchy, deepest first: a sandbox's run deletes its own group
// but leaves the shelldon/ directory that held it, and a group with a
// child cannot be removed. Its processes must be gone.
func removeNestedGroups(b *testing.B, name string) {
	var nested []string
	filepath.WalkDir("/sys/fs/cgroup", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.Contains(path, "/shelldon/"+name+"/") {
			nested = append(nested, path)
		}
		return nil
	})
	slices.SortFunc(nested, func(x, y string) int { return len(y) - len(x) })
	for _, dir := range nested {
		if err := os.Remove(dir); err != nil {
			b.Logf("remove the nested cgroup %s: %v", dir, err)
		}
	}
}
