package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"shelldon/beneath"
	"shelldon/daemon/launch"
	"shelldon/daemon/statedir"
	"shelldon/sandbox"
)

// The statuses `sandbox run` exits with for a command killed before it
// could exit, as a shell would report it: timeout(1)'s for running out of
// time, 128+SIGKILL for any other kill (out of memory, the container).
const (
	exitTimedOut = 124
	exitKilled   = 128 + 9
)

// cmdSandbox runs one command in the sandbox over the pet's workspace, as
// a tool would, and says what it did: for trying a command by hand, and
// for seeing what the sandbox allows. It exits with the command's status.
func cmdSandbox(ctx context.Context, env *environment, args []string) error {
	_, args, err := verb("sandbox", args, "run")
	if err != nil {
		return err
	}
	var view, dir string
	var network, apply bool
	cfg, argv, err := parseConfigArgs("sandbox run", args, func(fs *flag.FlagSet) {
		fs.StringVar(&view, "view", "read-only", "how the command sees the workspace: `VIEW` is read-only, captured or scratch")
		fs.StringVar(&dir, "dir", "", "the working directory `DIR`, relative to the workspace")
		fs.BoolVar(&network, "network", false, "let the command reach the network")
		fs.BoolVar(&apply, "apply", false, "apply a captured run's changes to the workspace")
	}, func(argv []string) error {
		// The flag package stops at "--"; the command must come after it,
		// so that none of its words is taken for shelldon's.
		if sep := len(args) - len(argv) - 1; len(argv) == 0 || sep < 0 || args[sep] != "--" {
			return usagef("sandbox run", "sandbox run: give the command after --: shelldon sandbox run -- ls -la")
		}
		return nil
	})
	if err != nil {
		return err
	}
	views := map[string]sandbox.View{"read-only": sandbox.ReadOnly, "captured": sandbox.Captured, "scratch": sandbox.Scratch}
	v, ok := views[view]
	if !ok {
		return usagef("sandbox run", "sandbox run: --view %q: want read-only, captured or scratch", view)
	}
	layout := statedir.Layout{Root: cfg.StateDir}
	quiet := slog.New(slog.DiscardHandler)
	// As core would: in a shelldon-run@ unit where systemd can be asked.
	var launcher launch.Launcher
	if sd, err := connectSystemd(ctx, cfg, quiet); err == nil {
		defer sd.Close()
		launcher = sd
	}
	sb, err := openSandbox(cfg, launcher, quiet)
	if err != nil {
		return err
	}
	res, err := sb.Run(ctx, sandbox.Spec{Argv: argv, Workspace: layout.Workspace(), Dir: dir, View: v, Network: network})
	if err != nil {
		return err
	}
	fmt.Fprint(env.stdout, res.Text())
	if len(res.Output) > 0 && !strings.HasSuffix(string(res.Output), "\n") {
		fmt.Fprintln(env.stdout)
	}
	how := fmt.Sprintf("exit %d", res.ExitCode)
	switch {
	case res.TimedOut:
		how = "killed: out of time"
	case res.OutOfMemory:
		how += ", out of memory"
	}
	fmt.Fprintf(env.stderr, "── %s in %s; limits held: %s\n", how, res.Duration.Round(time.Millisecond), strings.Join(res.Enforced, ", "))
	status := commandStatus(res)
	if res.Changes == nil {
		return status
	}
	defer res.Changes.Discard()
	for _, c := range res.Changes.Changes {
		fmt.Fprintf(env.stderr, "   %-8s %s\n", c.Kind, c.Path)
	}
	if len(res.Changes.Changes) == 0 {
		fmt.Fprintln(env.stderr, "── no changes")
		return status
	}
	if !apply {
		fmt.Fprintln(env.stderr, "── not applied (add --apply)")
		return status
	}
	report, err := res.Changes.Apply(beneath.Jail{Root: layout.Workspace(), Vault: layout.Vault()})
	for _, r := range report.Refused {
		fmt.Fprintf(env.stderr, "   refused  %s: %s\n", r.Change.Path, r.Reason)
	}
	fmt.Fprintf(env.stderr, "── applied %d, refused %d\n", len(report.Applied), len(report.Refused))
	if err != nil {
		return err
	}
	return status
}

// commandStatus is what `sandbox run` returns for how its command ended:
// nil when it exited 0, else the status to exit with, already reported.
func commandStatus(res sandbox.Result) error {
	switch {
	case res.TimedOut:
		return reported(exitTimedOut)
	case res.ExitCode < 0:
		return reported(exitKilled)
	case res.ExitCode == 0:
		return nil
	}
	return reported(res.ExitCode)
}
