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

// Key returns the provider's API key: APIKey if set, else the contents of
// $CREDENTIALS_DIRECTORY/keys_<APIKeyCredential> (a file of
// /etc/shelldon/credentials, as the broker's unit loads them) or
// $CREDENTIALS_DIRECTORY/<APIKeyCredential> (a credential loaded by name)
// without its trailing newline, else "" for a server that needs no key. A missing
// or empty credential file is an error wrapping [ErrInvalid] that says how
// to provide it.
func (p Provider) Key(environ []string) (string, error) {
	if p.APIKey != "" {
		return p.APIKey, nil
	}
	if p.APIKeyCredential == "" {
		return "", nil
	}
	key := fmt.Sprintf("provider %q: api_key_credential", p.Name)
	fix := fmt.Sprintf("put the key in /etc/shelldon/credentials/%s (mode 0600), which shelldon-broker.service loads, and restart it; or set api_key instead",
		p.APIKeyCredential)
	if !validCredentialName(p.APIKeyCredential) {
		return "", &configError{source: sourceInMemory, key: key, problem: fmt.Sprintf("%q is not a file name", p.APIKeyCredential), fix: fix}
	}
	dir, _ := lookupEnv(environ, credentialsDirectory)
	if dir == "" {
		return "", &configError{source: sourceEnvironment, key: key, problem: "$" + credentialsDirectory + " is not set, so the credential cannot be read", fix: fix}
	}
	path := filepath.Join(dir, CredentialPrefix+p.APIKeyCredential)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		path = filepath.Join(dir, p.APIKeyCredential)
		data, err = os.ReadFile(path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return "", &configError{source: sourceEnvironment, key: key, problem: fmt.Sprintf("credential file %s does not exist", path), fix: fix, cause: err}
	}
	if err != nil {
		return "", fmt.Errorf("read credential of provider %q: %w", p.Name, err)
	}
	apiKey := strings.TrimRight(string(data), "\r\n")
	if apiKey == "" {
		return "", &configError{source: sourceEnvironment, key: key, problem: fmt.Sprintf("credential file %s is empty", path),
			fix: "put the API key in the file LoadCredential= reads it from"}
	}
	return apiKey, nil
}

// validCredentialName tells whether name can be a file directly inside
// $CREDENTIALS_DIRECTORY, so that it cannot reach outside it.
func validCredentialName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}
