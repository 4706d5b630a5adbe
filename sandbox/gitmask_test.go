package sandbox_test

import (
	"fmt"
	"os"
	"path/filepath"
	"shelldon/beneath"
	"shelldon/policy"
	"strings"
	"testing"

	"shelldon/sandbox"
	"shelldon/sandbox/sandboxtest"
	"shelldon/testhost"
)

// The credential a tracked .env holds in these tests: every copy of it
// starts with keyPrefix, and no view may print that.
const keyPrefix = "sk-test-"

// trackedEnv is how a repository came to hold the owner's .env.
type trackedEnv string

const (
	envCommitted trackedEnv = "committed"      // in HEAD, and in the working tree
	envStaged    trackedEnv = "staged"         // in the index only, never committed
	envDeleted   trackedEnv = "deleted-later"  // committed, then removed by the next commit
	envStashed   trackedEnv = "stashed"        // a change to it kept in a stash
	envDangling  trackedEnv = "dangling-blobs" // staged once, then unstaged: a blob nothing names
	envTagged    trackedEnv = "tagged-tree"    // in a tree a tag names, in no commit
)

var trackedEnvs = []trackedEnv{envCommitted, envStaged, envDeleted, envStashed, envDangling, envTagged}

// trackedEnvWorkspace makes a workspace, owned by uid, whose repository
// holds a .env with an OPENAI_API_KEY the way how says, over two commits
// that change app.py.
func trackedEnvWorkspace(t *testing.T, uid int, how trackedEnv) string {
	t.Helper()
	ws := workspace(t, 0, map[string]string{"app.py": "print('hello v1')\n"})
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	key := "OPENAI_API_KEY=" + keyPrefix + string(how) + "-7d1f\n"
	testhost.Git(t, ws, "init", "-q", "-b", "main")
	if how == envDeleted {
		write(".env", key)
	}
	testhost.Git(t, ws, "add", "-A")
	testhost.Git(t, ws, "commit", "-qm", "first")
	write("app.py", "print('hello v2')\n")
	switch how {
	case envCommitted, envStashed:
		write(".env", key)
		testhost.Git(t, ws, "add", ".env")
	case envDeleted:
		testhost.Git(t, ws, "rm", "-q", ".env")
	}
	testhost.Git(t, ws, "commit", "-qam", "second")
	switch how {
	case envStaged:
		write(".env", key)
		testhost.Git(t, ws, "add", ".env")
	case envStashed:
		write(".env", "OPENAI_API_KEY="+keyPrefix+"in-the-stash-4c2e\n")
		testhost.Git(t, ws, "stash", "-q")
	case envDangling:
		write(".env", key)
		testhost.Git(t, ws, "add", ".env")
		testhost.Git(t, ws, "rm", "-q", "--cached", ".env")
	case envTagged:
		write(".env", key)
		testhost.Git(t, ws, "add", ".env")
		testhost.Git(t, ws, "tag", "snapshot", testhost.Git(t, ws, "write-tree"))
		testhost.Git(t, ws, "rm", "-q", "--cached", ".env")
	}
	sandboxtest.ChownTree(t, ws, uid)
	return ws
}

// gitViews are what a model may run to see a repository's history: every
// view of git's that prints a stored file, each blob named by its own
// object name too, as an attacker who listed them would.
const gitViews = `
v() { echo "== git $*"; git "$@" 2>&1; }
v status --short
v diff
v diff --cached
v diff HEAD~1
v diff --text HEAD~1
v diff -a --cached
v diff --binary HEAD~1
v diff --stat HEAD~1
v show HEAD
v show HEAD~1
v show --text HEAD
v log -p
v log -p --all
v log -p --all --reflog
v log -p -S OPENAI --all
v stash show -p
v grep --cached OPENAI
v grep OPENAI HEAD
v grep OPENAI snapshot
v grep -a OPENAI HEAD~1
v blame HEAD -- .env
v blame HEAD~1 -- .env
v ls-tree -r HEAD
blobs=$(git cat-file --batch-all-objects --batch-check='%(objecttype) %(objectname)' | sed -n 's/^blob //p')
prev=
for b in $blobs; do
	v cat-file -p "$b"
	v cat-file blob "$b"
	v show "$b"
	[ -n "$prev" ] && v diff "$prev" "$b"
	echo "== git cat-file --batch <<< $b"; echo "$b" | git cat-file --batch
	prev=$b
done
v cat-file -p HEAD:.env
v show :.env
`

// rawObjectReads reads every file of the workspace, .git's included, as a
// program other than git would, and inflates every zlib stream it finds
// at any offset: loose objects, and objects inside packs.
const rawObjectReads = `
import os, zlib
for root, dirs, files in os.walk('.'):
    for name in files:
        try:
            data = open(os.path.join(root, name), 'rb').read()
        except OSError:
            continue
        print(name, data[:200])
        for at in range(len(data)):
            if data[at] != 0x78:
                continue
            try:
                print(name, at, zlib.decompressobj().decompress(data[at:]))
            except zlib.error:
                pass
`

// leakingViews names the views of gitViews whose output holds the key.
func leakingViews(output string) []string {
	var leaks []string
	for section := range strings.SplitSeq(output, "== ") {
		if strings.Contains(section, keyPrefix) {
			head, _, _ := strings.Cut(section, "\n")
			leaks = append(leaks, head)
		}
	}
	return leaks
}

// TestGitViewsNeverShowATrackedCredential: the owner's repository tracks
// .env, however it came to, and every view of git's — each blob by its
// object name, the stash, the index, history with --text and --binary,
// blame, grep, pickaxe — and every read of git's objects by another
// program prints no byte of the key, in the view a free command gets and
// in the view of an approved one; git still shows the rest of history.
func TestGitViewsNeverShowATrackedCredential(t *testing.T) {
	sb := newSandbox(t)
	for _, o := range owners {
		for _, how := range trackedEnvs {
			t.Run(o.Name+"/"+string(how), func(t *testing.T) {
				ws := trackedEnvWorkspace(t, o.UID, how)
				if how == envCommitted || how == envStaged {
					// Packed too: the key then lies inside a pack, not in a
					// loose object of its own.
					testhost.Git(t, ws, "-c", "safe.directory=*", "gc", "-q")
					sandboxtest.ChownTree(t, ws, o.UID)
				}
				for _, view := range []sandbox.View{sandbox.ReadOnly, sandbox.Captured} {
					spec := sandbox.Spec{View: view, Workspace: ws, Limits: sandbox.Limits{Output: 4 << 20}}
					spec.Argv = sh(gitViews)
					views := run(t, sb, spec)
					if leaks := leakingViews(views.Text()); len(leaks) > 0 {
						t.Errorf("the %v view showed the key through %d of git's views: %q", view, len(leaks), leaks)
					}
					if views.OutputDropped > 0 {
						t.Errorf("the %v view's output was cut; the check saw only its tail", view)
					}
					if !strings.Contains(views.Text(), "+print('hello v2')") {
						t.Errorf("the %v view hid the history of app.py too:\n%s", view, views.Text())
					}
					spec.Argv = []string{"python3", "-c", rawObjectReads}
					raw := run(t, sb, spec)
					if strings.Contains(raw.Text(), keyPrefix) {
						t.Errorf("the %v view let a program read the key out of git's objects:\n%s", view, raw.Text())
					}
				}
			})
		}
	}
}

// TestGitMasksFollowTheRepository: the masks are kept while the
// repository stays as it was, and a credential committed since (by the
// owner, on the host) is masked at the next run, as is one in a
// repository of its own below the workspace, one under a directory named
// like a credential, and one whose name only lowercases to a rule's.
func TestGitMasksFollowTheRepository(t *testing.T) {
	sb := newSandbox(t)
	ws := trackedEnvWorkspace(t, 0, envCommitted)
	views := func() string {
		return run(t, sb, sandbox.Spec{Workspace: ws, Limits: sandbox.Limits{Output: 1 << 20},
			Argv: sh("git log -p --all; git -C sub log -p --all")}).Text()
	}
	if out := views(); strings.Contains(out, keyPrefix) {
		t.Fatalf("the first run showed the key: %s", out)
	}
	names := []string{".ssh/config", "config/secrets/db.yaml", "certs/server.PEM", "deploy/API_TOKEN.txt",
		"k8s/.kube/config", "to\u212aen", "prod.env"}
	for i, name := range names {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("%slater-%d\n", keyPrefix, i)), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, denied := policy.Denied(name); !denied {
			t.Fatalf("policy no longer calls %s a credential; pick another name", name)
		}
	}
	testhost.Git(t, ws, "add", "-A")
	testhost.Git(t, ws, "commit", "-qm", "third, with credentials")
	sub := filepath.Join(ws, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, ".env"), []byte(keyPrefix+"in-a-repository-below\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testhost.Git(t, sub, "init", "-q")
	testhost.Git(t, sub, "add", "-A")
	testhost.Git(t, sub, "commit", "-qm", "sub")
	if out := views(); strings.Contains(out, keyPrefix) {
		t.Errorf("after new commits, a run showed a key:\n%s", out)
	} else if !strings.Contains(out, "masked by shelldon") || !strings.Contains(out, "+++ b/prod.env") || !strings.Contains(out, "+++ b/deploy/API_TOKEN.txt") {
		t.Errorf("the new commits do not show, masked:\n%s", out)
	}
}

// TestAnApprovedCommitKeepsTheOwnersRepository: an approved command that
// commits (and packs refs, as gc would) changes the owner's repository by
// its commit alone: none of the mask's replace refs, masked blobs or
// alternates reach it, and git on the host finds the repository whole,
// with its history unmasked.
func TestAnApprovedCommitKeepsTheOwnersRepository(t *testing.T) {
	sb := newSandbox(t)
	for _, o := range owners {
		t.Run(o.Name, func(t *testing.T) {
			ws := trackedEnvWorkspace(t, o.UID, envCommitted)
			res := run(t, sb, sandbox.Spec{View: sandbox.Captured, Workspace: ws, Argv: sh(
				"echo 'print(3)' > app.py && git -c user.name=pet -c user.email=pet@example.invalid commit -qam third && git pack-refs --all && git log --oneline | head -1")})
			if res.ExitCode != 0 || res.Changes == nil {
				t.Fatalf("the approved commit failed: %s", res.Text())
			}
			for _, c := range res.Changes.Changes {
				if strings.Contains(c.Path, "refs/replace") || strings.HasSuffix(c.Path, "objects/info/alternates") {
					t.Errorf("the change set holds the mask's %s (%s)", c.Path, c.Kind)
				}
			}
			if _, err := res.Changes.Apply(beneath.Jail{Root: ws}); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			git := func(args ...string) string {
				return testhost.Git(t, ws, append([]string{"-c", "safe.directory=*"}, args...)...)
			}
			if got := git("log", "--format=%s", "-1"); got != "third" {
				t.Errorf("the owner's HEAD is %q, want the approved commit", got)
			}
			if refs := git("for-each-ref", "refs/replace"); refs != "" {
				t.Errorf("the owner's repository gained replace refs: %s", refs)
			}
			if packed, _ := os.ReadFile(filepath.Join(ws, ".git", "packed-refs")); strings.Contains(string(packed), "refs/replace") {
				t.Errorf("the owner's packed-refs gained replace refs:\n%s", packed)
			}
			git("fsck", "--strict", "--no-dangling")
			if shown := git("show", "HEAD~1:.env"); !strings.Contains(shown, keyPrefix) {
				t.Errorf("the owner's own git shows .env as %q: the mask leaked into the repository", shown)
			}
		})
	}
}

// TestAnUnreadableRepositoryHidesItsObjects: when the look cannot tell
// what a repository's objects hold (a corrupt object), the run sees none
// of them rather than all.
func TestAnUnreadableRepositoryHidesItsObjects(t *testing.T) {
	sb := newSandbox(t)
	ws := trackedEnvWorkspace(t, 0, envCommitted)
	env, app := testhost.Git(t, ws, "rev-parse", "HEAD:.env"), testhost.Git(t, ws, "rev-parse", "HEAD~1:app.py")
	// The tree of HEAD, cut short: walking history fails on it.
	tree := testhost.Git(t, ws, "rev-parse", "HEAD^{tree}")
	object := filepath.Join(ws, ".git", "objects", tree[:2], tree[2:])
	if err := os.Chmod(object, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(object, 10); err != nil {
		t.Fatal(err)
	}
	res := run(t, sb, sandbox.Spec{Workspace: ws, Argv: sh("git cat-file -p " + env + "; git cat-file -p " + app + "; git show HEAD~1:app.py; git log -p --all; cat .git/objects/*/*")})
	if strings.Contains(res.Text(), keyPrefix) {
		t.Errorf("a repository git could not walk showed the key:\n%s", res.Text())
	}
	if strings.Contains(res.Text(), "print(") {
		t.Errorf("a repository git could not walk showed its objects:\n%s", res.Text())
	}
	if len(res.Withheld) != 1 || !strings.Contains(res.Withheld[0], "git's objects of .git were hidden") {
		t.Errorf("the run says it withheld %q, want .git's objects and why", res.Withheld)
	}
}

// TestGitsPlainCopiesAreHidden: what a git directory keeps of files as
// text outside its objects — the message of a `git commit -v` with its
// diff, the patch of a stopped rebase, rerere's memory of a conflict — is
// hidden from every run, while git still works.
func TestGitsPlainCopiesAreHidden(t *testing.T) {
	sb := newSandbox(t)
	ws := trackedEnvWorkspace(t, 0, envCommitted)
	diff := "second\n# ------------------------ >8 ------------------------\n+OPENAI_API_KEY=" + keyPrefix + "verbose-commit\n"
	for name, content := range map[string]string{
		".git/COMMIT_EDITMSG":             diff,
		".git/rebase-merge/patch":         "+OPENAI_API_KEY=" + keyPrefix + "stopped-rebase\n",
		".git/rebase-merge/head-name":     "refs/heads/main\n",
		".git/rebase-apply/0001":          "+OPENAI_API_KEY=" + keyPrefix + "am-patch\n",
		".git/rr-cache/3f2a9c1d/preimage": "<<<<<<<\nOPENAI_API_KEY=" + keyPrefix + "rerere\n",
	} {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res := run(t, sb, sandbox.Spec{Workspace: ws, Argv: sh("grep -ra " + keyPrefix + " . ; cat .git/COMMIT_EDITMSG .git/rebase-merge/patch; ls .git/rebase-merge; git log --oneline | head -1")})
	if strings.Contains(res.Text(), keyPrefix) {
		t.Errorf("a run read a copy git keeps as text:\n%s", res.Text())
	}
	if !strings.Contains(res.Text(), "head-name") || !strings.Contains(res.Text(), "second") {
		t.Errorf("a run lost the rest of the git directory:\n%s", res.Text())
	}
}

// TestANewRepositoryIsLookedThrough: a repository with no commit yet, or
// a bare one, is looked through like any other, and git works in it.
func TestANewRepositoryIsLookedThrough(t *testing.T) {
	sb := newSandbox(t)
	ws := workspace(t, 0, map[string]string{"app.py": "print(1)\n"})
	testhost.Git(t, ws, "init", "-q")
	testhost.Git(t, ws, "init", "-q", "--bare", "backup.git")
	res := run(t, sb, sandbox.Spec{Workspace: ws, Argv: sh("git status --short && git --git-dir=backup.git log --all")})
	if res.ExitCode != 0 || len(res.Withheld) > 0 || !strings.Contains(res.Text(), "?? app.py") {
		t.Errorf("git in a new repository = exit %d, withheld %q:\n%s", res.ExitCode, res.Withheld, res.Text())
	}
}
