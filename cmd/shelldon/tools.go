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
	ownercommands "shelldon/daemon/commands"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/daemon/toolstore"
)

// cmdTools lists the pet's self-coded tools: live, under their gate, and
// quarantined, with their strikes. It only reads.
func cmdTools(ctx context.Context, env *environment, args []string) error {
	if len(args) > 0 && args[0] == "restore" {
		return cmdToolsRestore(ctx, env, args[1:])
	}
	cfg, err := parseConfig("tools", args, nil)
	if err != nil {
		return err
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
	healths, err := store.Tools().Health(ctx)
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
// and the strikes. Core's answer is printed; one that did not restore
// the tool is an error.
func cmdToolsRestore(ctx context.Context, env *environment, args []string) error {
	// The name comes before the flags, as the synopsis has it, or after
	// them, as for every other command.
	name, flags := "", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, flags = args[0], args[1:]
	}
	cfg, _, err := parseConfigArgs("tools restore", flags, nil, func(rest []string) error {
		if name == "" && len(rest) == 1 {
			name = rest[0]
			return nil
		}
		return noArguments("tools restore")(rest)
	})
	if err != nil {
		return err
	}
	if name == "" {
		return usagef("tools restore", "tools restore: name the tool: shelldon tools restore NAME (shelldon tools lists them)")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := bus.Dial(ctx, cfg.Socket, contracts.Hello{Role: contracts.RoleTransport, Name: "tools"}, int(cfg.Bus.MaxFrame))
	if err != nil {
		return fmt.Errorf("reach core to restore %s: %w (is shelldon running?)", name, err)
	}
	defer conn.Close()
	msg, err := contracts.NewEnvelope(contracts.KindInbound, "", contracts.Inbound{Chat: "tools", Text: ownercommands.RestoreCommand + " " + name})
	if err != nil {
		return err
	}
	if err := conn.Send(msg); err != nil {
		return err
	}
	replies := make(chan contracts.Outbound, 1)
	go func() {
		for {
			env, err := conn.Recv()
			if err != nil {
				close(replies)
				return
			}
			var out contracts.Outbound
			if env.Kind == contracts.KindOutbound && env.Decode(&out) == nil {
				replies <- out
				return
			}
		}
	}()
	select {
	case out, ok := <-replies:
		if !ok {
			return errors.New("core closed the connection without answering")
		}
		if out.Refused {
			return fmt.Errorf("tools restore %s: %s", name, out.Text)
		}
		fmt.Fprintln(env.stdout, out.Text)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("core did not answer: %w", ctx.Err())
	}
}
