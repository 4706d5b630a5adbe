package policy

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestCredentialGlob(t *testing.T) {
	tests := []struct {
		pattern string
		dots    bool
		want    bool
		why     string
	}{
		{"i?_map.txt", false, true, "id_map.txt is an SSH key's name"},
		{"?d_rsa", false, true, "id_rsa"},
		{"[i]d_rsa", false, true, "id_rsa"},
		{"[a-z]d_rsa", false, true, "id_rsa"},
		{"[A-Z]D_RSA", false, true, "ID_RSA, lowercased"},
		{"id[A-z]rsa", false, true, "[A-z] holds _, and lowercasing the range first would lose it"},
		{"[!x]d_rsa", false, true, "a negated set matches i"},
		{"prod.en?", false, true, "prod.env"},
		{"*oken", false, true, "token"},
		{"secret?.yaml", false, true, "secrets.yaml"},
		{"cred*", false, true, "credentials"},
		{"*.kdb?", false, true, "vault.kdbx"},
		{"*", false, true, "anything"},
		{"*.json", false, true, "credentials.json"},
		{"*.txt", false, true, "token.txt"},
		{"g*", false, true, "gcloud"},
		{"?npmrc", false, false, "the shell's ? does not match the leading dot of .npmrc"},
		{"?npmrc", true, true, "fnmatch's ? does: .npmrc"},
		{"*rc", false, true, "_netrc"},
		{"*.rst", true, true, ".env.rst, with dots"},
		{"*.rst", false, false, "code names escape the word rules, and no other rule ends in .rst"},
		{"*.py", false, false, "code"},
		{"src_*.py", false, false, "code"},
		{"*.md", false, false, "documentation"},
		{"*.[p]y", false, true, "the extension is not written plainly, so *.ty, *.ky… count"},
		{"test_?.go", false, false, "code"},
		{"data?.csv", false, false, "one character cannot make a word rule hold"},
		{"data_*.csv", false, true, "data_token.csv"},
		{"[abc]", false, false, "a, b or c"},
		{"??", false, false, "two characters are too short for every rule"},
		{"??????", false, true, "apikey and id_abc are six characters"},
		{"x[", false, false, "an unclosed [ is one character"},
		{strings.Repeat("?", 256), false, false, "no name is longer than 255 bytes"},
		{strings.Repeat("?", 255), false, true, "id_ and 252 more characters"},
		{"[[:alpha:]]d_rsa", false, true, "a class matches i"},
		{"*.\u212aey", false, true, "the Kelvin sign lowercases to k: *.key"},
	}
	for _, tt := range tests {
		shape, got := credentialGlob(tt.pattern, tt.dots)
		if got != tt.want {
			t.Errorf("credentialGlob(%q, dots=%v) = %q, %v, want %v: %s", tt.pattern, tt.dots, shape, got, tt.want, tt.why)
		}
	}
}

// TestCredentialGlobSound checks credentialGlob against the names it
// stands for: whenever a pattern matches a denied name (by
// filepath.Match, which reads *, ? and [] as the shell does, but for
// leading dots), credentialGlob must say it could.
func TestCredentialGlobSound(t *testing.T) {
	var names []string
	for _, r := range credentialRules.get() {
		base := r.text
		switch r.match {
		case credentialPrefix:
			names = append(names, base+"x", base+"rsa.pub", base+"x.txt")
		case credentialSuffix:
			names = append(names, "a"+base, "a.b"+base)
		case credentialWord:
			names = append(names, base, "."+base, "a_"+base, base+".txt", "a"+base+"-b.json")
		default:
			names = append(names, base)
		}
	}
	for _, name := range names[:len(names):len(names)] {
		names = append(names, strings.ToUpper(name), strings.ToUpper(name[:1])+name[1:])
	}
	for _, name := range names {
		if !DeniedName(name) {
			t.Fatalf("the test's name %q is not denied", name)
		}
		for _, pattern := range credentialTestPatterns(name) {
			matched, err := filepath.Match(pattern, name)
			if err != nil || !matched {
				continue
			}
			for _, dots := range []bool{true, false} {
				if !dots && strings.HasPrefix(name, ".") && !strings.HasPrefix(pattern, ".") {
					continue
				}
				if _, ok := credentialGlob(pattern, dots); !ok {
					t.Errorf("credentialGlob(%q, dots=%v) = false, but the pattern matches the denied name %q", pattern, dots, name)
				}
			}
		}
	}
}

// credentialTestPatterns derives globs that match name: each character
// in turn made a ?, a [c], a range around it or a *, and the name's
// start and end made a *.
func credentialTestPatterns(name string) []string {
	patterns := []string{"*", "*" + name[len(name)/2:], name[:len(name)/2] + "*"}
	for i := 0; i < len(name); i++ {
		c := name[i]
		for _, glob := range []string{"?", "*", "[" + string(c) + "]", "[^x]", "[" + string(c) + "-~]", "[ -" + string(c) + "]"} {
			patterns = append(patterns, name[:i]+glob+name[i+1:])
		}
	}
	return patterns
}

// TestCredentialIndex checks the indexed lookup against the rules tried
// one by one in order, on the names the rules are written for, those
// names changed, and ordinary ones.
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
