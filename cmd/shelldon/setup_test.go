package main

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shelldon/config"
	"shelldon/demomodel"
	"shelldon/testhost"
	"shelldon/transports/chat/chattest"
	"shelldon/transports/telegram/telegramtest"
)

// setupRig is what `shelldon setup --state-dir` is run against: the Bot
// API test server, the scripted OpenAI-compatible model and a development
// state directory whose configuration already says things of its own.
type setupRig struct {
	dir, config        string
	tokenFile, keyFile string
	api                *telegramtest.Server
	model              *demomodel.Server
	modelURL           string
}

// existingConfig is a configuration an owner wrote before setup: its
// comments and keys must survive.
const existingConfig = `# my pet's configuration
[telegram]
api_url = %q
allowed_users = [42]

[mood]
night = "22:00-06:00"
`

func newSetupRig(t *testing.T, steps ...demomodel.Step) *setupRig {
	t.Helper()
	t.Setenv("SHELLDON_CONFIG", "")
	t.Setenv("CREDENTIALS_DIRECTORY", "") // load sets it from DIR/credentials; restored after the test
	r := &setupRig{dir: testhost.ShortDir(t), api: telegramtest.New(t, botToken), model: demomodel.New(steps...)}
	srv := httptest.NewServer(r.model)
	t.Cleanup(srv.Close)
	r.modelURL = srv.URL + "/v1"
	r.config = filepath.Join(r.dir, "shelldon.toml")
	writeFile(t, r.config, strings.Replace(existingConfig, "%q", `"`+r.api.URL()+`"`, 1))
	secrets := t.TempDir()
	r.tokenFile = filepath.Join(secrets, "token")
	r.keyFile = filepath.Join(secrets, "key")
	writeFile(t, r.tokenFile, botToken+"\n")
	writeFile(t, r.keyFile, "sk-test-key\n")
	return r
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// flags are the flags of a setup told everything.
func (r *setupRig) flags(extra ...string) []string {
	return append([]string{"setup", "--state-dir", r.dir, "--telegram-token-file", r.tokenFile,
		"--provider", "openrouter", "--base-url", r.modelURL, "--model", demomodel.ModelName, "--api-key-file", r.keyFile}, extra...)
}

// runWithStdin runs the command line as main does, with stdin.
func runWithStdin(t *testing.T, stdin string, args ...string) (stdout string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	err = run(ctx, args, strings.NewReader(stdin), &out, &errOut)
	if ctx.Err() != nil {
		t.Fatalf("shelldon %q ran until the test's deadline", args)
	}
	return out.String(), err
}

// unchanged fails the test if setup wrote anything: no credentials, the
// configuration as the owner left it.
func (r *setupRig) unchanged(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(r.dir, "credentials")); err == nil {
		t.Errorf("a failed setup wrote %s", filepath.Join(r.dir, "credentials"))
	}
	got, err := os.ReadFile(r.config)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(existingConfig, "%q", `"`+r.api.URL()+`"`, 1); string(got) != want {
		t.Errorf("a failed setup changed the configuration:\n%s", got)
	}
}

func TestSetupWritesCheckedSecretsAndTheProvider(t *testing.T) {
	r := newSetupRig(t, demomodel.Step{Text: "ok"})
	if err := os.Chmod(r.config, 0o640); err != nil {
		t.Fatal(err)
	}
	out, err := runWithStdin(t, "", r.flags()...)
	if err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	if info, err := os.Stat(r.config); err != nil || info.Mode().Perm() != 0o640 {
		t.Errorf("the configuration's mode after setup: %v, %v, want the owner's 0640 kept", info.Mode(), err)
	}
	for _, want := range []string{
		"@shelldon_test_bot",
		"Provider: openrouter answers with model " + demomodel.ModelName,
		"+[[provider]]", `+name = "openrouter"`, `+api_key_credential = "openrouter-api-key"`,
		// doctor reads the development credentials as the pet will.
		"ok   model provider   reachable: openrouter", "ok   telegram         bot @shelldon_test_bot, 1 allowed user(s)",
		"Next: shelldon pair --state-dir " + r.dir + ", then send the code to @shelldon_test_bot.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("setup's output lacks %q:\n%s", want, out)
		}
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); !strings.HasPrefix(lines[len(lines)-1], "doctor found") {
		t.Errorf("the last line is %q, want doctor's verdict", lines[len(lines)-1])
	}
	if strings.Contains(out, "sk-test-key") || strings.Contains(out, botToken) {
		t.Errorf("setup printed a secret:\n%s", out)
	}
	reqs := r.model.Requests()
	if len(reqs) != 1 || len(reqs[0].Tools) != 1 || reqs[0].Model != demomodel.ModelName {
		t.Errorf("the provider was checked with %+v, want one request offering one tool to %s", reqs, demomodel.ModelName)
	}

	credentials := filepath.Join(r.dir, "credentials")
	for path, want := range map[string]string{
		filepath.Join(credentials, "openrouter-api-key"):      "sk-test-key\n",
		filepath.Join(credentials, config.TelegramCredential): botToken + "\n",
	} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", path, info.Mode().Perm())
		}
		if got, _ := os.ReadFile(path); string(got) != want {
			t.Errorf("%s holds %q, want %q alone", path, got, want)
		}
	}

	written, _ := os.ReadFile(r.config)
	if !strings.HasPrefix(string(written), "# my pet's configuration\n") {
		t.Errorf("the owner's comment is gone:\n%s", written)
	}
	environ := []string{"CREDENTIALS_DIRECTORY=" + credentials}
	cfg, err := config.Load(r.config, environ)
	if err != nil {
		t.Fatalf("the configuration written does not load: %v\n%s", err, written)
	}
	if len(cfg.Providers) != 1 {
		t.Fatalf("providers = %+v, want the one set up", cfg.Providers)
	}
	p := cfg.Providers[0]
	if p.Name != "openrouter" || p.BaseURL != r.modelURL || p.Model != demomodel.ModelName || p.APIKeyCredential != "openrouter-api-key" {
		t.Errorf("provider = %+v", p)
	}
	if key, err := p.Key(environ); err != nil || key != "sk-test-key" {
		t.Errorf("the provider's key = %q, %v, want sk-test-key", key, err)
	}
	if token, ok, err := cfg.Telegram.BotToken(environ); !ok || err != nil || token != botToken {
		t.Errorf("the bot token = %q, %v, %v", token, ok, err)
	}
	if cfg.Mood.Night != "22:00-06:00" || len(cfg.Telegram.AllowedUsers) != 1 || cfg.Telegram.APIURL != r.api.URL() {
		t.Errorf("the owner's settings were lost: mood.night %q, allowed_users %v, api_url %q", cfg.Mood.Night, cfg.Telegram.AllowedUsers, cfg.Telegram.APIURL)
	}

	// Any command given the state directory reads what setup wrote there:
	// DIR/shelldon.toml, and DIR/credentials as $CREDENTIALS_DIRECTORY.
	t.Setenv("CREDENTIALS_DIRECTORY", "")
	out, _ = runWithStdin(t, "", "doctor", "--state-dir", r.dir)
	for _, want := range []string{"ok   model provider   reachable: openrouter", "ok   telegram         bot @shelldon_test_bot, 1 allowed user(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("shelldon doctor --state-dir lacks %q:\n%s", want, out)
		}
	}

	// Run again with another model: the table is replaced, not added.
	r.model.Enqueue(demomodel.Step{Text: "ok"})
	out, err = runWithStdin(t, "", r.flags("--model", "other-model")...)
	if err != nil {
		t.Fatalf("second setup: %v\n%s", err, out)
	}
	if !strings.Contains(out, `-model = "`+demomodel.ModelName+`"`) || !strings.Contains(out, `+model = "other-model"`) {
		t.Errorf("the second setup's diff does not show the model changed:\n%s", out)
	}
	cfg, err = config.Load(r.config, environ)
	if err != nil || len(cfg.Providers) != 1 || cfg.Providers[0].Model != "other-model" {
		t.Errorf("after the second setup: %+v, %v", cfg.Providers, err)
	}
}

func TestSetupRefusesWhatItsServersRefuse(t *testing.T) {
	tests := []struct {
		name  string
		step  demomodel.Step
		token string
		want  []string
	}{
		{"refused token", demomodel.Step{Text: "ok"}, "123456:not-the-token", []string{"refuses the bot token", "401", "@BotFather", "nothing was changed"}},
		{"bad key", demomodel.Step{Status: 401, Error: "Incorrect API key provided"}, botToken, []string{"bad key", "Incorrect API key provided", "nothing was changed"}},
		{"forbidden key", demomodel.Step{Status: 403, Error: "key disabled"}, botToken, []string{"bad key", "key disabled"}},
		{"unknown model", demomodel.Step{Status: 404, Error: "The model `shelldon-demo` does not exist"}, botToken, []string{"unknown model \"shelldon-demo\"", "does not exist", "--model"}},
		{"no tool calling", demomodel.Step{Status: 400, Error: "registry.ollama.ai/library/gemma:2b does not support tools"}, botToken,
			[]string{"model cannot call tools", "choose a model Ollama lists with tools"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSetupRig(t, tt.step)
			writeFile(t, r.tokenFile, tt.token+"\n")
			out, err := runWithStdin(t, "", r.flags()...)
			if err == nil {
				t.Fatalf("setup succeeded:\n%s", out)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("setup's error %q lacks %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "sk-test-key") || strings.Contains(err.Error(), tt.token) {
				t.Errorf("the error shows a secret: %v", err)
			}
			r.unchanged(t)
		})
	}
}

func TestSetupRefusesUnreachableAndMalformedInput(t *testing.T) {
	r := newSetupRig(t)
	tests := []struct {
		name  string
		flags []string
		want  string
	}{
		{"unreachable provider", []string{"--base-url", "http://127.0.0.1:1/v1"}, "unreachable"},
		{"base URL not http", []string{"--base-url", "ftp://example.invalid/v1"}, "want http:// or https://"},
		{"unknown preset", []string{"--provider", "nosuch"}, `no provider "nosuch"`},
		{"Bot API URL not http", []string{"--telegram-api", "file:///etc/passwd"}, "--telegram-api"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runWithStdin(t, "", r.flags(tt.flags...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("setup = %v, want an error saying %q", err, tt.want)
			}
			r.unchanged(t)
		})
	}
	t.Run("key over 4 KiB", func(t *testing.T) {
		writeFile(t, r.keyFile, strings.Repeat("k", 5<<10))
		_, err := runWithStdin(t, "", r.flags()...)
		if err == nil || !strings.Contains(err.Error(), "over 4096 bytes") {
			t.Errorf("setup = %v, want the key refused as too long", err)
		}
		r.unchanged(t)
	})
	t.Run("a configuration that does not load", func(t *testing.T) {
		r := newSetupRig(t, demomodel.Step{Text: "ok"})
		bad := "[mood]\nnigth = \"22:00-06:00\"\n"
		writeFile(t, r.config, bad)
		_, err := runWithStdin(t, "", r.flags()...)
		if err == nil || !strings.Contains(err.Error(), "nigth") {
			t.Errorf("setup = %v, want the unknown key named", err)
		}
		if got, _ := os.ReadFile(r.config); string(got) != bad {
			t.Errorf("setup changed a configuration that does not load:\n%s", got)
		}
		if _, err := os.Stat(filepath.Join(r.dir, "credentials")); err == nil {
			t.Errorf("setup wrote credentials for a configuration that does not load")
		}
	})
	t.Run("a token in the configuration wins", func(t *testing.T) {
		r := newSetupRig(t, demomodel.Step{Text: "ok"})
		t.Setenv("SHELLDON_TELEGRAM_TOKEN", "654321:OtherBotsTokenOtherBotsTokenOther")
		out, err := runWithStdin(t, "", r.flags()...)
		if err != nil || !strings.Contains(out, "wins over the token file") {
			t.Errorf("setup = %v, want a note that the other token wins:\n%s", err, out)
		}
	})
	t.Run("no answer on stdin", func(t *testing.T) {
		_, err := runWithStdin(t, "", "setup", "--state-dir", r.dir, "--no-telegram")
		if err == nil || !strings.Contains(err.Error(), "give it by its flag") {
			t.Errorf("setup = %v, want it to name the flag to give", err)
		}
		r.unchanged(t)
	})
}

func TestSetupAsksOnStdin(t *testing.T) {
	r := newSetupRig(t, demomodel.Step{Text: "ok"})
	stdin := strings.Join([]string{botToken, "custom", r.modelURL, demomodel.ModelName, "sk-typed-key"}, "\n") + "\n"
	out, err := runWithStdin(t, stdin, "setup", "--state-dir", r.dir)
	if err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	for _, want := range []string{"Paste the bot token", "@shelldon_test_bot", "Which provider?", "openrouter", "Its base URL", "Which model", "Paste the API key for custom"} {
		if !strings.Contains(out, want) {
			t.Errorf("setup's output lacks %q:\n%s", want, out)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(r.dir, "credentials", "custom-api-key")); string(got) != "sk-typed-key\n" {
		t.Errorf("the key file holds %q", got)
	}
	cfg, err := config.Load(r.config, nil)
	if err != nil || len(cfg.Providers) != 1 || cfg.Providers[0].Name != "custom" || cfg.Providers[0].BaseURL != r.modelURL {
		t.Errorf("the configuration written: %+v, %v", cfg.Providers, err)
	}
}

func TestSetupDoesNotShowATypedSecret(t *testing.T) {
	r := newSetupRig(t, demomodel.Step{Text: "ok"})
	term := chattest.New(t)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		args := append([]string{"setup", "--state-dir", r.dir}, r.flags()[5:]...) // all but the token file
		done <- run(ctx, args, term.Slave, term.Slave, io.Discard)
	}()
	term.WaitFor(t, "Paste the bot token")
	term.Line(t, botToken)
	if err := <-done; err != nil {
		t.Fatalf("setup: %v\n%s", err, term.Screen())
	}
	term.WaitFor(t, "doctor found")
	// The screen wraps at its width: any piece of the token is too much.
	if screen := term.Screen(); strings.Contains(screen, botToken[:12]) || !strings.Contains(screen, "@shelldon_test_bot") {
		t.Errorf("the terminal shows the token, or not the bot:\n%s", screen)
	}
}

func TestSetupWritesTheBoardsFilesAsRootOnly(t *testing.T) {
	var board setupFlags
	got, err := board.paths(0)
	want := setupPaths{config: "/etc/shelldon/shelldon.toml", credentials: "/etc/shelldon/credentials", token: "/etc/shelldon/telegram/token"}
	if err != nil || got != want {
		t.Errorf("paths as root = %+v, %v, want %+v", got, err, want)
	}
	if _, err := board.paths(1000); err == nil || !strings.Contains(err.Error(), "sudo shelldon setup") || exitCode(err) != exitUsage {
		t.Errorf("paths as uid 1000 = %v, want a usage error saying to run it as root", err)
	}
	dev := setupFlags{configFlags: configFlags{stateDir: "/tmp/pet"}}
	got, err = dev.paths(1000)
	want = setupPaths{config: "/tmp/pet/shelldon.toml", credentials: "/tmp/pet/credentials", token: "/tmp/pet/credentials/" + config.TelegramCredential, stateDir: "/tmp/pet"}
	if err != nil || got != want {
		t.Errorf("paths with --state-dir = %+v, %v, want %+v", got, err, want)
	}
}

func TestSetupOfALocalServerWithoutTelegram(t *testing.T) {
	r := newSetupRig(t, demomodel.Step{Text: "ok"})
	out, err := runWithStdin(t, "", "setup", "--state-dir", r.dir, "--no-telegram", "--provider", "ollama", "--base-url", r.modelURL)
	if err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	if !strings.Contains(out, "Next: shelldon up --chat --state-dir "+r.dir) || strings.Contains(out, "Paste") {
		t.Errorf("setup asked, or did not say what next:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "credentials")); err == nil {
		t.Errorf("setup wrote credentials for a server that takes no key and no bot")
	}
	cfg, err := config.Load(r.config, nil)
	if err != nil || len(cfg.Providers) != 1 {
		t.Fatalf("the configuration written: %+v, %v", cfg.Providers, err)
	}
	if p := cfg.Providers[0]; p.Name != "ollama" || p.Model != "qwen2.5:7b" || p.APIKeyCredential != "" || p.BaseURL != r.modelURL {
		t.Errorf("provider = %+v, want the ollama preset's model at the given address, no key", p)
	}
}
