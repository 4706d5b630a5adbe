package policy

import (
	"strings"
	"testing"
)

func runShell(command string) RuleCall { return RuleCall{Tool: "run_shell", Command: command} }

func gitCall(args string) RuleCall {
	argv, _, err := ParseGit(args)
	if err != nil {
		return RuleCall{Tool: "git", Argv: []string{"git", "refused:" + args}}
	}
	return RuleCall{Tool: "git", Argv: argv}
}

func writeCall(given, resolved string) RuleCall {
	return RuleCall{Tool: "write_file", Path: given, Resolved: resolved}
}

// TestWhatMayBecomeARule: the calls a rule may be stated for, in the
// words the owner reads before granting it.
func TestWhatMayBecomeARule(t *testing.T) {
	for _, tc := range []struct {
		call  RuleCall
		words string
	}{
		{runShell("python3 build.py"), "run_shell of exactly `python3 build.py`"},
		{runShell("python3 'build.py'  --fast"), "run_shell of exactly `python3 build.py --fast`"},
		{runShell("touch hello.txt"), "run_shell of exactly `touch hello.txt`"},
		{runShell("mkdir -p out/site"), "run_shell of exactly `mkdir -p out/site`"},
		{runShell(`python3 build.py "two words"`), "run_shell of exactly `python3 build.py 'two words'`"},
		// writes that replace nothing: cp -n never overwrites, ln without
		// -f fails on a name that exists, chmod changes modes only
		{runShell("cp -n template.md notes.md"), "run_shell of exactly `cp -n template.md notes.md`"},
		{runShell("cp -rn src out"), "run_shell of exactly `cp -rn src out`"},
		{runShell("ln -s notes.md today.md"), "run_shell of exactly `ln -s notes.md today.md`"},
		{runShell("chmod +x run.sh"), "run_shell of exactly `chmod +x run.sh`"},
		{gitCall("commit -m 'fix the parser'"), "git commit -m <any message>"},
		{gitCall("add notes.md src/app.py"), "git of exactly `git add notes.md src/app.py`"},
		{gitCall("status --short"), "git of exactly `git status --short`"},
		{gitCall("log --oneline"), "git of exactly `git log --oneline`"},
		{writeCall("notes/todo.md", "notes/todo.md"), "write_file to `notes/todo.md`"},
		{writeCall("build.py", "build.py"), "write_file to `build.py`"},
	} {
		got, ok := RuleFor(tc.call)
		if !ok || got.Words != tc.words || got.Tool != tc.call.Tool {
			t.Errorf("RuleFor(%+v) = %+v, %v, want the rule %q", tc.call, got, ok, tc.words)
		}
		if !got.Covers(tc.call) {
			t.Errorf("RuleFor(%+v) = %+v, which does not cover the call it came from", tc.call, got)
		}
	}
}

// TestWhatNeverBecomesARule: every "never" — deletes, network, leaving
// the workspace, code the line does not show, credentials, git's
// internals, hooks Python and pytest run by themselves, dot files, globs,
// variables, anything but one plain command — and the tools no rule is
// ever for.
func TestWhatNeverBecomesARule(t *testing.T) {
	for _, call := range []RuleCall{
		// deletes and overwrites
		runShell("rm notes.txt"), runShell("rm -rf build"), runShell("rmdir out"), runShell("unlink a"),
		runShell("mv a.txt b.txt"), runShell("shred x"), runShell("find . -delete"),
		runShell("truncate -s 0 log.txt"), gitCall("rm notes.md"), gitCall("reset --hard"), gitCall("checkout -- a.py"),
		gitCall("restore a.py"), gitCall("clean -fdx"), gitCall("stash"), gitCall("branch -D topic"),
		// what may overwrite a file that exists, which the policy cannot
		// know is absent (issue 28): moving, copying, extracting, syncing,
		// editing in place, compressing in place, patching, through git
		runShell("git mv a.txt b.txt"), runShell("git stash"), runShell("git stash pop"), runShell("git checkout -- a.py"),
		runShell("git branch -D topic"), runShell("nohup git stash"), runShell("git add -A"), runShell("git commit --amend -m x"),
		runShell("sed -i 3d notes.md"), runShell("sed -i s/a/b/ notes.md"), runShell("sed --in-pl s/a/b/ notes.md"),
		runShell("cp x notes.md"), runShell("cp -r src out"), runShell("cp -n -f x notes.md"), runShell("cp -ni x notes.md"),
		runShell("cp -n --remove-destination x notes.md"), runShell("cp -n --update=all x notes.md"), runShell("install -m 644 x notes.md"),
		runShell("rsync -a --delete src/ notes/"), runShell("rsync -a src/ notes/"), runShell("rsync -a --remove-source-files src/ notes/"),
		runShell("tar xf a.tar"), runShell("tar -xzf a.tgz"), runShell("tar --extract --file=a.tar"), runShell("tar cf a.tar src"),
		runShell("unzip a.zip"), runShell("zip -r a.zip src"), runShell("gzip notes.md"), runShell("gunzip a.gz"), runShell("xz -d a.xz"),
		runShell("patch -p1 -i fix.diff"), runShell("ln -sf notes.md today.md"), runShell("ln --force a b"), runShell("ln -b a b"),
		runShell("python3 -m venv venv"), runShell("python3 -m json.tool in.json out.json"), runShell("tree -R"),
		runShell("file -C -m magic"), runShell("pytest --junitxml=report.xml"), runShell("pytest --basetemp=tmp"),
		runShell("sort -o out.txt in.txt"), runShell("timeout 60 cp x notes.md"), runShell("env cp x notes.md"),
		// programs and options this check does not know: it cannot say
		// they delete nothing
		runShell("frobnicate notes.md"), runShell("make"), runShell("cargo clean"), runShell("pip cache purge"),
		runShell("python3 -m zipfile -e a.zip out"), runShell("uniq --frobnicate a.txt"), runShell("xxd -z a.bin"),
		runShell("pytest --frobnicate"), runShell("sed 'v' notes.md"),
		// the network
		runShell("curl https://example.com"), runShell("wget https://example.com/x"), runShell("pip install requests"),
		gitCall("fetch origin"), gitCall("pull"), gitCall("push origin main"),
		{Tool: "http_get", Network: true}, {Tool: "run_shell", Command: "python3 build.py", Network: true},
		// code the command line does not show, other users, the system
		runShell("sh -c 'echo hi'"), runShell("python3 -c 'import os'"), runShell("eval ls"), runShell("sudo make"),
		runShell("xargs touch"), runShell("find . -exec touch {} +"),
		// credentials, git's internals, hooks, dot files
		runShell("touch .env"), runShell("touch id_rsa"), runShell("python3 build.py --key=server.pem"),
		runShell("touch .git/hooks/pre-commit"), runShell("touch sub/.git/config"), runShell("touch conftest.py"),
		runShell("touch sitecustomize.py"), runShell("touch usercustomize.py"), runShell("touch evil.pth"),
		runShell("touch pytest.ini"), runShell("touch tox.ini"), runShell("touch setup.cfg"), runShell("touch pyproject.toml"),
		runShell("touch .bashrc"), gitCall("add .gitmodules"), gitCall("add conftest.py"), gitCall("add .env"),
		writeCall(".git/hooks/pre-commit", ".git/hooks/pre-commit"), writeCall(".git/config", ".git/config"),
		writeCall("sub/.git/hooks/post-checkout", "sub/.git/hooks/post-checkout"), writeCall("conftest.py", "conftest.py"),
		writeCall("tests/conftest.py", "tests/conftest.py"), writeCall("lib/sitecustomize.py", "lib/sitecustomize.py"),
		writeCall("site-packages/x.pth", "site-packages/x.pth"), writeCall("pytest.ini", "pytest.ini"),
		writeCall("pyproject.toml", "pyproject.toml"), writeCall(".env", ".env"), writeCall("keys/server.key", "keys/server.key"),
		writeCall(".bashrc", ".bashrc"),
		// globs and variables
		runShell("touch *.txt"), runShell("touch a?.txt"), runShell("touch {a,b}.txt"), runShell("touch $HOME/x"),
		runShell("touch ${X}"), runShell("touch $(date)"), runShell("touch `date`"), runShell("touch ~/x"),
		runShell("touch $'a\\nb'"), gitCall("add *.py"), writeCall("*.txt", "*.txt"), writeCall("$HOME", "$HOME"),
		// anything but one plain command
		runShell("touch a; touch b"), runShell("touch a && touch b"), runShell("touch a | cat"), runShell("touch a > b"),
		runShell("FOO=1 touch a"), runShell("touch a &"), runShell("touch a\ntouch b"), runShell("touch a # note"),
		runShell("(touch a)"), runShell("touch a;"), runShell("touch 'a\u202eb'"), runShell("touch a\\ b"), runShell(""),
		// leaving the workspace
		runShell("touch /tmp/x"), runShell("touch ../x"), runShell("python3 /usr/bin/build.py"),
		writeCall("../outside.txt", "../outside.txt"), writeCall("/etc/passwd", "/etc/passwd"),
		// another path to the file than the one given: .., ./, a link
		writeCall("notes/../notes.md", "notes.md"), writeCall("./notes.md", "notes.md"), writeCall("notes//a.md", "notes/a.md"),
		writeCall("notes.md", ".git/hooks/pre-commit"), writeCall("notes.md", "other.md"),
		// read-only commands ask for no rule, and git's other verbs get none
		runShell("ls"), runShell("pytest -q"), gitCall("init"), gitCall("commit --amend -m x"), gitCall("commit -m x -a"),
		gitCall("log --output=x"), gitCall("tag v1"), gitCall("remote add o https://example.com/r.git"),
		// tools no rule is ever for
		{Tool: "edit_file", Path: "a.md", Resolved: "a.md"}, {Tool: "greet"},
	} {
		if got, ok := RuleFor(call); ok {
			t.Errorf("RuleFor(%+v) = %+v, want no rule", call, got)
		}
	}
}

// TestARuleLetsNoVariantThrough is the attack after the owner granted
// one narrow rule: every variant the model could try to smuggle through
// it asks again, and the call itself, written another harmless way, does
// not.
func TestARuleLetsNoVariantThrough(t *testing.T) {
	build, _ := RuleFor(runShell("python3 build.py"))
	commit, _ := RuleFor(gitCall("commit -m 'first'"))
	notes, _ := RuleFor(writeCall("notes.md", "notes.md"))
	for _, tc := range []struct {
		rule Rule
		call RuleCall
		want bool
	}{
		{build, runShell("python3 build.py"), true},
		{build, runShell("python3  'build.py'"), true},
		{build, runShell("python3 build.py; rm -rf ~"), false},
		{build, runShell("python3 build.py && rm -rf ~"), false},
		{build, runShell("python3 build.py > .git/hooks/x"), false},
		{build, runShell("python3 build.py 2>.git/hooks/x"), false},
		{build, runShell("FOO=1 python3 build.py"), false},
		{build, runShell("PYTHONPATH=evil python3 build.py"), false},
		{build, runShell("python3 build.py --extra"), false},
		{build, runShell("python3 build.py\nrm -rf ~"), false},
		{build, runShell("python3 build.py | sh"), false},
		{build, runShell("python3 ./build.py"), false},
		{build, runShell("python3 ../build.py"), false},
		{build, runShell("python3 build.py &"), false},
		{build, runShell("python3 $(echo build.py)"), false},
		{build, runShell("python3 build.py #\\\nrm -rf ~"), false},
		{build, RuleCall{Tool: "run_shell", Command: "python3 build.py", Network: true}, false},
		{build, RuleCall{Tool: "git", Argv: []string{"git", "python3", "build.py"}}, false},
		{commit, gitCall("commit -m 'anything at all'"), true},
		{commit, gitCall("commit -m x --amend"), false},
		{commit, gitCall("commit -am x"), false},
		{commit, gitCall("commit -m x -- .git/config"), false},
		{commit, gitCall("push -m x"), false},
		{commit, runShell("git commit -m x"), false},
		{notes, writeCall("notes.md", "notes.md"), true},
		{notes, writeCall("./notes.md", "notes.md"), false},
		{notes, writeCall("sub/../notes.md", "notes.md"), false},
		{notes, writeCall("notes.md", ".git/hooks/pre-commit"), false},
		{notes, writeCall("link.md", "notes.md"), false},
		{notes, writeCall("notes.md.bak", "notes.md.bak"), false},
		{notes, RuleCall{Tool: "edit_file", Path: "notes.md", Resolved: "notes.md"}, false},
	} {
		if got := tc.rule.Covers(tc.call); got != tc.want {
			t.Errorf("Rule(%s).Covers(%+v) = %v, want %v", tc.rule.Words, tc.call, got, tc.want)
		}
	}
}

// TestNoRuleForWhatDeletes holds RuleFor and the note to one decision
// over every command the case files and this package's rule tests name:
// a command the policy says deletes or overwrites (or may) never becomes
// a rule, and one that becomes a rule has a note that names nothing
// deleted, overwritten, replaced or moved.
func TestNoRuleForWhatDeletes(t *testing.T) {
	commands := []string{"rsync -a --delete src/ notes/", "git mv a.txt b.txt", "git stash", "sed -i 3d notes.md",
		"cp x notes.md", "tar xf a.tar", "touch a", "mkdir -p out", "cp -n a b", "python3 build.py"}
	for _, tc := range shellCases(t) {
		commands = append(commands, tc.command)
	}
	for _, command := range commands {
		v := Classify(command, "")
		rule, ok := RuleFor(runShell(command))
		if ok && v.MayDelete {
			t.Errorf("RuleFor(%q) = %q, but Classify says it may delete or overwrite (note %q)", command, rule.Words, v.Note)
		}
		if ok && shellNoteDeletes(v.Note) {
			t.Errorf("RuleFor(%q) = %q, but its note says %q", command, rule.Words, v.Note)
		}
		if !v.Safe && shellNoteDeletes(v.Note) && !v.MayDelete {
			t.Errorf("Classify(%q).MayDelete = false, but its note says %q", command, v.Note)
		}
	}
}

// shellNoteDeletes reports whether a note says the command deletes,
// overwrites, replaces or moves something.
func shellNoteDeletes(note string) bool {
	note = strings.ReplaceAll(note, "overwriting nothing", "")
	note = strings.ReplaceAll(note, "--no-replace-objects", "") // git's option, quoted in the note, replaces nothing
	for _, word := range []string{"delet", "overwrit", "replac", "moves files", " over ", "truncat", "discard", "throws away", "rewrit"} {
		if strings.Contains(note, word) {
			return true
		}
	}
	return false
}
