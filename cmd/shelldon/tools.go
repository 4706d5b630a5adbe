package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
)

const toolsUsage = "usage: shelldon tools [--config FILE] [--state-dir DIR]"

// cmdTools lists the pet's self-coded tools: live, waiting in staging,
// and quarantined, with their strikes. It only reads.
func cmdTools(ctx context.Context, env *environment, args []string) error {
	cfg, err := parseConfig("tools", args, nil)
	if err != nil {
		return errors.Join(err, errors.New(toolsUsage))
	}
	layout := statedir.Layout{Root: cfg.StateDir}
	strikes := map[string]int{}
	if store, err := state.OpenReadOnly(layout); err == nil {
		healths, _ := store.ToolHealths(ctx)
		for _, h := range healths {
			strikes[h.Name] = h.Strikes
		}
		store.Close()
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tSTATE\tSTRIKES")
	rows := 0
	for _, where := range []struct{ dir, state, suffix string }{
		{layout.Tools(), "live", ".json"},
		{layout.ToolsStaging(), "staged", ".py"},
		{layout.ToolsQuarantine(), "quarantined", ".json"},
	} {
		paths, _ := filepath.Glob(filepath.Join(where.dir, "*"+where.suffix))
		for _, p := range paths {
			name := strings.TrimSuffix(filepath.Base(p), where.suffix)
			if strings.HasPrefix(name, "test_") {
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\n", name, where.state, strikes[name])
			rows++
		}
	}
	if rows == 0 {
		fmt.Fprintln(env.stdout, "no self-coded tools yet")
		return nil
	}
	return tw.Flush()
}
