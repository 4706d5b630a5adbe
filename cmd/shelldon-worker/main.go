// Command shelldon-worker is one turn's worker, the program core starts
// for every turn (a transient unit, or a child process under `shelldon
// up`), and, as `shelldon-worker eval`, the evaluator it starts for each
// python_eval call. It is a binary of its own so that it links only what
// a worker runs: no SQLite, no panel, no sandbox builder, no systemd or
// D-Bus client, no Telegram or model client (its deps.txt holds it to
// that). Starting it is most of a turn's overhead, and its peak memory is
// every turn's (BENCHMARKS.md).
//
//	shelldon-worker --turn ID --socket PATH --state-dir DIR [--max-frame BYTES]
//	shelldon-worker eval < REQUEST
//
// It reads no configuration file: everything it needs comes from core.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"shelldon/daemon/journal"
	"shelldon/tools"
	"shelldon/worker"
)

// Exit statuses: a failed turn, and a command line that is wrong.
const (
	exitFailed = 1
	exitUsage  = 2
)

// evalCommand is the argument that makes this process the evaluator of
// one python_eval expression (tools.ServeEval) instead of a worker.
const evalCommand = "eval"

// usage is what a wrong command line is answered with.
const usage = `usage: shelldon-worker --turn ID --socket PATH --state-dir DIR [--max-frame BYTES]
       shelldon-worker eval < REQUEST
Core starts it for every turn (see ` + "`shelldon up`" + `); it is not for running by hand.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err == nil {
		os.Exit(0)
	}
	fmt.Fprintf(os.Stderr, "shelldon-worker: %v\n", err)
	if errors.As(err, new(usageError)) {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(exitUsage)
	}
	os.Exit(exitFailed)
}

// usageError is a command line this program cannot run.
type usageError struct{ error }

// run serves one turn, or evaluates one expression when args start with
// eval.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == evalCommand {
		if len(args) > 1 {
			return usageError{fmt.Errorf("eval takes no arguments, got %q", args[1])}
		}
		return tools.ServeEval(stdin, stdout)
	}
	fs := flag.NewFlagSet("shelldon-worker", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // main prints the usage once
	var opts worker.Options
	fs.StringVar(&opts.Turn, "turn", "", "the turn to serve, by its `ID`")
	fs.StringVar(&opts.Socket, "socket", "", "the `PATH` of core's bus socket")
	fs.StringVar(&opts.StateDir, "state-dir", "", "the state directory `DIR` (read-only)")
	fs.IntVar(&opts.MaxFrame, "max-frame", 0, "the largest bus frame in `BYTES`")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		// Help asked for is no mistake: the usage, on stdout.
		_, err = fmt.Fprint(stdout, usage)
		return err
	} else if err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if opts.Turn == "" || opts.Socket == "" || opts.StateDir == "" {
		return usageError{errors.New("--turn, --socket and --state-dir are required")}
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this binary to evaluate python_eval in: %w", err)
	}
	opts.Evaluator = []string{self, evalCommand}
	opts.Log = journal.NewLogger("worker", stderr).With("turn", opts.Turn, "actor", "worker")
	err = worker.Run(ctx, opts)
	journal.Linger()
	return err
}
