package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"shelldon/daemon/pairing"
	"shelldon/daemon/statedir"
)

// cmdPair mints a one-time code that makes whoever sends it to the bot
// its owner, and says how to use it. It needs no running core: the code's
// hash waits in the state directory, where core's Telegram transport
// reads it.
func cmdPair(_ context.Context, env *environment, args []string) error {
	cfg, err := parseConfig("pair", args, nil)
	if err != nil {
		return err
	}
	layout := statedir.Layout{Root: cfg.StateDir}
	if err := os.MkdirAll(layout.Root, 0o755); err != nil {
		return fmt.Errorf("pair: the state directory: %w", err)
	}
	code, err := pairing.Mint(layout.Pairing(), time.Now())
	if err != nil {
		return fmt.Errorf("pair: %w (run it as the user core runs as, or root)", err)
	}
	fmt.Fprintf(env.stdout, "Send this code to your bot on Telegram within %v:\n\n    %s\n\n", pairing.Lifetime, code)
	fmt.Fprintf(env.stdout, "It works once: whoever sends it first becomes the pet's owner (replacing an owner paired before).\n")
	fmt.Fprintf(env.stdout, "%d wrong guesses spend it; then run shelldon pair again.\n", pairing.MaxGuesses)
	if len(cfg.Telegram.AllowedUsers) > 0 {
		fmt.Fprintf(env.stdout, "telegram.allowed_users names %d owner(s) already; they stay owners too.\n", len(cfg.Telegram.AllowedUsers))
	}
	return nil
}
