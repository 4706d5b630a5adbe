package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"shelldon/broker"
	"shelldon/config"
	"shelldon/daemon/chat"
	"shelldon/daemon/launch"
	"shelldon/demomodel/phrases"
	"shelldon/panel"
)

// demoModelBinary is the scripted model server `up` starts when no
// provider is configured. It is a separate program, so the production
// binary carries no scripted answers.
const demoModelBinary = "shelldon-demo-model"

// demoBanner tells the owner, every time, that the answers are scripted,
// and what to try.
var demoBanner = `*** DEMO MODEL: no provider is configured, so shelldon is talking to a scripted
*** demo model (shelldon-demo-model), not a real LLM. Configure one with a
*** [[provider]] table or SHELLDON_PROVIDER_URL / _MODEL / _KEY (see README.md).
*** It understands a few phrases, and each runs the real thing (/help lists them):
` + phrases.List("***   ")

// demoHelp ends /help on the demo model.
var demoHelp = "I'm running on the scripted demo model, which understands only these phrases, each of them for real:\n" + phrases.List("")

func cmdUp(ctx context.Context, env *environment, args []string) error {
	var withChat bool
	cfg, err := parseConfig("up", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&withChat, "chat", false, "chat from this terminal (logs go to <state-dir>/shelldon.log)")
	})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.StateDir, 0o750); err != nil {
		return fmt.Errorf("create state directory: %w", err)
	}
	logOut := env.stderr
	if withChat {
		f, err := os.OpenFile(filepath.Join(cfg.StateDir, "shelldon.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
		if err != nil {
			return fmt.Errorf("open log file: %w", err)
		}
		defer f.Close()
		logOut = f
	}
	log := newLogger("up", logOut)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	banner, modelHelp := "", ""
	if len(cfg.Providers) == 0 {
		url, stop, err := startDemoModel(ctx, cfg.StateDir, logOut)
		if err != nil {
			return err
		}
		defer stop()
		// The demo model takes photos and voice notes too, so that they can
		// be tried offline; it hears written-out words, and sees a photo's size.
		cfg.Providers = []config.Provider{{Name: "demo", BaseURL: url, Model: "shelldon-demo", Vision: true, TranscriptionModel: "shelldon-demo"}}
		banner, modelHelp = demoBanner, demoHelp
		log.Warn("no provider configured: using the scripted demo model", "url", url)
	}
	if banner != "" && !withChat {
		fmt.Fprintln(env.stderr, banner)
	}
	chain, err := newChain(cfg)
	if err != nil {
		return err
	}

	ready := make(chan struct{})
	coreDone := make(chan error, 1)
	go func() {
		coreDone <- runCore(ctx, cfg, log.With("actor", "core"), launch.Child{Output: logOut}, nil, modelHelp, func() { close(ready) })
	}()
	select {
	case <-ready:
	case err := <-coreDone:
		return err
	}
	go func() {
		if err := broker.Serve(ctx, cfg.Socket, int(cfg.Bus.MaxFrame), chain, log.With("actor", "broker")); err != nil {
			log.Error("the broker stopped", "err", err)
			cancel()
		}
	}()

	// The face goes to <state-dir>/panel.png unless the configuration
	// names another place (or the Waveshare display answers).
	if cfg.Panel.PNGPath == config.Default().Panel.PNGPath {
		cfg.Panel.PNGPath = filepath.Join(cfg.StateDir, "panel.png")
	}
	if cfg.Panel.Display == "terminal" {
		cfg.Panel.Display = "png" // the terminal is the chat's
	}
	display, err := openDisplay(cfg.Panel, env, log)
	if err != nil {
		return err
	}
	face, err := panel.New(panel.Options{Socket: cfg.Socket, MaxFrame: int(cfg.Bus.MaxFrame), Display: display, Log: log.With("actor", "panel"),
		Policy: panelPolicy(cfg.Panel)})
	if err != nil {
		return err
	}
	go func() {
		if err := face.Run(ctx); err != nil {
			log.Error("the panel stopped", "err", err)
		}
	}()

	if withChat {
		err := chat.Run(ctx, chat.Options{Socket: cfg.Socket, MaxFrame: int(cfg.Bus.MaxFrame), In: env.stdin, Out: env.stdout, Banner: banner})
		cancel()
		if cerr := <-coreDone; err == nil {
			err = cerr
		}
		return err
	}
	return <-coreDone
}

// startDemoModel starts the scripted model server beside this binary (or
// on $PATH) on a loopback port and returns its base URL.
func startDemoModel(ctx context.Context, stateDir string, logOut io.Writer) (url string, stop func(), err error) {
	bin := demoModelBinary
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), demoModelBinary); fileExists(p) {
			bin = p
		}
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return "", nil, fmt.Errorf("no provider is configured and the demo model (%s) is not beside this binary or on $PATH: run `make build`, or configure a provider", demoModelBinary)
	}
	addrFile := filepath.Join(stateDir, "demo-model.addr")
	os.Remove(addrFile)
	cmd := exec.CommandContext(ctx, path, "--listen", "127.0.0.1:0", "--addr-file", addrFile)
	cmd.Stdout, cmd.Stderr = logOut, logOut
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start the demo model: %w", err)
	}
	stop = func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if raw, err := os.ReadFile(addrFile); err == nil {
			if u := strings.TrimSpace(string(raw)); u != "" {
				return u, stop, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	return "", nil, errors.New("the demo model did not say its address within 10s")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
