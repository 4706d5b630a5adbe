package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"text/tabwriter"
	"time"

	"shelldon/bus"
	"shelldon/contracts"
	"shelldon/daemon"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/daemon/toolstore"
)

const toolsUsage = "usage: shelldon tools [--config FILE] [--state-dir DIR] | shelldon tools restore NAME [--config FILE] [--state-dir DIR]"

// cmdTools lists the pet's self-coded tools: live, under their gate, and
// quarantined, with their strikes. It only reads.
func cmdTools(ctx context.Context, env *environment, args []string) error {
	if len(args) > 0 && args[0] == "restore" {
		return cmdToolsRestore(ctx, env, args[1:])
	}
	cfg, err := parseConfig("tools", args, nil)
	if err != nil {
		return errors.Join(err, errors.New(toolsUsage))
	}
	layout := statedir.Layout{Root: cfg.StateDir}
	found, err := toolstore.ListDir(layout.ToolStore())
	if err != nil {
		return err
	}
	strikes, err := toolStrikes(ctx, layout)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tSTATE\tSTRIKES")
	for _, tool := range found {
		fmt.Fprintf(tw, "%s\t%s\t%d\n", tool.Name, tool.State, strikes[tool.Name])
	}
	if len(found) == 0 {
		fmt.Fprintln(env.stdout, "no self-coded tools yet")
		return nil
	}
	return tw.Flush()
}

// toolStrikes reads each tool's strikes from the state database; none
// when core has not made one yet.
func toolStrikes(ctx context.Context, layout statedir.Layout) (map[string]int, error) {
	store, err := state.OpenReadOnly(layout)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer store.Close()
	healths, err := store.ToolHealths(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the tools' strikes: %w", err)
	}
	strikes := map[string]int{}
	for _, h := range healths {
		strikes[h.Name] = h.Strikes
	}
	return strikes, nil
}

// cmdToolsRestore asks core, over the bus as a transport, to bring a
// quarantined tool back: core is the only writer of the tool directories
// and the strikes.
func cmdToolsRestore(ctx context.Context, env *environment, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return errors.New(toolsUsage)
	}
	name := args[0]
	cfg, err := parseConfig("tools restore", args[1:], nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := bus.Dial(ctx, cfg.Socket, contracts.Hello{Role: contracts.RoleTransport, Name: "tools"}, int(cfg.Bus.MaxFrame))
	if err != nil {
		return fmt.Errorf("reach core to restore %s: %w (is shelldon running?)", name, err)
	}
	defer conn.Close()
	msg, err := contracts.NewEnvelope(contracts.KindInbound, "", contracts.Inbound{Chat: "tools", Text: daemon.RestoreCommand + " " + name})
	if err != nil {
		return err
	}
	if err := conn.Send(msg); err != nil {
		return err
	}
	replies := make(chan string, 1)
	go func() {
		for {
			env, err := conn.Recv()
			if err != nil {
				close(replies)
				return
			}
			var out contracts.Outbound
			if env.Kind == contracts.KindOutbound && env.Decode(&out) == nil {
				replies <- out.Text
				return
			}
		}
	}()
	select {
	case text, ok := <-replies:
		if !ok {
			return errors.New("core closed the connection without answering")
		}
		fmt.Fprintln(env.stdout, text)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("core did not answer: %w", ctx.Err())
	}
}
