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
