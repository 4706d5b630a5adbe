// Package setup holds what `shelldon setup` checks and writes: a bot
// token checked with the Bot API's getMe, a provider checked with one
// minimal completion through the broker's own client, a secret alone in
// its file (mode 0600), and the configuration file changed in one
// [[provider]] table, everything else in it kept as written.
package setup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"shelldon/atomicfile"
	"shelldon/broker"
	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/doctor"
)

// MaxSecretBytes bounds a bot token or an API key as setup reads it (a
// file or a line of the terminal): Telegram's tokens are some 46 bytes,
// providers' keys a few hundred at most.
const MaxSecretBytes = 4 << 10

// MaxConfigBytes bounds the configuration file setup edits; the example
// configuration with every key is some 20 KiB.
const MaxConfigBytes = 1 << 20

// ReadSecret reads a token or key of what ("the bot token") from r: the
// first line, without surrounding space, at most MaxSecretBytes, and
// nothing a header or a URL could not carry (no space or control
// character inside).
func ReadSecret(r io.Reader, what string) (string, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxSecretBytes+1))
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	if len(data) > MaxSecretBytes {
		return "", fmt.Errorf("%s is over %d bytes: give the secret alone, not a file of other things", what, MaxSecretBytes)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	secret := strings.TrimSpace(line)
	switch {
	case secret == "":
		return "", fmt.Errorf("%s is empty", what)
	case strings.IndexFunc(secret, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return "", fmt.Errorf("%s holds a space or a control character: give it exactly as it was issued", what)
	}
	return secret, nil
}

// ReadSecretFile is ReadSecret of the file at path.
func ReadSecretFile(path, what string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	return ReadSecret(f, what+" in "+path)
}

// CheckBot asks the Bot API at apiURL who the bot of token is, as doctor
// does, and returns its username (without the @); a refusal says how to
// get the token right.
func CheckBot(ctx context.Context, client *http.Client, apiURL, token string) (string, error) {
	bot, err := doctor.BotName(ctx, client, apiURL, token)
	switch {
	case errors.Is(err, doctor.ErrTokenRefused):
		return "", fmt.Errorf("%w: copy it again from @BotFather (/token)", err)
	case err != nil:
		return "", fmt.Errorf("%w: check the network (or telegram.api_url, --telegram-api)", err)
	}
	return bot, nil
}

// CheckURL checks a server's URL given to setup (a custom provider's
// base URL, the Bot API's): an absolute http or https URL with a host.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("URL %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("URL %q: want http:// or https:// and a host, such as http://192.168.1.20:11434/v1", raw)
	}
	return nil
}

// probeTool is the one tool the check offers: a model that cannot call
// tools is refused by its server with it, which is what setup must catch.
var probeTool = contracts.ToolDefinition{
	Name:        "say",
	Description: "Say a word.",
	ParamsSchema: map[string]any{
		"type":       "object",
		"properties": map[string]any{"word": map[string]any{"type": "string"}},
	},
}

// CheckProvider makes one minimal completion with p's model and key
// through the broker's own client, offering one tool, and says plainly
// what failed: the key refused, the model unknown, no tool calling, or
// the server out of reach.
func CheckProvider(ctx context.Context, client *http.Client, p config.Provider, key string) error {
	prov := broker.NewOpenAI(broker.OpenAIConfig{Name: p.Name, BaseURL: p.BaseURL, Model: p.Model, APIKey: key, HTTPClient: client})
	_, err := prov.CompleteWithTools(ctx, []contracts.Message{{Role: "user", Content: "Say ok."}}, []contracts.ToolDefinition{probeTool})
	if err == nil {
		return nil
	}
	fault, call := broker.FaultOf(err)
	switch {
	case call == nil:
		return fmt.Errorf("%s: %w", p.Name, err)
	case fault == broker.NoToolCalling:
		return fmt.Errorf("model cannot call tools: %s", call.Reason)
	case fault == broker.BadKey:
		return fmt.Errorf("bad key: %s refuses it (%s): check the key, and that it belongs to %s", p.BaseURL, call.Reason, p.Name)
	case fault == broker.UnknownModel:
		return fmt.Errorf("unknown model %q (or base URL): %s answers %s: name a model it lists (--model)", p.Model, p.BaseURL, call.Reason)
	case call.Status == 0:
		return fmt.Errorf("unreachable: %s (%s): check the base URL and the network", p.BaseURL, call.Reason)
	}
	return fmt.Errorf("%s answers %s", p.BaseURL, call.Reason)
}

// WriteSecret writes secret alone, with a newline, to path with mode
// 0600, making its directory (mode 0700) if needed; atomically, so a
// reader never sees half a key.
func WriteSecret(path, secret string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// atomicfile sets the mode before the file takes its name: never, not
	// for a moment, is the secret readable by another.
	return atomicfile.WriteFile(path, []byte(secret+"\n"), 0o600)
}

// lines is data without a final newline, split in lines; nil for none.
func lines(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// Diff shows what changes from old to new, a file's lines: the lines
// between what both begin and end with, old ones marked "-", new ones
// "+", under a line saying where they start. A setup changes one block,
// so this is the whole change; "" when nothing changes.
func Diff(old, new []byte) string {
	a, b := lines(old), lines(new)
	start := 0
	for start < len(a) && start < len(b) && a[start] == b[start] {
		start++
	}
	endA, endB := len(a), len(b)
	for endA > start && endB > start && a[endA-1] == b[endB-1] {
		endA--
		endB--
	}
	if start == endA && start == endB {
		return ""
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "@@ line %d @@\n", start+1)
	for _, l := range a[start:endA] {
		fmt.Fprintf(&out, "-%s\n", l)
	}
	for _, l := range b[start:endB] {
		fmt.Fprintf(&out, "+%s\n", l)
	}
	return out.String()
}
