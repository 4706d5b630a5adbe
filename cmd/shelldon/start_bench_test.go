package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkStart runs the built binaries (`make build`) from start to
// exit, as a turn starts its worker and python_eval its evaluator: the
// Go runtime's start, every package's init and the page faults of a
// binary's size. It reports the median wall time and minor page faults
// over the runs, and, from one run with GODEBUG=inittrace=1, how many
// packages ran an init, their summed clock time and the bytes they
// allocated. Run with -benchtime=200x.
func BenchmarkStart(b *testing.B) {
	shelldon, worker := builtBinary(b), madeWorker(b)
	for _, run := range []struct {
		name  string
		argv  []string
		stdin string
	}{
		{"shelldon-version", []string{shelldon, "version"}, ""},
		{"shelldon-worker-eval", []string{worker[0], "eval"}, `{"expression": "6 * 7"}`},
	} {
		b.Run(run.name, func(b *testing.B) {
			start := func(env ...string) (time.Duration, *syscall.Rusage, []byte) {
				cmd := exec.Command(run.argv[0], run.argv[1:]...)
				cmd.Env = append(os.Environ(), env...)
				cmd.Stdin = bytes.NewReader([]byte(run.stdin))
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				began := time.Now()
				if err := cmd.Run(); err != nil {
					b.Fatalf("%q: %v\n%s", run.argv, err, stderr.Bytes())
				}
				return time.Since(began), cmd.ProcessState.SysUsage().(*syscall.Rusage), stderr.Bytes()
			}
			var walls []time.Duration
			var faults []int64
			b.ResetTimer()
			for range b.N {
				wall, usage, _ := start()
				walls = append(walls, wall)
				faults = append(faults, usage.Minflt)
			}
			b.StopTimer()
			slices.Sort(walls)
			slices.Sort(faults)
			b.ReportMetric(ms(walls[len(walls)/2]), "median-ms")
			b.ReportMetric(float64(faults[len(faults)/2]), "page-faults")
			_, _, trace := start("GODEBUG=inittrace=1")
			inits, clock, allocated := sumInitTrace(trace)
			b.ReportMetric(float64(inits), "inits")
			b.ReportMetric(clock, "init-ms")
			b.ReportMetric(float64(allocated)/1024, "init-KB")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// initLine is one line of GODEBUG=inittrace=1: "init PKG @T ms, C ms
// clock, B bytes, N allocs".
var initLine = regexp.MustCompile(`(?m)^init \S+ @\S+ ms, ([0-9.]+) ms clock, ([0-9]+) bytes`)

// sumInitTrace counts the packages of an inittrace and sums their clock
// time (ms) and allocations (bytes).
func sumInitTrace(trace []byte) (inits int, clock float64, allocated int64) {
	for _, m := range initLine.FindAllSubmatch(trace, -1) {
		ms, _ := strconv.ParseFloat(string(m[1]), 64)
		n, _ := strconv.ParseInt(string(m[2]), 10, 64)
		inits, clock, allocated = inits+1, clock+ms, allocated+n
	}
	return inits, clock, allocated
}

func TestSumInitTrace(t *testing.T) {
	trace := []byte("init internal/bytealg @0.006 ms, 0 ms clock, 0 bytes, 0 allocs\n" +
		"init runtime @0.044 ms, 0.063 ms clock, 0 bytes, 0 allocs\n" +
		"some other line\n" +
		"init shelldon/policy @1.6 ms, 0.12 ms clock, 36528 bytes, 173 allocs\n")
	if inits, clock, allocated := sumInitTrace(trace); inits != 3 || clock < 0.182 || clock > 0.184 || allocated != 36528 {
		t.Errorf("sumInitTrace = %d, %v, %d; want 3, 0.183, 36528", inits, clock, allocated)
	}
}
