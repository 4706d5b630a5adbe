package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"

	"shelldon/policy"
)

// cmdPolicy answers `shelldon policy check 'COMMAND'`: whether the command
// would run without asking, and the note the owner would read if not.
func cmdPolicy(_ context.Context, env *environment, args []string) error {
	if len(args) == 0 || args[0] != "check" {
		return errors.New("usage: shelldon policy check [--json] [--workspace DIR] 'COMMAND'")
	}
	fs := flag.NewFlagSet("policy check", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the verdict as JSON")
	workspace := fs.String("workspace", "", "the workspace the command would run in (absolute)")
	fs.SetOutput(env.stderr)
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("policy check: %w", err)
	}
	if fs.NArg() != 1 {
		return errors.New("policy check: give the command as one argument, quoted: shelldon policy check 'ls -la | head'")
	}
	v := policy.Classify(fs.Arg(0), *workspace)
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	if v.Safe {
		fmt.Fprintln(env.stdout, "safe: runs without asking")
		return nil
	}
	fmt.Fprintf(env.stdout, "asks: %s\n", v.Note)
	for _, r := range v.Reasons {
		fmt.Fprintf(env.stdout, "  - %s\n", strings.TrimSpace(r))
	}
	return nil
}
