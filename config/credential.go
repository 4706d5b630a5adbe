package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// credentialsDirectory is where systemd puts the files LoadCredential= names.
const credentialsDirectory = "CREDENTIALS_DIRECTORY"

// CredentialPrefix is how shelldon-broker.service's
// LoadCredential=keys:/etc/shelldon/credentials names each file of that
// directory: systemd loads every file as "keys_<file>". The owner drops a
// key file there and names the file in api_key_credential.
const CredentialPrefix = "keys_"

// TelegramCredential is the credential name under which shelldon.service's
// LoadCredential=telegram:/etc/shelldon/telegram loads the file
// /etc/shelldon/telegram/token.
const TelegramCredential = "telegram_token"

// Key returns the provider's API key: APIKey if set, else the contents of
// $CREDENTIALS_DIRECTORY/keys_<APIKeyCredential> (a file of
// /etc/shelldon/credentials, as the broker's unit loads them) or
// $CREDENTIALS_DIRECTORY/<APIKeyCredential> (a credential loaded by name)
// without its trailing newline, else "" for a server that needs no key. A
// missing, unreadable or empty credential file is an error wrapping
// [ErrInvalid] that says how to provide it.
func (p Provider) Key(environ []string) (string, error) {
	if p.APIKey != "" {
		return p.APIKey, nil
	}
	if p.APIKeyCredential == "" {
		return "", nil
	}
	key := fmt.Sprintf("provider %q: api_key_credential", p.Name)
	fix := fmt.Sprintf("put the key in /etc/shelldon/credentials/%s (mode 0600), which shelldon-broker.service loads, and restart it; "+
		"outside systemd (`shelldon up`), run shelldon setup --state-dir DIR (it keeps the key in DIR/credentials), or set api_key, or SHELLDON_PROVIDER_URL, _MODEL and SHELLDON_PROVIDER_KEY", p.APIKeyCredential)
	source := p.from
	if source == "" {
		source = sourceInMemory
	}
	if !validCredentialName(p.APIKeyCredential) {
		return "", &configError{source: source, key: key, problem: fmt.Sprintf("%q is not a file name", p.APIKeyCredential), fix: fix}
	}
	return readCredential(environ, source, key, fix, CredentialPrefix+p.APIKeyCredential, p.APIKeyCredential)
}

// BotToken returns the bot's token: Token if set, else the contents of
// $CREDENTIALS_DIRECTORY/[TelegramCredential] without its trailing
// newline. ok is false when neither exists: then Telegram is off. An
// unreadable or empty credential file is an error wrapping [ErrInvalid]
// that says how to fix it.
func (t Telegram) BotToken(environ []string) (token string, ok bool, err error) {
	if t.Token != "" {
		return t.Token, true, nil
	}
	token, err = readCredential(environ, sourceEnvironment, "telegram.token",
		"put the token from @BotFather in /etc/shelldon/telegram/token (mode 0600), which shelldon.service loads, and restart shelldon; or set telegram.token or SHELLDON_TELEGRAM_TOKEN instead",
		TelegramCredential)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", false, nil
	case err != nil:
		return "", false, err
	}
	return token, true, nil
}

// Check tells whether Telegram is enabled, which it is when [BotToken]
// finds a token. An enabled bot with no allowed users is an error wrapping
// [ErrInvalid] (with enabled true): it would answer strangers.
func (t Telegram) Check(environ []string) (enabled bool, err error) {
	_, enabled, err = t.BotToken(environ)
	if err != nil || !enabled {
		return false, err
	}
	// Without allowed users the bot waits to be paired (shelldon pair),
	// answering strangers only "not paired".
	return true, nil
}

// readCredential reads a credential that systemd's LoadCredential= put in
// $CREDENTIALS_DIRECTORY: the first of names found there, without its
// trailing newline. Every error wraps [ErrInvalid] and names source (what
// asked for the credential), key and fix; it also wraps [fs.ErrNotExist]
// when the directory is not set or holds none of names.
func readCredential(environ []string, source, key, fix string, names ...string) (string, error) {
	dir, _ := lookupEnv(environ, credentialsDirectory)
	if dir == "" {
		return "", &configError{source: source, key: key,
			problem: "$" + credentialsDirectory + " is not set (systemd sets it only for a unit that loads credentials), so the credential cannot be read",
			fix:     fix, cause: fs.ErrNotExist}
	}
	var (
		path string
		data []byte
		err  error
	)
	for _, name := range names {
		path = filepath.Join(dir, name)
		if data, err = os.ReadFile(path); !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", &configError{source: source, key: key, problem: fmt.Sprintf("credential file %s does not exist", path), fix: fix, cause: err}
	case err != nil:
		return "", &configError{source: source, key: key, problem: "cannot read the credential: " + err.Error(), fix: fix, cause: err}
	}
	value := strings.TrimRight(string(data), "\r\n")
	if value == "" {
		return "", &configError{source: source, key: key, problem: fmt.Sprintf("credential file %s is empty", path), fix: fix}
	}
	return value, nil
}

// validCredentialName tells whether name can be a file directly inside
// $CREDENTIALS_DIRECTORY, so that it cannot reach outside it.
func validCredentialName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}
