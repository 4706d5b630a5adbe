package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"shelldon/atomicfile"
	"shelldon/config"
	"shelldon/daemon/doctor"
	"shelldon/setup"
	"shelldon/transports/chat"
)

// setupFlags are what `shelldon setup` is told instead of asking.
type setupFlags struct {
	configFlags
	tokenFile   string
	noTelegram  bool
	telegramAPI string
	provider    string
	baseURL     string
	model       string
	keyFile     string
}

// setupPaths are where setup writes: on the board the system's files,
// under --state-dir a development tree of the same shape.
type setupPaths struct {
	config      string
	credentials string // the directory of provider keys
	token       string // the bot token's file
	stateDir    string // "" on the board
}

// setupCheckTimeout bounds each check setup makes over the network.
const setupCheckTimeout = 30 * time.Second

// cmdSetup asks for (or is told) the bot token and the provider, checks
// each against its server, writes the secrets alone in their files and
// the provider into the configuration, runs doctor, and says what next.
func cmdSetup(ctx context.Context, env *environment, args []string) error {
	var f setupFlags
	fset := flag.NewFlagSet("setup", flag.ContinueOnError)
	f.register(fset)
	fset.StringVar(&f.tokenFile, "telegram-token-file", "", "read the bot token from `FILE` instead of asking")
	fset.BoolVar(&f.noTelegram, "no-telegram", false, "set up no Telegram bot (the pet is then chatted with in a terminal)")
	fset.StringVar(&f.telegramAPI, "telegram-api", "", "the Bot API server `URL` (default telegram.api_url)")
	fset.StringVar(&f.provider, "provider", "", "the provider: a preset's `NAME`, or custom with --base-url and --model")
	fset.StringVar(&f.baseURL, "base-url", "", "the provider's `URL` (http or https): a custom one's, or a preset's elsewhere")
	fset.StringVar(&f.model, "model", "", "the `MODEL` (overrides a preset's default)")
	fset.StringVar(&f.keyFile, "api-key-file", "", "read the provider's API key from `FILE` instead of asking")
	rest, err := parseFlags(fset, args)
	if err == nil {
		err = noArguments("setup")(rest)
	}
	if err != nil {
		return err
	}
	if f.telegramAPI != "" {
		if err := setup.CheckURL(f.telegramAPI); err != nil {
			return usagef("setup", "setup: --telegram-api: %v", err)
		}
	}
	paths, err := f.paths(os.Geteuid())
	if err != nil {
		return err
	}
	old, err := readConfigFile(paths.config)
	if err != nil {
		return err
	}
	cfg, err := f.loadFrom(paths, old != nil)
	if err != nil {
		return fmt.Errorf("setup: the configuration as it is: %w", err)
	}
	in := bufio.NewReader(env.stdin)
	client := &http.Client{Timeout: setupCheckTimeout}

	// 1. The bot.
	var token, bot string
	if !f.noTelegram {
		if token, err = f.secret(env, in, f.tokenFile, "the bot token",
			"Paste the bot token from @BotFather (or nothing to skip Telegram): "); err != nil {
			return err
		}
	}
	if token != "" {
		api := cfg.Telegram.APIURL
		if f.telegramAPI != "" {
			api = f.telegramAPI
		}
		if bot, err = setup.CheckBot(ctx, client, api, token); err != nil {
			return fmt.Errorf("setup: %w; nothing was changed", err)
		}
		fmt.Fprintf(env.stdout, "Telegram: the token is the bot @%s.\n", bot)
		if api != cfg.Telegram.APIURL {
			fmt.Fprintf(env.stdout, "Note: the pet asks telegram.api_url (%s), not --telegram-api: set it to the server checked.\n", cfg.Telegram.APIURL)
		}
		if cfg.Telegram.Token != "" && cfg.Telegram.Token != token {
			fmt.Fprintf(env.stdout, "Note: telegram.token (in %s or $SHELLDON_TELEGRAM_TOKEN) names another bot and wins over the token file: remove it.\n", paths.config)
		}
	}

	// 2. The provider.
	prov, needsKey, err := f.chooseProvider(env, in)
	if err != nil {
		return err
	}
	var key string
	if needsKey || f.keyFile != "" { // a keyless server behind a proxy that wants one
		if key, err = f.secret(env, in, f.keyFile, "the API key", "Paste the API key for "+prov.Name+": "); err != nil {
			return err
		}
		if key == "" && needsKey && prov.Name != "custom" {
			return fmt.Errorf("setup: %s needs an API key (--api-key-file FILE); nothing was changed", prov.Name)
		}
	}
	switch {
	case key == "":
		prov.APIKeyCredential = ""
	case prov.APIKeyCredential == "":
		// A custom server's, or a keyless preset's given one: named as
		// the presets' are.
		prov.APIKeyCredential = prov.Name + "-api-key"
	}
	checkCtx, cancel := context.WithTimeout(ctx, setupCheckTimeout)
	err = setup.CheckProvider(checkCtx, client, prov, key)
	cancel()
	if err != nil {
		return fmt.Errorf("setup: provider %s, model %s: %w; nothing was changed", prov.Name, prov.Model, err)
	}
	fmt.Fprintf(env.stdout, "Provider: %s answers with model %s, and takes tools.\n", prov.Name, prov.Model)

	// 3. The configuration, checked to load before anything is written;
	// then the secrets, then the file.
	updated, err := setup.SetProvider(old, prov)
	if err != nil {
		return fmt.Errorf("setup: %s: %w; nothing was changed", paths.config, err)
	}
	if err := f.loads(updated); err != nil {
		return fmt.Errorf("setup: %s with [[provider]] %q would not load: %w; nothing was changed", paths.config, prov.Name, err)
	}
	if key != "" {
		path := filepath.Join(paths.credentials, prov.APIKeyCredential)
		if err := setup.WriteSecret(path, key); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		fmt.Fprintf(env.stdout, "Wrote the key to %s (mode 0600).\n", path)
	}
	if token != "" {
		if err := setup.WriteSecret(paths.token, token); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		fmt.Fprintf(env.stdout, "Wrote the bot token to %s (mode 0600).\n", paths.token)
	}
	if diff := setup.Diff(old, updated); diff == "" {
		fmt.Fprintf(env.stdout, "%s already says this.\n", paths.config)
	} else {
		fmt.Fprintf(env.stdout, "Changes to %s:\n%s", paths.config, diff)
		if err := writeConfigFile(paths.config, updated); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
	}

	// 4. Doctor, and what next.
	return f.finish(ctx, env, paths, bot)
}

// paths are where this setup, run as euid, writes: under --state-dir DIR
// for development, else the board's system files, which only root may
// write.
func (f *setupFlags) paths(euid int) (setupPaths, error) {
	if f.stateDir == "" {
		if euid != 0 {
			return setupPaths{}, usagef("setup", "setup: writes /etc/shelldon: run it as root (sudo shelldon setup), or give --state-dir DIR for development")
		}
		p := setupPaths{config: "/etc/shelldon/shelldon.toml", credentials: doctor.ProviderKeysDirectory, token: doctor.TelegramTokenFile}
		if f.path != "" {
			p.config = f.path
		}
		return p, nil
	}
	dir, err := filepath.Abs(f.stateDir)
	if err != nil {
		return setupPaths{}, fmt.Errorf("--state-dir %s: %w", f.stateDir, err)
	}
	p := setupPaths{config: filepath.Join(dir, "shelldon.toml"), credentials: filepath.Join(dir, "credentials"), stateDir: dir}
	p.token = filepath.Join(p.credentials, config.TelegramCredential)
	if f.path != "" {
		p.config = f.path
	}
	return p, nil
}

// readConfigFile is the configuration file at path, nil when there is none
// yet (setup then writes one).
func readConfigFile(path string) ([]byte, error) {
	file, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, setup.MaxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("setup: read %s: %w", path, err)
	}
	if len(data) > setup.MaxConfigBytes {
		return nil, fmt.Errorf("setup: %s is over %d bytes; setup edits only a file of that size", path, setup.MaxConfigBytes)
	}
	return data, nil
}

// loads checks that data, a configuration file, loads as every command
// would load it.
func (f *setupFlags) loads(data []byte) error {
	tmp, err := os.CreateTemp("", "shelldon-setup-*.toml")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return err
	}
	cf := f.configFlags
	cf.path = tmp.Name()
	_, err = cf.load()
	return err
}

// writeConfigFile replaces the configuration file at path with data,
// atomically, keeping the mode of the file it replaces (one that holds an
// api_key may be the owner's alone), else 0644 as the package installs it.
func writeConfigFile(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if info, err := os.Stat(path); err == nil {
		mode = info.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data, mode)
}

// loadFrom loads the configuration at paths.config, as every command
// would, or the defaults when there is no file yet.
func (f *setupFlags) loadFrom(paths setupPaths, exists bool) (config.Config, error) {
	if !exists {
		return config.Load("", os.Environ())
	}
	cf := f.configFlags
	cf.path = paths.config
	return cf.load()
}

// secret is the secret in file, or, without one, the answer to question
// on stdin; "" when the answer is empty.
func (f *setupFlags) secret(env *environment, in *bufio.Reader, file, what, question string) (string, error) {
	if file != "" {
		s, err := setup.ReadSecretFile(file, what)
		if err != nil {
			return "", fmt.Errorf("setup: %w; nothing was changed", err)
		}
		return s, nil
	}
	var answer string
	err := chat.WithoutEcho(env.stdin, func() (err error) {
		answer, err = ask(env, in, question)
		return err
	})
	if err != nil || answer == "" {
		return "", err
	}
	s, err := setup.ReadSecret(strings.NewReader(answer), what)
	if err != nil {
		return "", fmt.Errorf("setup: %w; nothing was changed", err)
	}
	return s, nil
}

// chooseProvider is the provider the flags name, asking for what they
// leave out, and whether it needs a key.
func (f *setupFlags) chooseProvider(env *environment, in *bufio.Reader) (config.Provider, bool, error) {
	name := f.provider
	if name == "" {
		fmt.Fprintln(env.stdout, "Providers:")
		for _, p := range config.Presets {
			fmt.Fprintf(env.stdout, "  %-11s %s (%s)\n", p.Name, p.Model, p.Needs)
		}
		fmt.Fprintf(env.stdout, "  %-11s any OpenAI-compatible server: its base URL and a model that calls tools\n", "custom")
		var err error
		if name, err = ask(env, in, "Which provider? "); err != nil {
			return config.Provider{}, false, err
		}
	}
	var prov config.Provider
	needsKey := true
	if preset, ok := config.PresetNamed(name); ok {
		prov = preset.Provider()
		needsKey = preset.NeedsKey
	} else if name == "custom" {
		prov.Name = "custom"
		if f.baseURL == "" {
			var err error
			if prov.BaseURL, err = ask(env, in, "Its base URL (such as http://192.168.1.20:11434/v1): "); err != nil {
				return config.Provider{}, false, err
			}
		}
	} else {
		return config.Provider{}, false, usagef("setup", "setup: no provider %q: name one of %s, or custom", name, presetNames())
	}
	if f.baseURL != "" {
		// A preset's server elsewhere: Ollama on another machine.
		prov.BaseURL = f.baseURL
	}
	if err := setup.CheckURL(prov.BaseURL); err != nil {
		return config.Provider{}, false, usagef("setup", "setup: %v", err)
	}
	if f.model != "" {
		prov.Model = f.model
	}
	if prov.Model == "" {
		var err error
		if prov.Model, err = ask(env, in, "Which model (one that calls tools)? "); err != nil {
			return config.Provider{}, false, err
		}
		if prov.Model == "" {
			return config.Provider{}, false, usagef("setup", "setup: a custom provider needs --model")
		}
	}
	if name == "custom" && f.keyFile == "" && f.provider != "" {
		// A custom server told by flags without a key takes none (a
		// local one); asked, the owner may answer nothing.
		needsKey = false
	}
	return prov, needsKey, nil
}

func presetNames() string {
	names := make([]string, len(config.Presets))
	for i, p := range config.Presets {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// maxAnswerBytes bounds one answer typed at a prompt.
const maxAnswerBytes = setup.MaxSecretBytes

// errNoAnswer is a prompt that stdin cannot answer: a script that left out
// a flag.
var errNoAnswer = errors.New("setup: no answer on stdin")

// ask prints question and reads one line of stdin, at most
// maxAnswerBytes, without surrounding space.
func ask(env *environment, in *bufio.Reader, question string) (string, error) {
	fmt.Fprint(env.stdout, question)
	var line []byte
	for {
		b, err := in.ReadByte()
		if err == io.EOF && len(line) > 0 {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%w (%s): give it by its flag (shelldon help setup); nothing was changed", errNoAnswer, strings.TrimSpace(question))
		}
		if b == '\n' {
			break
		}
		if len(line) == maxAnswerBytes {
			return "", fmt.Errorf("setup: an answer over %d bytes; nothing was changed", maxAnswerBytes)
		}
		line = append(line, b)
	}
	return strings.TrimSpace(string(line)), nil
}

// finish runs doctor over what setup wrote and says what to do next; a
// FAIL of doctor's is said in the last line, not in the exit status: setup
// did its part.
func (f *setupFlags) finish(ctx context.Context, env *environment, paths setupPaths, bot string) error {
	cf := f.configFlags
	cf.path = paths.config
	cfg, err := cf.load()
	if err != nil {
		return fmt.Errorf("setup: the configuration written does not load: %w", err)
	}
	fmt.Fprintln(env.stdout, "\nshelldon doctor:")
	healthy := doctor.Write(env.stdout, doctor.System().Run(ctx, cfg))
	fmt.Fprintln(env.stdout)
	pair := "sudo shelldon pair"
	if paths.stateDir != "" {
		pair = "shelldon pair --state-dir " + paths.stateDir
		if f.path != "" {
			pair += " --config " + paths.config
		}
	}
	switch {
	case bot != "":
		fmt.Fprintf(env.stdout, "Next: %s, then send the code to @%s.\n", pair, bot)
	case paths.stateDir != "":
		fmt.Fprintf(env.stdout, "Next: shelldon up --chat --state-dir %s.\n", paths.stateDir)
	default:
		fmt.Fprintln(env.stdout, "Next: systemctl restart shelldon-broker shelldon, then shelldon chat.")
	}
	if !healthy {
		fmt.Fprintln(env.stdout, "doctor found a FAIL (above): fix it before the pet can do its job.")
		return nil
	}
	fmt.Fprintln(env.stdout, "doctor found no FAIL.")
	return nil
}
