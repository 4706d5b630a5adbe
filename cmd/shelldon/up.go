package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"shelldon/broker"
	"shelldon/config"
	"shelldon/daemon/journal"
	"shelldon/daemon/launch"
	"shelldon/demomodel/phrases"
	"shelldon/panel"
	"shelldon/transports/chat"
)

// demoModelBinary is the scripted model server `up` starts when no
// provider is configured. It is a separate program, so the production
// binary carries no scripted answers.
const demoModelBinary = "shelldon-demo-model"

// demoBanner tells the owner, every time, that the answers are scripted,
// and what to try.
var demoBanner = `*** DEMO MODEL: no provider is configured, so shelldon is talking to a scripted
*** demo model (shelldon-demo-model), not a real LLM. Configure one with a
*** [[provider]] table or SHELLDON_PROVIDER_URL / _MODEL / _KEY
*** (see docs/configuration.md).
*** It understands a few phrases; each runs the real thing (/help lists them):
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
	// The state directory first: a second `shelldon up` on it is refused
	// here, before it starts a demo model, overwrites the first one's
	// address file or writes to its log.
	store, err := openState(cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	logOut := env.stderr
	if withChat {
		f, err := os.OpenFile(filepath.Join(cfg.StateDir, "shelldon.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
		if err != nil {
			return fmt.Errorf("open log file: %w", err)
		}
		defer f.Close()
		logOut = f
	}
	log := journal.NewLogger("up", logOut)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A stop (Ctrl-C, or the chat's input ending) stops core first; what
	// serves a turn — the demo model, the broker — and what shows it —
	// the panel, the chat — go on until core has stopped, so that the
	// turn core lets finish gets its model's answer and the owner sees it.
	serving, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServing()
	banner, modelHelp := "", ""
	if len(cfg.Providers) == 0 {
		url, stop, err := startDemoModel(serving, cfg.StateDir, logOut)
		if err != nil {
			return err
		}
		defer stop()
		// The demo model takes photos and voice notes too, so that they can
		// be tried offline; it hears written-out words, and sees a photo's size.
		cfg.Providers = []config.Provider{{Name: "demo", BaseURL: url, Model: "shelldon-demo", Vision: true, TranscriptionModel: "shelldon-demo"}}
		banner, modelHelp = demoBanner, demoHelp
		log.Warn("no provider configured: using the scripted demo model", "url", url)
		if len(cfg.MCP) == 0 {
			cfg.MCP = demoMCPBesideThisBinary(log)
			if err := cfg.Validate(); err != nil {
				// A configuration whose timeouts leave no room for the
				// demo's server: the pet goes on without it.
				log.Warn("the demo's MCP server left out", "err", err)
				cfg.MCP = nil
			}
		}
	}
	chain, err := newChain(cfg)
	if err != nil {
		return err
	}

	ready := make(chan struct{})
	coreStopped := make(chan struct{})
	var coreErr error
	go func() {
		defer close(coreStopped)
		defer stopServing()
		coreErr = runCore(ctx, cfg, store, log, coreRun{launcher: launch.Child{Output: logOut}, modelHelp: modelHelp, ready: func() { close(ready) }})
	}()
	// Whatever ends up, core stops before the store closes.
	defer func() {
		cancel()
		<-coreStopped
	}()
	select {
	case <-ready:
	case <-coreStopped:
		return coreErr
	}
	go func() {
		if err := broker.Serve(serving, cfg.Socket, int(cfg.Bus.MaxFrame), chain, log.With("actor", "broker")); err != nil {
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
		if err := face.Run(serving); err != nil {
			log.Error("the panel stopped", "err", err)
		}
	}()

	// The banner only once the pet is up: not above an error that
	// stopped it.
	if banner != "" && !withChat {
		fmt.Fprintln(env.stderr, banner)
	}

	if withChat {
		// The chat ends when core closes its connection, once core has
		// stopped and its last words (the answer of the turn it let
		// finish) have been written, not as soon as core's goroutine
		// returns: the answer may still be on its way to the terminal.
		// chatAfterCore bounds the wait for a chat that never hears it.
		chatCtx, endChat := context.WithCancel(context.WithoutCancel(ctx))
		defer endChat()
		go func() {
			<-coreStopped
			linger := time.NewTimer(chatAfterCore)
			defer linger.Stop()
			select {
			case <-linger.C:
				endChat()
			case <-chatCtx.Done():
			}
		}()
		err := runChat(chatCtx, chat.Options{Socket: cfg.Socket, MaxFrame: int(cfg.Bus.MaxFrame), In: env.stdin, Out: env.stdout,
			Banner: banner, Stopping: ctx.Done()})
		endChat()
		cancel()
		<-coreStopped
		if err == nil {
			err = coreErr
		}
		return err
	}
	<-coreStopped
	return coreErr
}

// demoMCPDir and demoMCPBinary are where `make build` puts the example
// MCP server, beside this binary: in a directory of its own, since the
// server's container sees the whole directory.
const (
	demoMCPDir    = "demo-mcp"
	demoMCPBinary = "shelldon-demo-mcp"
)

// demoMCPBesideThisBinary is the [[mcp]] table `up` gives the demo model
// when the configuration has none: the example server beside this
// binary, or none when it is not there (the demo's MCP phrases then say
// that its tools are not offered).
func demoMCPBesideThisBinary(log *slog.Logger) []config.MCP {
	self, err := os.Executable()
	if err != nil {
		log.Info("no example MCP server for the demo", "why", err)
		return nil
	}
	dir := filepath.Join(filepath.Dir(self), demoMCPDir)
	if !fileExists(filepath.Join(dir, demoMCPBinary)) {
		log.Info("no example MCP server for the demo: `make build` puts it beside this binary", "missing", filepath.Join(dir, demoMCPBinary))
		return nil
	}
	return []config.MCP{demoMCP(dir)}
}

// demoMCP is the example server in dir as the demo configures it: the
// tool that counts letters marked read-only, so it runs without asking,
// and the one that shouts left to ask, as every tool the owner has not
// marked does.
func demoMCP(dir string) config.MCP {
	return config.MCP{Name: phrases.MCPServer, Directory: dir, Command: config.MCPDirectory + "/" + demoMCPBinary,
		Tools: []string{phrases.MCPReadOnlyTool, phrases.MCPAskingTool}, ReadOnly: []string{phrases.MCPReadOnlyTool}}.WithDefaults()
}

// chatAfterCore is how long `up --chat` waits, once core has stopped,
// for the chat to hear core close its connection: longer than the hub
// takes to write what it still holds for its peers.
const chatAfterCore = 3 * time.Second

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
	// In a process group of its own, the terminal's Ctrl-C is up's alone:
	// up lets the turn in flight finish, which needs the model, and stops
	// it after (stop). It goes with this process however this one ends,
	// kill -9 too: a demo model left behind would hold its port and memory
	// for good. The signal comes when the thread that started it ends, so
	// it is started, and waited for, on a thread locked for its whole life
	// (the runtime ends threads, as the sandbox's egress does its own).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var said lastLine
	cmd.Stdout, cmd.Stderr = logOut, io.MultiWriter(logOut, &said)
	started, exited := make(chan error, 1), make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return "", nil, fmt.Errorf("start the demo model: %w", err)
	}
	stop = func() {
		cmd.Process.Kill()
		<-exited
	}
	const patience = 10 * time.Second
	deadline := time.After(patience)
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case err := <-exited:
			// Wait has copied all it said: its last line is why.
			return "", nil, fmt.Errorf("the demo model stopped before it said its address (%v): %s", err, said.String())
		case <-deadline:
			stop()
			return "", nil, fmt.Errorf("the demo model did not say its address within %v: %s", patience, said.String())
		case <-poll.C:
			if raw, err := os.ReadFile(addrFile); err == nil {
				if u := strings.TrimSpace(string(raw)); u != "" {
					return u, stop, nil
				}
			}
		}
	}
}

// lastLine keeps the last line written to it: what a program said last
// before it stopped.
type lastLine struct {
	mu   sync.Mutex
	line []byte
	next []byte
}

func (l *lastLine) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range p {
		if b == '\n' {
			if len(l.next) > 0 {
				l.line, l.next = l.next, nil
			}
			continue
		}
		if len(l.next) < 512 {
			l.next = append(l.next, b)
		}
	}
	return len(p), nil
}

func (l *lastLine) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.next) > 0 {
		return string(l.next)
	}
	if len(l.line) == 0 {
		return "it said nothing"
	}
	return string(l.line)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
