package policy

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// ErrDenied marks a path that the deny list refuses wherever it lies: the
// vault, or a name shaped like a credential (see [DeniedName]). The
// workspace's resolver (shelldon/beneath.Jail) wraps it.
var ErrDenied = errors.New("denied")

// credentialMatch is how a rule reads a lowercased name.
type credentialMatch int

const (
	credentialExact  credentialMatch = iota // the whole name: ".netrc"
	credentialPrefix                        // how the name starts: "id_"
	credentialSuffix                        // how the name ends: ".pem"
	// credentialWord: the text ends a word of the name, that is it is
	// followed by the end or by ".", "_" or "-", with anything before it:
	// "token" in "token", ".token", "api_token.txt", "apiToken.txt", but
	// not in "tokenizer.py" or "tokens.json".
	credentialWord
)

// credentialWordEnds are the bytes that end a word of a file name.
const credentialWordEnds = "._-"

// credentialRule is one shape of credential-shaped name.
type credentialRule struct {
	match credentialMatch
	text  string // lowercase
	// code means a name that ends in a source-code extension (see
	// credentialCodeExtensions) escapes the rule.
	code bool
	// reason is what DeniedName's caller is told, with %q for the name.
	reason string
}

// credentialRules are the credential-shaped names, in the order their
// reasons are preferred: a tool's own file is named before the word it
// holds (".vault-token" is Vault's, before it is a token).
var credentialRules = lazy[[]credentialRule]{build: func() []credentialRule {
	return slices.Concat(
		credentialExacts("%q is the file where %s",
			".netrc", "curl, ftp and git keep passwords",
			"_netrc", "curl, ftp and git keep passwords",
			".git-credentials", "git's credential store keeps passwords",
			".npmrc", "npm keeps registry tokens",
			".pypirc", "PyPI uploads keep passwords and tokens",
			".pgpass", "PostgreSQL clients keep passwords",
			".my.cnf", "MySQL clients keep passwords",
			".boto", "boto and gsutil keep cloud keys",
			".s3cfg", "s3cmd keeps cloud keys",
			".vault-token", "HashiCorp Vault keeps its token",
			".dockercfg", "old Docker clients keep registry passwords"),
		credentialExacts("%q is a directory where %s",
			".ssh", "SSH keeps keys",
			".gnupg", "GnuPG keeps private keys",
			".aws", "AWS tools keep access keys",
			".azure", "Azure tools keep tokens",
			".kube", "Kubernetes tools keep cluster credentials",
			".docker", "Docker keeps registry credentials",
			"gcloud", "the Google Cloud SDK keeps tokens",
			".password-store", "pass keeps passwords"),
		[]credentialRule{
			{match: credentialPrefix, text: ".env", reason: "%q is named like an environment file, which holds secrets"},
			{match: credentialSuffix, text: ".env", reason: "%q is named like an environment file, which holds secrets"},
			{match: credentialPrefix, text: "id_", code: true, reason: "%q is named like an SSH key (id_*)"},
		},
		credentialSuffixes("like an SSH key", "_rsa", "_rsa.pub", "_dsa", "_dsa.pub", "_ecdsa", "_ecdsa.pub", "_ed25519", "_ed25519.pub"),
		credentialSuffixes("like a key, certificate or password file",
			".pem", ".key", ".crt", ".cer", ".p12", ".pfx", ".p8", ".jks", ".keystore", ".ppk", ".htpasswd"),
		credentialSuffixes("like a PGP key or a file encrypted for one", ".asc", ".gpg"),
		credentialSuffixes("like a KeePass password database", ".kdbx", ".kdb"),
		credentialWords("a token", "token"),
		credentialWords("a secret", "secret", "secrets"),
		credentialWords("a password", "password", "passwords"),
		credentialWords("credentials", "credential", "credentials"),
		credentialWords("an API key", "apikey", "api_key", "api-key"),
		credentialWords("a private key", "privatekey", "private_key", "private-key"),
	)
}}

// credentialExacts makes rules for whole names, given as name, what
// pairs.
func credentialExacts(format string, pairs ...string) []credentialRule {
	rules := make([]credentialRule, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		rules = append(rules, credentialRule{match: credentialExact, text: pairs[i],
			reason: strings.Replace(format, "%s", pairs[i+1], 1)})
	}
	return rules
}

// credentialSuffixes makes rules for name endings.
func credentialSuffixes(like string, suffixes ...string) []credentialRule {
	rules := make([]credentialRule, len(suffixes))
	for i, suffix := range suffixes {
		rules[i] = credentialRule{match: credentialSuffix, text: suffix, reason: "%q ends in " + suffix + ", " + like}
	}
	return rules
}

// credentialWords makes rules for words that name a secret; code escapes
// them.
func credentialWords(what string, words ...string) []credentialRule {
	rules := make([]credentialRule, len(words))
	for i, word := range words {
		rules[i] = credentialRule{match: credentialWord, text: word, code: true, reason: "%q is named like " + what + " (" + word + ")"}
	}
	return rules
}

// credentialCodeExtensions are the extensions of program source and of
// documentation: such a file holds text a person or the tests read, so
// its name describes its subject (tokenizer code, a test of passwords),
// and the sandbox must show it to the tests that import it.
var credentialCodeExtensions = lazy[map[string]bool]{build: func() map[string]bool {
	return map[string]bool{
		".py": true, ".pyi": true, ".go": true, ".rs": true, ".js": true, ".mjs": true, ".cjs": true,
		".ts": true, ".tsx": true, ".jsx": true, ".java": true, ".kt": true, ".c": true, ".h": true,
		".cc": true, ".cpp": true, ".hpp": true, ".rb": true, ".php": true, ".cs": true, ".swift": true,
		".lua": true, ".pl": true, ".sh": true, ".html": true, ".css": true, ".md": true, ".rst": true,
	}
}}

// DeniedName reports whether a single file name is shaped like a
// credential, ignoring case. The groups, and why each is there:
//   - an environment file: a name starting with ".env" (".env",
//     ".env.local", ".envrc") or ending in ".env" ("prod.env"), which
//     is where applications keep their secrets; "notes.env.txt" is
//     neither;
//   - a tool's credential file, by its exact name: .netrc and _netrc
//     (curl, ftp, git), .git-credentials, .npmrc, .pypirc, .pgpass,
//     .my.cnf, .boto, .s3cfg, .vault-token, .dockercfg;
//   - a directory where tools keep keys and tokens, so that everything
//     below it is denied: .ssh, .gnupg, .aws (credentials and config),
//     .azure, .kube (config), .docker (config.json), gcloud (under
//     .config) and .password-store;
//   - a key, certificate or password file, by its ending: .pem, .key,
//     .crt, .cer, .p12, .pfx, .p8, .jks, .keystore, .ppk, .htpasswd;
//     .asc and .gpg (PGP keys and what is encrypted for them); .kdbx and
//     .kdb (KeePass);
//   - an SSH key: a name starting with "id_" ("id_rsa", "id_ed25519.pub")
//     or ending in _rsa, _dsa, _ecdsa or _ed25519, with or without
//     ".pub" ("deploy_rsa"): public keys too, since a key pair's halves
//     lie side by side;
//   - named like a secret: a name in which token, secret(s),
//     password(s), credential(s), an API key (apikey, api_key, api-key)
//     or a private key (privatekey, private_key, private-key) ends a
//     word, that is stands at the end or before ".", "_" or "-", with
//     anything before it: "token", "token.txt", ".token", "api_token",
//     "apiToken.txt", "client_secret.json", "credentials",
//     "credentials-prod.json". A longer word is another word:
//     "tokenizer.json", "tokens.json" (vocabularies, not credentials),
//     "secretary.txt" are allowed.
//
// A name that ends in a source-code or documentation extension (.py,
// .go, .js, .ts, .rs, .java, .c, .h, .rb, .sh, .md, .rst, .html, … see
// credentialCodeExtensions) escapes the last two groups' id_* and word
// rules: "tokenizer.py", "test_token.py", "id_map.py" and
// "password_reset.html" are code to read and to import, and refusing
// them would break the tests of any project that handles tokens. The
// cost is a known gap: a secret written into code ("secrets.py" with an
// API key in it) has no name to be caught by, here or by any rule of
// names. The other groups hold whatever the extension: ".env.py" is
// denied.
//
// A tool that lists a directory uses it to leave such entries out.
func DeniedName(name string) bool {
	return credentialReason(name) != ""
}

// Denied reports whether any component of a slash-separated path is shaped
// like a credential (see [DeniedName]), with a reason for the owner and the
// model. It looks at the path as written; [Jail.Resolve] also applies it to
// where the path leads.
func Denied(path string) (reason string, denied bool) {
	for name := range strings.SplitSeq(path, "/") {
		if reason := credentialReason(name); reason != "" {
			return reason, true
		}
	}
	return "", false
}

// credentialIndex finds the rules that may hold for a name without trying
// each: a whole name and an extension are looked up, and a word rule is
// tried only where a word ends. Every lookup returns the rule's index in
// credentialRules, so that the first rule that holds gives the reason.
// It is built at its first use, not at every process's start.
var credentialIndex = lazy[credentialLookup]{build: func() (ix credentialLookup) {
	ix.exact, ix.ext = make(map[string]int), make(map[string]int)
	for i, r := range credentialRules.get() {
		switch {
		case r.match == credentialExact:
			ix.exact[r.text] = i
		case r.match == credentialSuffix && path.Ext(r.text) == r.text:
			if _, ok := ix.ext[r.text]; !ok {
				ix.ext[r.text] = i
			}
		case r.match == credentialWord:
			ix.words = append(ix.words, i)
		default:
			ix.other = append(ix.other, i)
		}
	}
	return ix
}}

// credentialLookup is credentialIndex: the rules of whole names and of
// extensions by their text, and the word rules and the rest in order.
type credentialLookup struct {
	exact, ext   map[string]int
	other, words []int
}

// credentialReason says why name looks like a credential, or "".
func credentialReason(name string) string {
	if name == "" {
		return ""
	}
	rules := credentialRules.get()
	lower := strings.ToLower(name)
	code := credentialCodeExtensions.get()[path.Ext(lower)]
	first := len(rules)
	holds := func(i int, ok bool) {
		if ok && i < first && !(rules[i].code && code) {
			first = i
		}
	}
	index := credentialIndex.get()
	i, ok := index.exact[lower]
	holds(i, ok)
	i, ok = index.ext[path.Ext(lower)]
	holds(i, ok)
	for _, i := range index.other {
		holds(i, rules[i].matches(lower))
	}
	if !code {
		for end := 0; end <= len(lower); end++ {
			if end < len(lower) && strings.IndexByte(credentialWordEnds, lower[end]) < 0 {
				continue
			}
			for _, i := range index.words {
				holds(i, strings.HasSuffix(lower[:end], rules[i].text))
			}
		}
	}
	if first == len(rules) {
		return ""
	}
	return fmt.Sprintf(rules[first].reason, name)
}

// matches reports whether a prefix or suffix rule holds for a lowercased
// name; exact names, extensions and words are found by credentialIndex.
func (r credentialRule) matches(lower string) bool {
	if r.match == credentialPrefix {
		return strings.HasPrefix(lower, r.text)
	}
	return strings.HasSuffix(lower, r.text)
}
