package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"shelldon/daemon/statedir"
	"shelldon/policy"
)

// cmdPolicy answers `shelldon policy check 'COMMAND'`: whether the command
// would run without asking, and the note the owner would read if not. It
// exits 1 when the command asks, so a script can test it.
func cmdPolicy(_ context.Context, env *environment, args []string) error {
	_, args, err := verb("policy", args, "check")
	if err != nil {
		return err
	}
	var asJSON bool
	var workspace string
	cfg, rest, err := parseConfigArgs("policy check", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&asJSON, "json", false, "print the verdict as one JSON object (fields in docs/commands.md)")
		fs.StringVar(&workspace, "workspace", "", "judge the command as run in the workspace `DIR` (absolute; default <state-dir>/workspace)")
	}, func(rest []string) error {
		if len(rest) > 1 && strings.HasPrefix(rest[1], "-") {
			// Go's flags end at the first argument that is not one.
			quoted, err := syntax.Quote(rest[0], syntax.LangPOSIX)
			if err != nil {
				quoted = "'COMMAND'"
			}
			return usagef("policy check", "policy check: flags go before the command: shelldon policy check %s %s", strings.Join(rest[1:], " "), quoted)
		}
		if len(rest) != 1 {
			return usagef("policy check", "policy check: give the command as one argument, quoted: shelldon policy check 'ls -la | head'")
		}
		return nil
	})
	if err != nil {
		return err
	}
	if workspace == "" {
		workspace = statedir.Layout{Root: cfg.StateDir}.Workspace()
	}
	v := policy.Classify(rest[0], workspace)
	if asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(newVerdictJSON(v)); err != nil {
			return err
		}
	} else if v.Safe {
		fmt.Fprintln(env.stdout, "safe: runs without asking")
	} else {
		fmt.Fprintf(env.stdout, "asks: %s\n", v.Note)
		for _, r := range v.Reasons {
			fmt.Fprintf(env.stdout, "  - %s\n", strings.TrimSpace(r))
		}
	}
	if !v.Safe {
		return errQuiet
	}
	return nil
}

// verdictJSON is a verdict as `shelldon policy check --json` prints it:
// snake_case like every JSON shelldon prints for scripts, every field
// always there, lists empty rather than null.
type verdictJSON struct {
	Safe     bool     `json:"safe"`
	Level    string   `json:"level"`
	Note     string   `json:"note"`
	Network  bool     `json:"network"`
	Commands []string `json:"commands"`
	Reasons  []string `json:"reasons"`
}

func newVerdictJSON(v policy.Verdict) verdictJSON {
	j := verdictJSON{Safe: v.Safe, Level: string(v.Level), Note: v.Note, Network: v.Network,
		Commands: []string{}, Reasons: []string{}}
	j.Commands = append(j.Commands, v.Commands...)
	for _, r := range v.Reasons {
		j.Reasons = append(j.Reasons, strings.TrimSpace(r))
	}
	return j
}
