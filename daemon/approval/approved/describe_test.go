package approved

import (
	"testing"
	"time"

	"shelldon/sandbox"
)

func TestDescribeRun(t *testing.T) {
	cases := []struct {
		res  sandbox.Result
		want string
	}{
		{sandbox.Result{ExitCode: 0, Output: []byte("a\n")}, "exit 0\na\n"},
		{sandbox.Result{ExitCode: 2}, "exit 2\n(no output)"},
		{sandbox.Result{TimedOut: true, Duration: 30 * time.Second, Output: []byte("partial")}, "killed: it ran past 30s\npartial"},
		{sandbox.Result{OutOfMemory: true}, "killed: out of memory\n(no output)"},
		{sandbox.Result{ExitCode: 1, DiskFull: true, Output: []byte("dd: No space left on device\n")}, "exit 1, its disk full\ndd: No space left on device\n"},
		{sandbox.Result{ExitCode: 128, Output: []byte("fatal: bad object HEAD\n"), Withheld: []string{"git's objects of .git were hidden from this run: git failed"}},
			"exit 128\nfatal: bad object HEAD\n[git's objects of .git were hidden from this run: git failed]"},
	}
	for _, tc := range cases {
		if got := DescribeRun(tc.res); got != tc.want {
			t.Errorf("DescribeRun(%+v) = %q, want %q", tc.res, got, tc.want)
		}
	}
}
