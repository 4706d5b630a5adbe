package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		input string
		want  []string
	}{
		{"", nil},
		{"   \t ", nil},
		{"status --porcelain", []string{"status", "--porcelain"}},
		{"  a   b\t c  ", []string{"a", "b", "c"}},
		{`commit -m "fix; rm -rf /"`, []string{"commit", "-m", "fix; rm -rf /"}},
		{`commit -m 'costs $5 | ` + "`x`" + ` & more'`, []string{"commit", "-m", "costs $5 | `x` & more"}},
		{`a\ b`, []string{"a b"}},
		{`a\;b`, []string{"a;b"}},
		{`--message="x y"`, []string{"--message=x y"}},
		{`''`, []string{""}},
		{`a "" b`, []string{"a", "", "b"}},
		{`a""b'c'd`, []string{"abcd"}},
		{`"a\"b"`, []string{`a"b`}},
		{`"a\\b"`, []string{`a\b`}},
		{`"a\nb"`, []string{`a\nb`}},
		{`"\$HOME \` + "`" + `"`, []string{"$HOME `"}},
		{"a\\\nb", []string{"ab"}},
		{"\"a\\\nb\"", []string{"ab"}},
		{"\"line1\nline2\"", []string{"line1\nline2"}},
		{"'line1\nline2'", []string{"line1\nline2"}},
		{"log HEAD~1", []string{"log", "HEAD~1"}},
		{"show HEAD@{1}", []string{"show", "HEAD@{1}"}},
		{"add *.go [ab].txt ?.md", []string{"add", "*.go", "[ab].txt", "?.md"}},
		{"log --grep=a#b", []string{"log", "--grep=a#b"}},
		{`'~/x' "#y"`, []string{"~/x", "#y"}},
		{"commit -m 'déjà vu'", []string{"commit", "-m", "déjà vu"}},
	}
	for _, tt := range tests {
		t.Run(tt.input, func(t *testing.T) {
			got, err := SplitArgs(tt.input)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("SplitArgs(%q) = %q, %v, want %q", tt.input, got, err, tt.want)
			}
		})
	}
}

func TestSplitArgsRefuses(t *testing.T) {
	tests := []struct {
		input   string
		message string
	}{
		{"status; rm -rf /", `';' outside quotes ends a command`},
		{"log | head", "pipe"},
		{"fetch &", "background"},
		{"status && rm x", "background"},
		{"diff > out", "redirects output"},
		{"diff 2>/dev/null", "redirects output"},
		{"apply < in", "redirects input"},
		{"log $(id)", "expands"},
		{"log `id`", "runs a command"},
		{"log $HOME", "expands"},
		{"log ${HOME}", "expands"},
		{"(status)", "subshell"},
		{"status\nrm -rf /", "new command"},
		{"status\r", "line break"},
		{`commit -m "unterminated`, "never closed"},
		{`commit -m "unterminated\`, "never closed"},
		{"commit -m 'unterminated", "never closed"},
		{`status\`, "backslash ends"},
		{`commit -m "$HOME"`, "use single quotes"},
		{"commit -m \"`id`\"", "use single quotes"},
		{"status # comment", "comment"},
		{"add ~/x", "home directory"},
	}
	for _, tt := range tests {
		t.Run(tt.input, func(t *testing.T) {
			got, err := SplitArgs(tt.input)
			if !errors.Is(err, ErrNotPlainArgs) || !strings.Contains(err.Error(), tt.message) {
				t.Errorf("SplitArgs(%q) = %q, %v, want an error wrapping %v that says %q", tt.input, got, err, ErrNotPlainArgs, tt.message)
			}
		})
	}
}

func TestCheckGitAllows(t *testing.T) {
	tests := []struct {
		argv    []string
		sub     string
		network bool
	}{
		{[]string{"git", "status"}, "status", false},
		{[]string{"git", "status", "--porcelain"}, "status", false},
		{[]string{"git", "log", "-p"}, "log", false},
		{[]string{"git", "--no-pager", "log", "--oneline"}, "log", false},
		{[]string{"git", "-P", "--literal-pathspecs", "diff"}, "diff", false},
		{[]string{"git", "commit", "-m", "fix; rm -rf /"}, "commit", false},
		// After the subcommand, -c and -C are the subcommand's own options.
		{[]string{"git", "commit", "-c", "HEAD"}, "commit", false},
		{[]string{"git", "commit", "-C", "HEAD"}, "commit", false},
		{[]string{"git", "commit", "-m", "déjà vu — ok"}, "commit", false},
		{[]string{"git", "commit", "-m", "line1\nline2\tend"}, "commit", false},
		{[]string{"git", "restore", "--worktree", "x.txt"}, "restore", false},
		{[]string{"git", "log", "--name-only", "--exclude=refs/x", "--all"}, "log", false},
		{[]string{"git", "log", "--grep=fix"}, "log", false},
		{[]string{"git", "diff", "--no-ext-diff"}, "diff", false},
		{[]string{"git", "show", "HEAD:file.txt"}, "show", false},
		{[]string{"git", "rev-parse", "--show-toplevel"}, "rev-parse", false},
		{[]string{"git", "add", "*.go"}, "add", false},
		{[]string{"git", "init"}, "init", false},
		{[]string{"git", "fetch", "origin"}, "fetch", true},
		// For fetch, -u is --update-head-ok, not --upload-pack (that is clone's -u).
		{[]string{"git", "fetch", "-u", "origin"}, "fetch", true},
		{[]string{"git", "pull"}, "pull", true},
		{[]string{"git", "push", "-u", "origin", "main"}, "push", true},
		{[]string{"git", "remote", "-v"}, "remote", false},
		{[]string{"git", "remote", "add", "origin", "https://example.com/x.git"}, "remote", false},
		{[]string{"git", "remote", "add", "backup", "../backup.git"}, "remote", false},
		{[]string{"git", "remote", "add", "backup", "file:///srv/backup.git"}, "remote", false},
		{[]string{"git", "remote", "add", "-f", "origin", "https://example.com/x.git"}, "remote", true},
		{[]string{"git", "remote", "update"}, "remote", true},
		{[]string{"git", "remote", "prune", "origin"}, "remote", true},
		{[]string{"git", "remote", "show", "origin"}, "remote", true},
		{[]string{"git", "remote", "show", "-n", "origin"}, "remote", false},
		{[]string{"git", "remote", "set-head", "origin", "--auto"}, "remote", true},
		{[]string{"git", "remote", "set-head", "origin", "main"}, "remote", false},
		{[]string{"git", "stash", "list"}, "stash", false},
		{[]string{"git", "tag", "v1"}, "tag", false},
		{[]string{"git", "reset", "HEAD~1"}, "reset", false},
		{[]string{"git", "mv", "a", "b"}, "mv", false},
		{[]string{"git", "rm", "--cached", "a"}, "rm", false},
		{[]string{"git", "branch", "--contains", "HEAD"}, "branch", false},
		{[]string{"git", "diff", "--", "--weird-file-name"}, "diff", false},
		{[]string{"git", "ls-files", "-z"}, "ls-files", false},
		{[]string{"git", "ls-tree", "-r", "HEAD"}, "ls-tree", false},
		{[]string{"git", "cat-file", "-p", "HEAD"}, "cat-file", false},
		{[]string{"git", "blame", "x.go"}, "blame", false},
		{[]string{"git", "describe", "--tags"}, "describe", false},
		{[]string{"git", "shortlog", "-sn"}, "shortlog", false},
		{[]string{"git", "grep", "-n", "TODO", "--", "src"}, "grep", false},
		{[]string{"git", "grep", "--cached", "KEY"}, "grep", false},
		{[]string{"git", "rev-list", "--count", "HEAD"}, "rev-list", false},
		{[]string{"git", "merge-base", "main", "HEAD"}, "merge-base", false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			got, err := CheckGit(tt.argv)
			if err != nil || got.Subcommand != tt.sub || got.Network != tt.network || got.Note == "" {
				t.Errorf("CheckGit(%q) = %+v, %v, want subcommand %q, network %v and a note", tt.argv, got, err, tt.sub, tt.network)
			}
		})
	}
}

func TestCheckGitRefuses(t *testing.T) {
	tests := []struct {
		argv    []string
		message string
	}{
		{nil, "empty"},
		{[]string{"git"}, "no subcommand"},
		{[]string{"git", "--no-pager"}, "no subcommand"},
		{[]string{"gitx", "status"}, `runs "gitx"`},
		{[]string{"/usr/bin/git", "status"}, "not git"},
		{[]string{"git", "-c", "core.sshCommand=evil", "fetch"}, "sets configuration"},
		{[]string{"git", "-ccore.sshCommand=evil", "fetch"}, "sets configuration"},
		{[]string{"git", "-C", "/etc", "status"}, "changes the directory"},
		{[]string{"git", "-C/etc", "status"}, "changes the directory"},
		{[]string{"git", "--git-dir=/x", "status"}, "another repository"},
		{[]string{"git", "--git-dir", "/x", "status"}, "another repository"},
		{[]string{"git", "status", "--git-dir=/x"}, "another repository"},
		{[]string{"git", "rev-parse", "--git-dir"}, "another repository"},
		{[]string{"git", "--work-tree=/", "status"}, "another working tree"},
		{[]string{"git", "--exec-path=/tmp", "log"}, "its own programs"},
		{[]string{"git", "--namespace=x", "log"}, "another set of refs"},
		{[]string{"git", "--config-env=core.pager=X", "log"}, "sets configuration"},
		{[]string{"git", "status", "--config"}, "abbreviates --config-env"},
		{[]string{"git", "fetch", "--upload-pack=touch /tmp/x"}, "runs here"},
		{[]string{"git", "fetch", "--upload-pack", "evil", "origin"}, "runs here"},
		{[]string{"git", "fetch", "--upload-p=evil", "."}, "abbreviates --upload-pack"},
		{[]string{"git", "pull", "--upl=evil"}, "abbreviates --upload-pack"},
		{[]string{"git", "push", "--receive-pack=x"}, "runs here"},
		{[]string{"git", "push", "--rece=x"}, "abbreviates --receive-pack"},
		{[]string{"git", "push", "--exec=x"}, "runs here"},
		{[]string{"git", "push", "--exe=x"}, "abbreviates --exec"},
		{[]string{"git", "commit", "-m", "--exec"}, "runs here"},
		{[]string{"git", "fetch", "ext::sh"}, "transport::address"},
		{[]string{"git", "fetch", "ext::sh -c evil"}, "transport::address"},
		{[]string{"git", "remote", "add", "x", "ext::sh -c evil"}, "transport::address"},
		{[]string{"git", "remote", "set-url", "origin", "fd::3"}, "transport::address"},
		{[]string{"git", "push", "--repo=ext::sh"}, "transport::address"},
		{[]string{"git", "config", "user.name", "x"}, "never run"},
		{[]string{"git", "--no-pager", "config", "--list"}, "never run"},
		{[]string{"git", "clone", "x"}, `"clone" is not one of the allowed subcommands`},
		{[]string{"git", "submodule", "update"}, "not one of the allowed"},
		{[]string{"git", "archive", "HEAD"}, "not one of the allowed"},
		{[]string{"git", "diff", "--ext-diff"}, "external diff"},
		{[]string{"git", "log", "--ext-d"}, "abbreviates --ext-diff"},
		{[]string{"git", "init", "--template=/tmp/hooks"}, "copies hooks"},
		{[]string{"git", "init", "--temp=/tmp/hooks"}, "abbreviates --template"},
		{[]string{"git", "init", "--separate-git-dir=/tmp/x"}, "outside the working tree"},
		{[]string{"git", "-p", "status"}, "pager"},
		{[]string{"git", "--paginate", "status"}, "pager"},
		{[]string{"git", "--bare", "status"}, "repository itself"},
		{[]string{"git", "--no-replace-objects", "show", "HEAD"}, "past the sandbox's masks"},
		{[]string{"git", "--help"}, "allowed there"},
		{[]string{"git", "--version"}, "allowed there"},
		{[]string{"git", "\u0455tatus"}, "not one of the allowed"}, // Cyrillic dze, a lookalike s
		{[]string{"git", "status\u200b"}, "invisible character U+200B"},
		{[]string{"git", "fetch", "\u2014upload-pack=x"}, "looks like"},
		{[]string{"git", "fetch", "\u2212\u2212upload-pack=x"}, "looks like"},
		{[]string{"git", "commit", "-m", "\u202eevil"}, "invisible character U+202E"},
		{[]string{"git", "commit", "-m", "a\x1b[2Jb"}, "invisible character U+001B"},
		{[]string{"git", "log", "\xff"}, "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			got, err := CheckGit(tt.argv)
			if !errors.Is(err, ErrGitRefused) || !strings.Contains(err.Error(), tt.message) {
				t.Errorf("CheckGit(%q) = %+v, %v, want an error wrapping %v that says %q", tt.argv, got, err, ErrGitRefused, tt.message)
			}
		})
	}
}

func TestCheckGitNote(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"git", "status"}, "shows the state of the working tree"},
		{[]string{"git", "fetch", "origin"}, "over the network"},
		{[]string{"git", "commit", "-m", "x"}, "hooks run"},
		{[]string{"git", "commit", "--amend", "--no-edit"}, "rewrites the last commit"},
		{[]string{"git", "reset", "--hard", "HEAD~1"}, "discards uncommitted changes (--hard)"},
		{[]string{"git", "checkout", "-f", "main"}, "discards uncommitted changes"},
		{[]string{"git", "switch", "--discard-changes", "main"}, "discards uncommitted changes"},
		{[]string{"git", "push", "--force", "origin", "main"}, "overwrite the remote's history"},
		{[]string{"git", "push", "--force-with-lease=main", "origin"}, "overwrite the remote's history"},
		{[]string{"git", "push", "origin", "+main"}, "overwrite the remote's history"},
		{[]string{"git", "push", "--delete", "origin", "old"}, "deletes remote refs"},
		{[]string{"git", "push", "--mirror", "backup"}, "mirror every ref"},
		{[]string{"git", "branch", "-D", "old"}, "deletes a branch"},
		{[]string{"git", "tag", "-d", "v1"}, "deletes a tag"},
		{[]string{"git", "stash", "drop"}, "throws away stashed changes"},
		{[]string{"git", "remote", "rm", "origin"}, "forgets a remote"},
		{[]string{"git", "cat-file", "--batch-all-objects", "--batch"}, "turns the sandbox's masks off"},
		{[]string{"git", "cat-file", "--batch-command", "--batch-all"}, "turns the sandbox's masks off"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			got, err := CheckGit(tt.argv)
			if err != nil || !strings.Contains(got.Note, tt.want) {
				t.Errorf("CheckGit(%q) = %+v, %v, want a note containing %q", tt.argv, got, err, tt.want)
			}
		})
	}
	// A plain command carries no warning it does not deserve.
	if got, _ := CheckGit([]string{"git", "log", "--oneline"}); got.Note != "reads history" {
		t.Errorf("CheckGit(git log --oneline).Note = %q, want %q", got.Note, "reads history")
	}
}

func TestParseGit(t *testing.T) {
	tests := []struct {
		command string
		want    []string
	}{
		{"status --short", []string{"git", "status", "--short"}},
		{"git status --short", []string{"git", "status", "--short"}},
		{`commit -m "fix; rm -rf /"`, []string{"git", "commit", "-m", "fix; rm -rf /"}},
		{`git commit -m 'it''s done'`, []string{"git", "commit", "-m", "its done"}},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			got, verdict, err := ParseGit(tt.command)
			if err != nil || !slices.Equal(got, tt.want) || verdict.Subcommand != tt.want[1] {
				t.Errorf("ParseGit(%q) = %q, %+v, %v, want %q", tt.command, got, verdict, err, tt.want)
			}
		})
	}
}

func TestParseGitRefuses(t *testing.T) {
	tests := []struct {
		command  string
		wantAlso error // besides ErrGitRefused
	}{
		{"status; rm -rf /", ErrNotPlainArgs},
		{"log | sh", ErrNotPlainArgs},
		{"fetch --upload-pack='touch /tmp/x' origin", nil},
		{"", nil},
		{"git", nil},
		{"gitx status", nil},
		{"git git status", nil},
		{"-c core.pager=evil log", nil},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			got, verdict, err := ParseGit(tt.command)
			if !errors.Is(err, ErrGitRefused) || (tt.wantAlso != nil && !errors.Is(err, tt.wantAlso)) {
				t.Errorf("ParseGit(%q) = %q, %+v, %v, want an error wrapping %v and %v", tt.command, got, verdict, err, ErrGitRefused, tt.wantAlso)
			}
		})
	}
}

// FuzzParseGit checks that no command makes the splitter or the checker
// panic, that what SplitArgs returns survives quoting and splitting again,
// and that an allowed command keeps its promises.
func FuzzParseGit(f *testing.F) {
	for _, seed := range []string{
		"status", `commit -m "a; b"`, "fetch --upload-pack=x", "-c a=b log", `a\ b 'c' "d\"e"`,
		"log | sh", "\"unterminated", "ext::sh", "status\u200b", "push --rece=x", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, command string) {
		if args, err := SplitArgs(command); err == nil {
			quoted := make([]string, len(args))
			for i, arg := range args {
				quoted[i] = "'" + strings.ReplaceAll(arg, "'", `'\''`) + "'"
			}
			again, err := SplitArgs(strings.Join(quoted, " "))
			if err != nil || !slices.Equal(again, args) {
				t.Fatalf("SplitArgs(%q) = %q, but quoted and split again = %q, %v", command, args, again, err)
			}
		}
		argv, verdict, err := ParseGit(command)
		if err != nil {
			return
		}
		if argv[0] != "git" || gitSubcommands.get()[verdict.Subcommand] == "" || verdict.Subcommand == "config" {
			t.Fatalf("ParseGit(%q) = %q, %+v, which the allowlist does not allow", command, argv, verdict)
		}
		for _, arg := range argv {
			if strings.HasPrefix(arg, "--upload-pack") || strings.HasPrefix(arg, "--receive-pack") || strings.HasPrefix(arg, "ext::") {
				t.Fatalf("ParseGit(%q) = %q, allowing %q", command, argv, arg)
			}
		}
	})
}
