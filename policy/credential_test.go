package policy

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestCredentialIndex(t *testing.T) {
	reference := func(name string) string {
		lower := strings.ToLower(name)
		code := credentialCodeExtensions.get()[filepath.Ext(lower)]
		for _, r := range credentialRules.get() {
			if r.code && code {
				continue
			}
			holds := false
			switch r.match {
			case credentialExact:
				holds = lower == r.text
			case credentialPrefix:
				holds = strings.HasPrefix(lower, r.text)
			case credentialSuffix:
				holds = strings.HasSuffix(lower, r.text)
			case credentialWord:
				for i := range lower {
					end := i + len(r.text)
					if strings.HasPrefix(lower[i:], r.text) && (end == len(lower) || strings.ContainsRune(credentialWordEnds, rune(lower[end]))) {
						holds = true
					}
				}
			}
			if holds {
				return fmt.Sprintf(r.reason, name)
			}
		}
		return ""
	}
	names := []string{"", "README.md", "main.py", "notes.txt", "a", ".", "..", "x.y.z", "token.py.txt", "id_.py",
		"my.env.py", ".env.py", "secrets.tar.gz", "Token_Secret.JSON", "api-key-token", "x_rsa.py", "._rsa"}
	for _, r := range credentialRules.get() {
		for _, affix := range []string{"", "x", ".txt", ".py", "s", "_1", "-a.b"} {
			names = append(names, r.text+affix, affix+r.text, "a"+affix+r.text+affix)
		}
	}
	for _, name := range names {
		if got, want := credentialReason(name), reference(name); got != want {
			t.Errorf("credentialReason(%q) = %q, want %q (the rules tried in order)", name, got, want)
		}
	}
}

func TestDeniedName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{".env", true},
		{".ENV", true},
		{"Prod.Env", true},
		{".env.local", true},
		{".Env.Production", true},
		{".envrc", true},
		{"notes.env.txt", false},
		{"env", false},
		{".venv", false},
		{"venv", false},
		{"dotenv.py", false},
		{"environment.yml", false},
		{"server.pem", true},
		{"server.PEM", true},
		{"tls.key", true},
		{"cert.crt", true},
		{"ca.Cer", true},
		{"bundle.p12", true},
		{"bundle.pfx", true},
		{".htpasswd", true},
		{"site.htpasswd", true},
		{"store.jks", true},
		{"putty.ppk", true},
		{"monkey", false},
		{"keyboard.txt", false},
		{"key", false},
		{"pem", false},
		{"id_rsa", true},
		{"ID_ED25519.pub", true},
		{"id_rsa.pub", true},
		{"id_map.py", false},
		{"id_map.txt", true},
		{"my_id_rsa", true},
		{"identity", false},
		{"vault", false},
		{"README.md", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DeniedName(tt.name); got != tt.want {
				t.Errorf("DeniedName(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

// TestDeniedNameShapes checks each group of credential-shaped names in
// the deny list, and the ordinary names next to them that must stay
// readable.
func TestDeniedNameShapes(t *testing.T) {
	tests := []struct {
		name   string
		denied bool
		why    string // for a denied name, a piece of the reason; else why it is allowed
	}{
		// tools' credential files
		{".netrc", true, "where curl, ftp and git keep passwords"},
		{"_netrc", true, "where curl, ftp and git keep passwords"},
		{".git-credentials", true, "git's credential store"},
		{".npmrc", true, "npm"},
		{".pypirc", true, "PyPI"},
		{".pgpass", true, "PostgreSQL"},
		{".my.cnf", true, "MySQL"},
		{".boto", true, "boto"},
		{".s3cfg", true, "s3cmd"},
		{".vault-token", true, "Vault"},
		{".dockercfg", true, "Docker"},
		{"npmrc", false, "only the dot file is npm's"},
		// directories of keys and tokens
		{".ssh", true, "SSH"},
		{".gnupg", true, "GnuPG"},
		{".aws", true, "AWS"},
		{".azure", true, "Azure"},
		{".kube", true, "Kubernetes"},
		{".docker", true, "Docker"},
		{"gcloud", true, "Google Cloud"},
		{".password-store", true, "pass"},
		{"ssh", false, "a directory of that name without the dot is ordinary"},
		{"docker", false, "a directory of that name without the dot is ordinary"},
		// keys, certificates and password databases
		{"release.keystore", true, "ends in .keystore"},
		{"vault.kdbx", true, "ends in .kdbx"},
		{"old.kdb", true, "ends in .kdb"},
		{"private.asc", true, "ends in .asc"},
		{"secring.gpg", true, "ends in .gpg"},
		{"AuthKey_ABC123.p8", true, "ends in .p8"},
		{"deploy_rsa", true, "SSH key"},
		{"deploy_rsa.pub", true, "SSH key"},
		{"backup_ed25519", true, "SSH key"},
		{"host_ecdsa", true, "SSH key"},
		{"old_dsa", true, "SSH key"},
		{"test_rsa.py", false, "code: its extension says it is a program"},
		{"rsa.txt", false, "no underscore: not a key's name"},
		// named like a secret
		{"token", true, "token"},
		{"token.txt", true, "token"},
		{"token.json", true, "token"},
		{".token", true, "token"},
		{"api_token", true, "token"},
		{"github-token.txt", true, "token"},
		{"apiToken.txt", true, "token"},
		{"telegram.token", true, "token"},
		{"msal_token_cache.json", true, "token"},
		{"secrets.yaml", true, "secret"},
		{"secrets", true, "secret"},
		{"secret.txt", true, "secret"},
		{"client_secret.json", true, "secret"},
		{"passwords.txt", true, "password"},
		{"db_password", true, "password"},
		{"credentials", true, "credential"},
		{"credentials.json", true, "credential"},
		{"credentials-prod.json", true, "credential"},
		{"gcp_credentials.json", true, "credential"},
		{"api_key.txt", true, "API key"},
		{"apikey", true, "API key"},
		{"private_key.json", true, "private key"},
		{"tokenizer.py", false, "token followed by a letter is another word"},
		{"tokenizer.json", false, "token followed by a letter is another word"},
		{"tokens.json", false, "the plural names vocabularies (special_tokens_map.json), not credentials"},
		{"special_tokens_map.json", false, "the plural names vocabularies"},
		{"token.py", false, "code: a program about tokens"},
		{"test_token.py", false, "code: a test about tokens"},
		{"secrets.py", false, "code (a known gap: a secret written into code has no name to catch it by)"},
		{"password_reset.html", false, "code"},
		{"secretary.txt", false, "secret followed by a letter is another word"},
		{"credentialing.md", false, "another word"},
		{"keyboard.py", false, "ordinary"},
		{"README.md", false, "ordinary"},
	}
	for _, tt := range tests {
		reason, denied := Denied(tt.name)
		if denied != tt.denied || denied && !strings.Contains(reason, tt.why) {
			t.Errorf("Denied(%q) = %q, %v, want %v: %s", tt.name, reason, denied, tt.denied, tt.why)
		}
		if DeniedName(tt.name) != tt.denied {
			t.Errorf("DeniedName(%q) = %v, want %v: %s", tt.name, !tt.denied, tt.denied, tt.why)
		}
	}
}

func TestDenied(t *testing.T) {
	tests := []struct {
		path   string
		want   bool
		reason string
	}{
		{"keys/server.PEM", true, `"server.PEM" ends in .pem`},
		{"a/.env/b.txt", true, `".env" is named like an environment file`},
		{"home/.ssh/ID_RSA", true, `".ssh" is a directory where SSH keeps keys`},
		{"keys/ID_RSA", true, `"ID_RSA" is named like an SSH key`},
		{".aws/credentials", true, `".aws" is a directory where AWS`},
		{".kube/config", true, `".kube"`},
		{".docker/config.json", true, `".docker"`},
		{".config/gcloud/application_default_credentials.json", true, `"gcloud"`},
		{"a/b/c.txt", false, ""},
		{"vault/notes.md", false, ""},
		{"", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			reason, denied := Denied(tt.path)
			if denied != tt.want || !strings.Contains(reason, tt.reason) {
				t.Errorf("Denied(%q) = %q, %v, want %v with a reason containing %q", tt.path, reason, denied, tt.want, tt.reason)
			}
		})
	}
}
