package tools

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// evalChildEnv makes this test binary the evaluator, as the worker makes
// shelldon one with `shelldon-worker eval`: every python_eval call of these
// tests runs in a real child process under the real bounds.
const evalChildEnv = "SHELLDON_TOOLS_TEST_EVALUATOR"

// testEvaluator is the Evaluator of the tests' Env: this test binary.
var testEvaluator []string

// hogArg and hoardArg make the evaluator the hog or the hoard instead.
const (
	hogArg   = "hog"
	hoardArg = "hoard"
)

func TestMain(m *testing.M) {
	if raceDetector {
		// The race detector's shadow memory doubles every mapping, and
		// by default it waits a second before a process exits.
		evalMemory *= 3
		os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	}
	if os.Getenv(evalChildEnv) == "1" {
		if len(os.Args) > 1 {
			map[string]func(){hogArg: hog, hoardArg: hoard}[os.Args[1]]()
			os.Exit(0)
		}
		if err := ServeEval(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "find the test binary to run the evaluator:", err)
		os.Exit(1)
	}
	testEvaluator = []string{self}
	os.Setenv(evalChildEnv, "1")
	os.Exit(m.Run())
}
