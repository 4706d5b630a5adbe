package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"shelldon/beneath"
	"shelldon/policy"
	"shelldon/sandbox"
	"shelldon/sandbox/image/imagetest"
)

// secrets is a workspace as an owner's project might hold it, every
// credential-shaped file marked with a word of its own. Which of them are
// credentials is policy's to say (policy.Denied), not the test's.
var secrets = map[string]string{
	"id_rsa":               "SECRET-rsa-5513\n",
	".env":                 "SECRET-env-8124\n",
	".netrc":               "SECRET-netrc-3307\n",
	".ssh/id_ed25519":      "SECRET-ed25519-9902\n",
	"proj/.env":            "SECRET-proj-env-4470\n",
	"proj/deep/server.pem": "SECRET-pem-6618\n",
	"proj/notes.txt":       "plain notes\n",
	"README.md":            "plain readme\n",
}

// credentialWorkspace makes the workspace of secrets for uid, with a
// link named like a credential that leads to a plain file, and links
// with plain names that lead to credentials.
func credentialWorkspace(t *testing.T, uid int) string {
	t.Helper()
	ws := workspace(t, uid, secrets)
	for link, target := range map[string]string{"deploy.key": "README.md", "innocent": "id_rsa", "proj/up": "../.env", "keys": ".ssh"} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(filepath.Join(ws, link), uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// deniedSecrets are the files of secrets that policy calls credentials.
func deniedSecrets(t *testing.T) map[string]string {
	denied := map[string]string{}
	for name, content := range secrets {
		if _, ok := policy.Denied(name); ok {
			denied[name] = content
		} else if strings.HasPrefix(content, "SECRET") {
			t.Logf("policy does not call %s a credential; it is not masked", name)
		}
	}
	return denied
}

// TestCredentialsAreMasked: whatever a command does, in every view, it
// reads nothing of a credential-shaped file, through its name, through a
// link or through a glob, and sees no such name. The shell policy lets a
// glob inside the workspace run whatever it could match on the strength
// of this (cat *, cat requirements*.txt, sha256sum dist/*.whl).
func TestCredentialsAreMasked(t *testing.T) {
	sb := newSandbox(t)
	for _, o := range owners {
		t.Run(o.Name, func(t *testing.T) {
			ws := credentialWorkspace(t, o.UID)
			denied := deniedSecrets(t)
			for _, view := range []sandbox.View{sandbox.ReadOnly, sandbox.Captured, sandbox.Scratch} {
				t.Run(view.String(), func(t *testing.T) {
					read := run(t, sb, sandbox.Spec{View: view, Workspace: ws, Argv: sh(
						"cat id_rsa .env .netrc .ssh/id_ed25519 proj/.env proj/deep/server.pem innocent proj/up keys/id_ed25519 deploy.key; grep -r SECRET . ; tar cf - . | tr -c '[:print:]' ' '; " +
							"cat * */* */*/* .*/* i?_* proj/*.en? */*/*.pem; sha256sum * */*")})
					for name, content := range denied {
						if strings.Contains(read.Text(), strings.TrimSpace(content)) {
							t.Errorf("the %v view let %s be read: %s", view, name, read.Text())
						}
					}
					if !strings.Contains(read.Text(), "plain readme") {
						t.Errorf("the %v view hid a plain file too: %s", view, read.Text())
					}
					list := run(t, sb, sandbox.Spec{View: view, Workspace: ws, Argv: sh("find . -mindepth 1; ls -la . proj; ls -d * */* .* .*/* */.*")})
					var seen []string
					for line := range strings.Lines(list.Text()) {
						name := strings.TrimPrefix(strings.TrimSpace(line), "./")
						if strings.HasPrefix(strings.TrimSpace(line), "./") {
							seen = append(seen, name)
						}
						if fields := strings.Fields(line); len(fields) > 0 {
							name = fields[len(fields)-1]
							if len(fields) > 2 && fields[len(fields)-2] == "->" {
								name = fields[len(fields)-3]
							}
						}
						if _, ok := policy.Denied(name); ok {
							t.Errorf("the %v view shows %q: %s", view, name, line)
						}
					}
					for _, want := range []string{"README.md", "proj/notes.txt", "innocent"} {
						if !strings.Contains(strings.Join(seen, "\n"), want) {
							t.Errorf("find in the %v view did not list %s: %q", view, want, seen)
						}
					}
					discard(read.Changes, list.Changes)
				})
			}
			t.Run("captured writes reach nothing", func(t *testing.T) {
				res := run(t, sb, sandbox.Spec{View: sandbox.Captured, Workspace: ws, Argv: sh(
					"echo pwned > .env; echo pwned >> id_rsa; mkdir -p .ssh; echo pwned > .ssh/id_ed25519; echo pwned > proj/.env; rm -rf proj/deep; rm -f innocent keys; echo ok > ok.txt")})
				if res.Changes == nil {
					t.Fatal("no change set")
				}
				defer res.Changes.Discard()
				for _, c := range res.Changes.Changes {
					if c.Type != 0 || c.Kind == sandbox.Deleted {
						continue
					}
					content, err := res.Changes.ReadNew(c.Path, 1<<20)
					if err != nil {
						t.Fatal(err)
					}
					if strings.Contains(string(content), "SECRET") {
						t.Errorf("the change set carries a credential's content in %s: %q", c.Path, content)
					}
				}
				report, err := res.Changes.Apply(beneath.Jail{Root: ws})
				if err != nil {
					t.Fatalf("Apply = %v", err)
				}
				for _, c := range report.Applied {
					if _, ok := policy.Denied(c.Path); ok {
						t.Errorf("Apply made %s %s", c.Kind, c.Path)
					}
				}
				got := readTree(t, ws)
				for name, content := range secrets {
					if got[name] != content {
						t.Errorf("after the captured run %s holds %q, want %q", name, got[name], content)
					}
				}
				if got["ok.txt"] != "ok\n" {
					t.Errorf("the plain write was not applied: %v", got)
				}
				if err := os.Remove(filepath.Join(ws, "ok.txt")); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// discard drops the change sets of runs whose changes do not matter.
func discard(sets ...*sandbox.ChangeSet) {
	for _, cs := range sets {
		if cs != nil {
			cs.Discard()
		}
	}
}

// TestTheVaultIsNeverSeen: were the vault ever inside a workspace or a
// bound directory, under its own name or another, no run sees it.
func TestTheVaultIsNeverSeen(t *testing.T) {
	img := imagetest.Image(t)
	for _, o := range owners {
		t.Run(o.Name, func(t *testing.T) {
			ws := workspace(t, o.UID, map[string]string{"state/vault/token": "SECRET-vault-7781\n", "state/notes.txt": "plain\n"})
			if err := os.Symlink("state/vault", filepath.Join(ws, "v")); err != nil {
				t.Fatal(err)
			}
			// The vault is named by a path of its own, not the workspace's.
			alias := filepath.Join(t.TempDir(), "vault-alias")
			if err := os.Symlink(filepath.Join(ws, "state", "vault"), alias); err != nil {
				t.Fatal(err)
			}
			sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: t.TempDir(), Vault: alias})
			if err != nil {
				t.Fatal(err)
			}
			for _, view := range []sandbox.View{sandbox.ReadOnly, sandbox.Captured, sandbox.Scratch} {
				res := run(t, sb, sandbox.Spec{View: view, Workspace: ws, Binds: []sandbox.Bind{{Source: filepath.Join(ws, "state"), Target: "/run/shelldon/state"}},
					Argv: sh("cat state/vault/token v/token /run/shelldon/state/vault/token; ls -a state /run/shelldon/state; grep -r SECRET . /run/shelldon")})
				discard(res.Changes)
				if out := res.Text(); strings.Contains(out, "SECRET-vault") || !strings.Contains(out, "notes.txt") || strings.Contains(strings.ReplaceAll(out, "state/vault", ""), "vault\n") {
					t.Errorf("the %v view shows the vault: %s", view, out)
				}
			}
		})
	}
}
