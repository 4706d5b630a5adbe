package worker

import (
	"fmt"
	"os"
	"testing"

	"shelldon/tools"
)

// evalChildEnv makes this test binary the evaluator python_eval starts,
// as `shelldon-worker eval` is in the shipped binary.
const evalChildEnv = "SHELLDON_WORKER_TEST_EVALUATOR"

func TestMain(m *testing.M) {
	if os.Getenv(evalChildEnv) == "1" {
		if err := tools.ServeEval(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Setenv(evalChildEnv, "1")
	os.Exit(m.Run())
}
