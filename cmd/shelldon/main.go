// Command shelldon is the pet's main binary: core, broker, panel, the
// terminal chat and the tools an owner uses to look inside. Run `shelldon
// help` for the subcommands. A turn's worker is a binary of its own,
// shelldon-worker, installed beside this one (see workerArgv).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"shelldon/broker"
	"shelldon/clock"
	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon"
	"shelldon/daemon/approval"
	"shelldon/daemon/approval/approved"
	"shelldon/daemon/doctor"
	"shelldon/daemon/journal"
	"shelldon/daemon/launch"
	"shelldon/daemon/mcp"
	"shelldon/daemon/sdnotify"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/daemon/visible"
	"shelldon/giveback"
	"shelldon/sandbox"
	"shelldon/sandbox/image"
	"shelldon/transports/chat"
	"shelldon/transports/telegram"
)

func main() {
	if oneProcessor(os.Args[1:], os.Getenv) {
		runtime.GOMAXPROCS(1)
	}
	err := run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	if err != nil && !errors.As(err, new(reported)) {
		fmt.Fprintf(os.Stderr, "shelldon: %v\n", err)
	}
	os.Exit(exitCode(err))
}

// version is set at build time by the Makefile (-X main.version=…).
var version = "dev"

type commandFunc func(ctx context.Context, env *environment, args []string) error

var commands = map[string]commandFunc{
	"up":      cmdUp,
	"daemon":  cmdDaemon,
	"broker":  cmdBroker,
	"chat":    cmdChat,
	"turns":   cmdTurns,
	"doctor":  cmdDoctor,
	"policy":  cmdPolicy,
	"image":   cmdImage,
	"sandbox": cmdSandbox,
	"tools":   cmdTools,
	"pair":    cmdPair,
	"setup":   cmdSetup,
	"panel":   cmdPanel,
	"version": cmdVersion,
}

// longLived are the commands that run for months on the board: giveback
// decides their collector's GOGC, which keeps their idle heap small.
var longLived = map[string]bool{"up": true, "daemon": true, "broker": true, "panel": true}

// oneProcessor reports whether the command of args runs its goroutines on
// one processor (GOMAXPROCS=1 unless GOMAXPROCS is set): a long-lived
// command waits on sockets and SQLite, a small turn's work at a time, and
// on two or more processors the Go runtime spends more than that work on
// waking idle threads to steal it and on idle-time collection. Measured
// beside the same build on two: 0.68× the CPU a turn under `up` (with
// the worker on one too, workerEnv), the same latency, and no more idle
// PSS (BENCHMARKS.md). It is set by main, not run: a test that runs a
// command in its own process keeps its processors.
func oneProcessor(args []string, getenv func(string) string) bool {
	return len(args) > 0 && longLived[args[0]] && getenv("GOMAXPROCS") == ""
}

// environment is what a command gets besides its flags.
type environment struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// run runs the command line args as main does, and returns what the
// command did: nil, or an error that exitCode turns into the status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		// A command line without a command, as one with an unknown
		// command, is one shelldon cannot take.
		writeUsage(stderr)
		return reported(exitUsage)
	}
	if args[0] == "help" || isHelpFlag(args[0]) {
		return help(args[1:], func(args []string) error { return run(ctx, args, stdin, stdout, stderr) }, stdout)
	}
	cmd, ok := commands[args[0]]
	if !ok {
		return usagef("", "unknown command %q", args[0])
	}
	if longLived[args[0]] {
		giveback.TuneCollector()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal stops gracefully (core lets a turn in flight
	// finish); a second one, once that has begun, ends the process now.
	go func() {
		<-ctx.Done()
		stop()
	}()
	err := cmd(ctx, &environment{stdin: stdin, stdout: stdout, stderr: stderr}, args[1:])
	if h := (*helpRequested)(nil); errors.As(err, &h) {
		d, _ := docFor(h.topic)
		writeHelp(stdout, d, h.flags)
		return nil
	}
	return explainDenied(err)
}

// configFlags are the flags every command takes but the worker, which
// core starts with all it needs.
type configFlags struct {
	path     string
	stateDir string
}

func (f *configFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.path, "config", "", "the configuration `FILE` (TOML; default $SHELLDON_CONFIG, else /etc/shelldon/shelldon.toml if it exists)")
	fs.StringVar(&f.stateDir, "state-dir", "", "the state directory `DIR` (overrides state_dir)")
}

// load reads the configuration: the file named by --config or
// $SHELLDON_CONFIG, else <state-dir>/shelldon.toml if --state-dir names
// a directory holding one (what `shelldon setup --state-dir` writes),
// else the system file if there is one, then the environment, then
// --state-dir. Where $CREDENTIALS_DIRECTORY is unset (outside systemd)
// and the state directory has a credentials directory, that is where
// keys and the bot token are read from: setup --state-dir puts them
// there.
func (f *configFlags) load() (config.Config, error) {
	path := f.path
	if path == "" {
		path = os.Getenv("SHELLDON_CONFIG")
	}
	environ := os.Environ()
	if f.stateDir != "" {
		dir, err := filepath.Abs(f.stateDir)
		if err != nil {
			return config.Config{}, fmt.Errorf("--state-dir %s: %w", f.stateDir, err)
		}
		environ = append(environ, "SHELLDON_STATE_DIR="+dir)
		if _, err := os.Stat(filepath.Join(dir, "shelldon.toml")); path == "" && err == nil {
			path = filepath.Join(dir, "shelldon.toml")
		}
	}
	if path == "" {
		if _, err := os.Stat("/etc/shelldon/shelldon.toml"); err == nil {
			path = "/etc/shelldon/shelldon.toml"
		}
	}
	cfg, err := config.Load(path, environ)
	if err != nil {
		return cfg, err
	}
	// Keys and the token are read later, from the process's environment.
	if dir := filepath.Join(cfg.StateDir, "credentials"); os.Getenv("CREDENTIALS_DIRECTORY") == "" && cfg.StateDir != "" {
		if info, err := os.Stat(dir); err == nil && info.IsDir() {
			if err := os.Setenv("CREDENTIALS_DIRECTORY", dir); err != nil {
				return config.Config{}, fmt.Errorf("credentials in %s: %w", dir, err)
			}
		}
	}
	return cfg, nil
}

// parseConfig parses the flags of a command that takes nothing else (the
// common ones plus any that extra registers) and loads the configuration.
func parseConfig(name string, args []string, extra func(*flag.FlagSet)) (config.Config, error) {
	cfg, _, err := parseConfigArgs(name, args, extra, noArguments(name))
	return cfg, err
}

// parseConfigArgs is parseConfig for a command that takes arguments after
// its flags: check refuses what it cannot take, before the configuration
// is loaded, and the arguments are returned.
func parseConfigArgs(name string, args []string, extra func(*flag.FlagSet), check func(rest []string) error) (config.Config, []string, error) {
	var cf configFlags
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	cf.register(fs)
	if extra != nil {
		extra(fs)
	}
	rest, err := parseFlags(fs, args)
	if err == nil {
		err = check(rest)
	}
	if err != nil {
		return config.Config{}, nil, err
	}
	cfg, err := cf.load()
	return cfg, rest, err
}

// workerProgram is the worker's binary, which every way of installing
// shelldon (`make build`, `make install`, the .deb) puts in the directory
// of this one.
const workerProgram = "shelldon-worker"

// workerArgv is how core starts a worker: the configured command, or
// shelldon-worker from this binary's directory. This is the one place
// that decides where the worker is; a missing one is found here, when
// core starts, rather than by every turn.
func workerArgv(cfg config.Config) ([]string, error) {
	if len(cfg.Turn.WorkerCommand) > 0 {
		return cfg.Turn.WorkerCommand, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this binary, beside which %s is: %w", workerProgram, err)
	}
	return workerBeside(self)
}

// workerBeside is the argv of the worker program in the directory of the
// binary self, or why there is no program to run there.
func workerBeside(self string) ([]string, error) {
	program := filepath.Join(filepath.Dir(self), workerProgram)
	info, err := os.Stat(program)
	if err == nil && (!info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0) {
		err = fmt.Errorf("%s is not an executable file", program)
	}
	if err != nil {
		return nil, fmt.Errorf("no worker program: %w; it belongs beside %s (%s)", err, self, workerFix)
	}
	return []string{program}, nil
}

// readThrough reads the file at path once, so that its pages are in the
// page cache charged to core's control group before any turn runs it.
// The kernel charges a page of a file to the group that first reads it:
// left to the first turn, the worker program's pages would be charged to
// that turn's unit, and a worker that later grows to its MemoryMax finds
// its own program's pages there to reclaim and fault back in, for as long
// as its unit may run, instead of being killed at once (seen on the arm64
// VM: a leaking worker thrashed at 256 MiB for 25 s until its time limit).
func readThrough(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(io.Discard, f); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// workerFix says how to put the worker where core looks for it.
const workerFix = "`make build` puts it in bin/, `make install` and the .deb in /usr/bin; or set turn.worker_command"

// workerCheck is `shelldon doctor`'s line on the worker program: the
// argv workerArgv gave core, or its error.
func workerCheck(argv []string, err error) doctor.Check {
	c := doctor.Check{Name: "worker program"}
	if err != nil {
		c.Status, c.Detail, c.Fix = doctor.Fail, err.Error(), workerFix
		return c
	}
	c.Status, c.Detail = doctor.OK, strings.Join(argv, " ")
	return c
}

// coreRun is how one core runs, beside its configuration, state and log.
type coreRun struct {
	// launcher starts the workers; notify tells systemd (nil outside a
	// service).
	launcher launch.Launcher
	notify   *sdnotify.Notifier
	// modelHelp, if any, ends the owner's /help (daemon.Options.ModelHelp).
	modelHelp string
	// ready, if set, is called once the bus is up.
	ready func()
	// fetch carries out approved http_get calls; nil is the guarded
	// client. The whole-pet tests serve their pages through one, from
	// loopback, which the guarded client refuses.
	fetch approved.Fetcher
}

// runCore runs core on store until ctx is done, as run says. log is the
// process's logger: core and the parts it runs (the sandbox, the
// Telegram transport) each log through it under an actor of their own.
func runCore(ctx context.Context, cfg config.Config, store *state.Store, log *slog.Logger, run coreRun) error {
	argv, err := workerArgv(cfg)
	if err != nil {
		return err
	}
	coreLog := log.With("actor", "core")
	// What SQLite holds for the store between turns (its page cache, its
	// allocator's free regions) goes back when core lets go, until the
	// caller closes the store.
	defer giveback.AlsoRelease(store.ReleaseMemory)()
	if err := readThrough(argv[0]); err != nil {
		coreLog.Warn("could not read the worker program ahead of its first turn", "err", err)
	}
	// The transport's idle polls are core's chores; core is made below.
	var core *daemon.Core
	tg, err := newTelegram(cfg, store, log.With("actor", "telegram"), func() { core.ChoreDone() })
	if err != nil {
		return err
	}
	sb, noSandbox := openSandbox(cfg, run.launcher, log.With("actor", "sandbox"))
	core, err = daemon.New(daemon.Options{Config: cfg, Store: store, Launcher: run.launcher, WorkerArgv: argv, Log: coreLog, Notify: run.notify,
		Sandbox: sb, NoSandbox: noSandbox, ModelHelp: run.modelHelp, Fetch: run.fetch})
	if err != nil {
		return err
	}
	// The transport outlives ctx until core has stopped: a turn that
	// finishes while core stops still has its answer taken to Telegram's
	// outbox.
	tgCtx, stopTelegram := context.WithCancel(context.WithoutCancel(ctx))
	defer stopTelegram()
	var transports sync.WaitGroup
	defer transports.Wait() // the caller closes the store only after the transport is done with it
	defer stopTelegram()
	return core.Run(ctx, func() {
		if tg != nil {
			transports.Go(func() {
				if err := tg.Run(tgCtx); err != nil {
					coreLog.Error("the Telegram transport stopped; the pet goes on without it", "err", err)
				}
			})
		}
		if run.ready != nil {
			run.ready()
		}
	})
}

// openState takes the state directory for this core (its lock first: a
// second core on it is refused before it changes anything) and opens it.
func openState(cfg config.Config) (*state.Store, error) {
	// A workers' user this host lacks is logged where the launcher is
	// chosen; then only core reads the directory.
	readers, _ := state.ReadersOf(cfg.Worker.User)
	return state.OpenFor(statedir.Layout{Root: cfg.StateDir}, readers)
}

// newTelegram makes core's Telegram transport when a bot token is
// configured, or nil when none is. A token without allowed users waits to
// be paired (shelldon pair). idle is told of each long poll that brought
// nothing (telegram.Config.Idle).
func newTelegram(cfg config.Config, store *state.Store, log *slog.Logger, idle func()) (*telegram.Transport, error) {
	environ := os.Environ()
	enabled, err := cfg.Telegram.Check(environ)
	if err != nil || !enabled {
		return nil, err
	}
	token, _, err := cfg.Telegram.BotToken(environ)
	if err != nil {
		return nil, err
	}
	return telegram.New(telegram.Config{
		Token: token, APIURL: cfg.Telegram.APIURL, AllowedIDs: cfg.Telegram.AllowedUsers, Pairing: statedir.Layout{Root: cfg.StateDir}.Pairing(),
		Socket: cfg.Socket, MaxFrame: int(cfg.Bus.MaxFrame), Store: store,
		// Core's authority keeps the requests in the same store, on the
		// real clock.
		Statuses:    approval.NewStatuses(store.Approvals(), clock.Real{}),
		PollTimeout: cfg.Telegram.PollTimeout.Duration,
		Idle:        idle,
		Backoff:     telegram.Backoff{Min: time.Second, Max: cfg.Telegram.RetryMax.Duration},
		GiveUp:      telegram.GiveUp{Attempts: cfg.Telegram.GiveUpAttempts, Age: cfg.Telegram.GiveUpAfter.Duration},
		Log:         log,
		// The broker reads the same configuration: what it can do.
		Transcription: cfg.Transcribes(), Vision: cfg.Sees(),
		VoiceMaxBytes: int64(cfg.Telegram.VoiceMaxBytes), PhotoMaxBytes: int64(cfg.Telegram.PhotoMaxBytes), PhotoMaxSide: cfg.Telegram.PhotoMaxSide,
		React: cfg.Telegram.React,
	})
}

// openSandbox opens the sandbox that core runs turns' commands in, or
// says why there is none (the image not built, not root); the pet then
// answers shell commands with that reason. Where workers run in units,
// so do commands. log is the sandbox's.
func openSandbox(cfg config.Config, launcher launch.Launcher, log *slog.Logger) (daemon.Sandbox, error) {
	recipe, err := image.DefaultRecipe()
	if err != nil {
		return nil, err
	}
	st, err := image.Status(image.DefaultCacheDir, recipe)
	if err != nil {
		return nil, err
	}
	if st.Current == nil {
		return nil, sandbox.ErrNoImage
	}
	layout := statedir.Layout{Root: cfg.StateDir}
	user, err := sandbox.LookupUser(cfg.Sandbox.User)
	if err != nil {
		log.Warn("sandboxed commands run as the workspace's owner, root on a board", "why", err, "fix", "create the user (units/shelldon.sysusers), or set sandbox.user")
	}
	sbCfg := sandbox.Config{Image: st.Current.Root, RunDir: layout.Runs(), Log: log,
		Disk: int64(cfg.Sandbox.Disk), Vault: layout.Vault(), User: user}
	if sd, ok := launcher.(*launch.Systemd); ok {
		sbCfg.Units = sd
	}
	sb, err := sandbox.New(sbCfg)
	if err != nil {
		log.Warn("shell commands cannot run", "why", err)
		return nil, err
	}
	return sb, nil
}

// chooseLauncher asks systemd for a transient unit per turn where it may
// and core can reach it, and starts workers as child processes otherwise.
// The returned function releases the launcher's connection.
func chooseLauncher(ctx context.Context, cfg config.Config, log *slog.Logger, logOut io.Writer) (launch.Launcher, func()) {
	sd, err := connectSystemd(ctx, cfg, log)
	if err != nil {
		log.Info("workers run as child processes", "why", err)
		return launch.Child{Output: logOut}, func() {}
	}
	if stopped, err := sd.StopLeftovers(ctx); err != nil {
		log.Error("stopping the units an earlier core left running", "stopped", stopped, "err", err)
	} else if len(stopped) > 0 {
		log.Warn("stopped the units an earlier core left running", "units", stopped)
	}
	return sd, sd.Close
}

// connectSystemd is core's systemd client, for turn units and sandbox
// units alike, or why there is none.
func connectSystemd(ctx context.Context, cfg config.Config, log *slog.Logger) (*launch.Systemd, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("only root may ask systemd for units")
	}
	return launch.NewSystemd(ctx, nil, launch.SystemdOptions{User: workerUser(cfg.Worker.User, log)})
}

// workerUser is the configured worker user if the system has it; a unit
// with a User= that does not exist would fail every turn, so without it
// workers run as root and the log says why.
func workerUser(name string, log *slog.Logger) string {
	if name == "" {
		return ""
	}
	if _, err := user.Lookup(name); err != nil {
		log.Warn("worker units run as root", "why", err, "fix", "create the user (units/shelldon.sysusers), or set worker.user")
		return ""
	}
	return name
}

func newChain(cfg config.Config) (*broker.Chain, error) {
	if len(cfg.Providers) == 0 {
		return nil, errors.New("no model provider is configured: add a [[provider]] table (see config/shelldon.example.toml), or use `shelldon up`, which falls back to the scripted demo model")
	}
	var providers []broker.Provider
	for _, p := range cfg.Providers {
		key, err := p.Key(os.Environ())
		if err != nil {
			return nil, err
		}
		timeout := p.Timeout.Duration
		if timeout <= 0 {
			timeout = cfg.Timeouts.Worker.Duration
		}
		providers = append(providers, broker.NewOpenAI(broker.OpenAIConfig{
			Name: p.Name, BaseURL: p.BaseURL, Model: p.Model, APIKey: key,
			Vision: p.Vision, TranscriptionModel: p.TranscriptionModel, Stream: p.Streams(),
			HTTPClient: &http.Client{Timeout: timeout},
		}))
	}
	return broker.NewChain(providers...), nil
}

// cmdVersion prints which build this is. It reads the configuration as
// every command does, so a --config that names no file is an error here
// too, not ignored.
func cmdVersion(_ context.Context, env *environment, args []string) error {
	if _, err := parseConfig("version", args, nil); err != nil {
		return err
	}
	fmt.Fprintln(env.stdout, "shelldon", version)
	return nil
}

func cmdDaemon(ctx context.Context, env *environment, args []string) error {
	cfg, err := parseConfig("daemon", args, nil)
	if err != nil {
		return err
	}
	// The state first: a second core is refused before it stops the
	// units of the first one's turns.
	store, err := openState(cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	log := journal.NewLogger("core", env.stderr)
	launcher, closeLauncher := chooseLauncher(ctx, cfg, log.With("actor", "core"), env.stderr)
	defer closeLauncher()
	return runCore(ctx, cfg, store, log, coreRun{launcher: launcher, notify: sdnotify.New()})
}

func cmdBroker(ctx context.Context, env *environment, args []string) error {
	cfg, err := parseConfig("broker", args, nil)
	if err != nil {
		return err
	}
	chain, err := newChain(cfg)
	if err != nil {
		return err
	}
	return broker.Serve(ctx, cfg.Socket, int(cfg.Bus.MaxFrame), chain, journal.NewLogger("broker", env.stderr))
}

func cmdChat(ctx context.Context, env *environment, args []string) error {
	cfg, err := parseConfig("chat", args, nil)
	if err != nil {
		return err
	}
	socket, note := chatSocket(cfg.Socket)
	return runChat(ctx, chat.Options{Socket: socket, MaxFrame: int(cfg.Bus.MaxFrame), In: env.stdin, Out: env.stdout, Banner: note})
}

// runChat runs a terminal chat; what the owner typed that never reached
// core fails it, quietly, for the chat has said so.
func runChat(ctx context.Context, opts chat.Options) error {
	err := chat.Run(ctx, opts)
	if errors.Is(err, chat.ErrUndelivered) {
		return errQuiet
	}
	return err
}

func cmdTurns(ctx context.Context, env *environment, args []string) error {
	var (
		n       int
		asJSONL bool
	)
	cfg, err := parseConfig("turns", args, func(fs *flag.FlagSet) {
		fs.IntVar(&n, "n", 20, "how many turns to show: a `COUNT` of 1 or more")
		fs.BoolVar(&asJSONL, "json", false, "one JSON object per turn and line, newest first, for scripts")
	})
	if err != nil {
		return err
	}
	if n < 1 {
		return usagef("turns", "turns: -n %d: want how many turns to show, 1 or more", n)
	}
	store, err := state.OpenReadOnly(statedir.Layout{Root: cfg.StateDir})
	if err != nil {
		return err
	}
	defer store.Close()
	turns, err := store.Turns().Recent(ctx, n)
	if err != nil {
		return err
	}
	if asJSONL {
		return writeTurnsJSONL(env.stdout, turns)
	}
	if len(turns) == 0 {
		fmt.Fprintln(env.stdout, "no turns yet")
		return nil
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TURN\tKIND\tSTARTED\tTOOK\tSPAWN\tMODEL\tTOKENS\tPROVIDERS\tPEAK\tCPU\tWORKER\tOUTCOME\tMESSAGE")
	for _, t := range turns {
		took, outcome := "running", t.Outcome
		if !t.Ended.IsZero() {
			took = t.Total.Round(time.Millisecond).String()
		}
		if t.Error != "" {
			outcome += ": " + t.Error
		}
		peak := "-"
		if t.WorkerPeak > 0 {
			peak = fmt.Sprintf("%.1fMiB", float64(t.WorkerPeak)/(1<<20))
		}
		spawn, tokens, providers, cpu, worker := "-", "-", "-", "-", "-"
		if t.WorkerJoin > 0 {
			spawn = t.WorkerJoin.String()
		}
		if t.PromptTokens > 0 || t.CompletionTokens > 0 {
			tokens = fmt.Sprintf("%d+%d", t.PromptTokens, t.CompletionTokens) // in + out
		}
		if names := providerNames(t.Usage); len(names) > 0 {
			providers = visible.Line(strings.Join(names, ","))
		}
		if t.WorkerCPU > 0 {
			cpu = t.WorkerCPU.Round(time.Millisecond).String()
		}
		if t.WorkerExit != "" {
			worker = t.WorkerExit
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%q\n", t.ID, t.Kind, t.Started.Local().Format("2006-01-02 15:04:05"),
			took, spawn, t.ModelTime.Round(time.Millisecond), tokens, providers, peak, cpu, worker, outcome, t.Preview)
	}
	return tw.Flush()
}

// turnJSON is a turn as `shelldon turns --json` prints it: times in
// RFC 3339, durations in milliseconds, memory in bytes, and absent fields
// left out (a running turn has no end).
type turnJSON struct {
	ID           string     `json:"id"`
	Kind         string     `json:"kind"`
	Started      time.Time  `json:"started"`
	Ended        *time.Time `json:"ended,omitempty"`
	Outcome      string     `json:"outcome,omitempty"`
	Error        string     `json:"error,omitempty"`
	Preview      string     `json:"preview"`
	TotalMS      int64      `json:"total_ms,omitempty"`
	ModelMS      int64      `json:"model_ms,omitempty"`
	SpawnMS      int64      `json:"spawn_ms,omitempty"`
	WorkerPeak   int64      `json:"worker_peak_bytes,omitempty"`
	WorkerCPUMS  int64      `json:"worker_cpu_ms,omitempty"`
	WorkerResult string     `json:"worker_result,omitempty"`
	// The tokens of the turn's model calls, as the providers counted them.
	PromptTokens     int `json:"prompt_tokens,omitempty"`
	CompletionTokens int `json:"completion_tokens,omitempty"`
	// Providers are the providers that answered them, in the order they
	// first did.
	Providers []string `json:"providers,omitempty"`
}

// providerNames names the providers of a turn's usage in their order.
func providerNames(usage contracts.UsageByProvider) []string {
	var names []string
	for _, p := range usage {
		names = append(names, p.Provider)
	}
	return names
}

func writeTurnsJSONL(w io.Writer, turns []state.TurnRecord) error {
	enc := json.NewEncoder(w)
	for _, t := range turns {
		j := turnJSON{ID: t.ID, Kind: t.Kind, Started: t.Started, Outcome: t.Outcome, Error: t.Error, Preview: t.Preview,
			TotalMS: t.Total.Milliseconds(), ModelMS: t.ModelTime.Milliseconds(), SpawnMS: t.WorkerJoin.Milliseconds(),
			WorkerPeak: t.WorkerPeak, WorkerCPUMS: t.WorkerCPU.Milliseconds(), WorkerResult: t.WorkerExit,
			PromptTokens: t.PromptTokens, CompletionTokens: t.CompletionTokens, Providers: providerNames(t.Usage)}
		if !t.Ended.IsZero() {
			j.Ended = &t.Ended
		}
		if err := enc.Encode(j); err != nil {
			return err
		}
	}
	return nil
}

func cmdDoctor(ctx context.Context, env *environment, args []string) error {
	cfg, err := parseConfig("doctor", args, nil)
	if err != nil && !errors.Is(err, config.ErrInvalid) {
		return err // a bad command line, not a finding
	}
	if err != nil {
		// One line per finding, as for every other check.
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(env.stdout, "%-4s %-16s %s — fix: correct the configuration\n", doctor.Fail, "configuration", line)
		}
		return errQuiet
	}
	host := doctor.System()
	if len(cfg.MCP) > 0 {
		host.ProbeMCP = probeMCP(cfg)
	}
	if !doctor.Write(env.stdout, append(host.Run(ctx, cfg), workerCheck(workerArgv(cfg)))) {
		return errQuiet
	}
	return nil
}

// probeMCP starts an MCP server of cfg's as core would, in a sandbox
// container of its own, for doctor: the tools the configuration names
// that it offers, or why it did not start (no sandbox among the reasons).
func probeMCP(cfg config.Config) func(context.Context, config.MCP) ([]string, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	sb, err := openSandbox(cfg, launch.Child{}, quiet)
	starter, ok := sb.(mcp.Starter)
	return func(ctx context.Context, m config.MCP) ([]string, error) {
		if err != nil || !ok {
			return nil, fmt.Errorf("no sandbox to start it in (%v)", err)
		}
		empty, err := os.MkdirTemp("", "shelldon-doctor-mcp-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(empty)
		srv := mcp.New(m, starter, mcp.Options{Workspace: statedir.Layout{Root: cfg.StateDir}.Workspace(), Empty: empty,
			Clock: clock.Real{}, Log: quiet, Tell: func(string) {}})
		defer srv.Close()
		tools, err := srv.Tools(ctx)
		names := make([]string, len(tools))
		for i, t := range tools {
			names[i] = t.Name
		}
		return names, err
	}
}
