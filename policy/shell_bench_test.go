package policy

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkClassify classifies every command of the case files once per
// iteration. It reports the mean (ns/command) and the median over the
// commands of each one's mean time (median-ns/command), with allocations
// per iteration.
func BenchmarkClassify(b *testing.B) {
	cases := shellCases(b)
	total := make([]time.Duration, len(cases))
	b.ReportAllocs()
	for b.Loop() {
		for i, tc := range cases {
			start := time.Now()
			Classify(tc.command, shellWorkspace)
			total[i] += time.Since(start)
		}
	}
	perCommand := make([]float64, len(cases))
	var sum float64
	for i, d := range total {
		perCommand[i] = float64(d.Nanoseconds()) / float64(b.N)
		sum += perCommand[i]
	}
	slices.Sort(perCommand)
	b.ReportMetric(sum/float64(len(cases)), "ns/command")
	b.ReportMetric(perCommand[len(perCommand)/2], "median-ns/command")
	b.ReportMetric(perCommand[len(perCommand)-1], "max-ns/command")
}
