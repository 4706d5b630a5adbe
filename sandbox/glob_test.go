package sandbox_test

import (
	"strings"
	"testing"

	"shelldon/policy"
	"shelldon/sandbox"
)

// TestAGlobReachesNoCredential is what lets the shell policy pass a glob
// inside the workspace whatever it could match (cat requirements*.txt,
// cat *, sha256sum dist/*.whl): the command expands it in the sandbox's
// view, where no credential-shaped name is left for it to match, in any
// directory, through a link or not.
func TestAGlobReachesNoCredential(t *testing.T) {
	sb := newSandbox(t)
	for _, o := range owners {
		t.Run(o.name, func(t *testing.T) {
			ws := credentialWorkspace(t, o.uid)
			denied := deniedSecrets(t)
			for _, view := range []sandbox.View{sandbox.ReadOnly, sandbox.Captured} {
				res := run(t, sb, sandbox.Spec{View: view, Workspace: ws, Argv: sh(
					`cat * */* */*/* .*/* 2>/dev/null; head -n 5 i?_* *.pem proj/*.en? */*/*.pem 2>/dev/null; sha256sum * */* 2>/dev/null; echo; ls -d * */* .* .*/* */.* 2>/dev/null`)})
				discard(res.Changes)
				out := res.Text()
				for name, content := range denied {
					if strings.Contains(out, strings.TrimSpace(content)) {
						t.Errorf("a glob in the %v view read %s: %s", view, name, out)
					}
				}
				if !strings.Contains(out, "plain readme") {
					t.Fatalf("the globs in the %v view read nothing: %s", view, out)
				}
				for _, word := range strings.Fields(out) {
					if _, ok := policy.Denied(word); ok {
						t.Errorf("a glob in the %v view matched %q: %s", view, word, out)
					}
				}
			}
		})
	}
}
