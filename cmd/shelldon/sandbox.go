package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"shelldon/daemon/launch"
	"shelldon/daemon/statedir"
	"shelldon/policy"
	"shelldon/sandbox"
)

const sandboxUsage = "usage: shelldon sandbox run [--view read-only|captured|scratch] [--network] [--dir DIR] [--apply] [--config FILE] -- COMMAND [ARG...]"

// cmdSandbox runs one command in the sandbox over the pet's workspace, as
// a tool would, and says what it did: for trying a command by hand, and
// for seeing what the sandbox allows.
func cmdSandbox(ctx context.Context, env *environment, args []string) error {
	if len(args) == 0 || args[0] != "run" {
		return errors.New(sandboxUsage)
	}
	sep := slices.Index(args, "--")
	if sep < 0 || sep == len(args)-1 {
		return errors.New(sandboxUsage)
	}
	flags, argv := args[1:sep], args[sep+1:]
	var view, dir string
	var network, apply bool
	cfg, err := parseConfig("sandbox run", flags, func(fs *flag.FlagSet) {
		fs.StringVar(&view, "view", "read-only", "how the command sees the workspace")
		fs.StringVar(&dir, "dir", "", "working directory, relative to the workspace")
		fs.BoolVar(&network, "network", false, "let the command reach the network")
		fs.BoolVar(&apply, "apply", false, "apply a captured run's changes to the workspace")
	})
	if err != nil {
		return err
	}
	views := map[string]sandbox.View{"read-only": sandbox.ReadOnly, "captured": sandbox.Captured, "scratch": sandbox.Scratch}
	v, ok := views[view]
	if !ok {
		return fmt.Errorf("--view %q: want read-only, captured or scratch", view)
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
	if res.Changes == nil {
		return nil
	}
	defer res.Changes.Discard()
	for _, c := range res.Changes.Changes {
		fmt.Fprintf(env.stderr, "   %-8s %s\n", c.Kind, c.Path)
	}
	if len(res.Changes.Changes) == 0 {
		fmt.Fprintln(env.stderr, "── no changes")
		return nil
	}
	if !apply {
		fmt.Fprintln(env.stderr, "── not applied (add --apply)")
		return nil
	}
	report, err := res.Changes.Apply(policy.Jail{Root: layout.Workspace(), Vault: layout.Vault()})
	for _, r := range report.Refused {
		fmt.Fprintf(env.stderr, "   refused  %s: %s\n", r.Change.Path, r.Reason)
	}
	fmt.Fprintf(env.stderr, "── applied %d, refused %d\n", len(report.Applied), len(report.Refused))
	return err
}
