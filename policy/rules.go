package policy

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// RuleCall is a RISKY call as core's own check parsed it, for the rules
// the owner may grant: the tool, and the fields of the check that say
// what it runs.
type RuleCall struct {
	Tool string
	// Command is a run_shell call's command line.
	Command string
	// Argv is a git call's argv, "git" first, as [ParseGit] made it.
	Argv []string
	// Path is a write_file call's path as the model gave it, and
	// Resolved the path it resolves to in the jail, links followed,
	// relative to the workspace and slash-separated.
	Path, Resolved string
	// Network says the call reaches the network.
	Network bool
}

// Rule is a standing permission the owner may grant from one call: a
// narrow shape of call that runs without asking from then on. Pattern
// binds the shape; Words say it for the owner.
type Rule struct {
	Tool    string `json:"tool"`
	Pattern string `json:"pattern"`
	Words   string `json:"words"`
}

// RuleFor states the narrowest rule the call c could become, or false
// when it may not become one. The shapes are three:
//
//   - run_shell of exactly one plain command: one simple command of
//     literal words (no ;, |, &&, redirection, assignment, expansion,
//     glob, quoting the shell reads differently, comment or line break),
//     which Classify finds routine (a write inside the workspace that
//     replaces nothing, a workspace script) and of which it can say that
//     it deletes and overwrites nothing ([Verdict.MayDelete]): the rule
//     binds the words themselves; git so run only as the git tool's
//     rules below allow;
//   - git commit -m with any message, and git add, status, diff, log
//     and show of exactly the arguments given;
//   - write_file to one named path, given as it resolves (no link, no
//     "..", no "./"): the one rule that replaces a file's content, that
//     file's, whose path the rule names.
//
// Never a rule: a call that deletes or overwrites, or may (cp, mv, tar
// x, rsync, sed -i, git mv and stash, … the shell policy's effects
// decide, and a program or an option they do not know counts), leaves the workspace,
// reaches the network, runs code the command line does not show (sh -c,
// python -c, eval), names a credential-shaped file, git's internals
// (.git/ at any depth) or a hook Python or pytest runs by itself
// (conftest.py, sitecustomize.py, usercustomize.py, *.pth, pytest.ini,
// tox.ini, setup.cfg, pyproject.toml), a dot file, a glob or a variable;
// http_get, edit_file and everything else. (A pytest run with read-only
// options needs no rule: it runs without asking.) The tool store is out
// of every rule's reach: no call writes there. A call made after reading
// outside content is the caller's to keep from rules: it is not a
// property of the call.
func RuleFor(c RuleCall) (Rule, bool) {
	if c.Network {
		return Rule{}, false
	}
	switch c.Tool {
	case "run_shell":
		return shellRule(c.Command)
	case "git":
		return gitRule(c.Argv)
	case "write_file":
		return writeRule(c.Path, c.Resolved)
	}
	return Rule{}, false
}

// Covers reports whether the later call c is one the rule lets through:
// exactly when the rule RuleFor states for c is r. So every check that
// keeps a call from becoming a rule keeps it from being let through by
// one, and a variant (an extra argument, a redirection, a ; and another
// command, an assignment, another path to the same file) is another
// rule, or none.
func (r Rule) Covers(c RuleCall) bool {
	got, ok := RuleFor(c)
	return ok && got.Tool == r.Tool && got.Pattern == r.Pattern
}

// rulePatternSep joins the words of a pattern: no word holds it.
const rulePatternSep = "\x00"

// shellRule is the exact-command rule of a run_shell command line.
func shellRule(command string) (Rule, bool) {
	words, ok := plainWords(command)
	if !ok {
		return Rule{}, false
	}
	v := Classify(command, "")
	if v.Safe || v.Level != RiskRoutine || v.Network || v.MayDelete {
		return Rule{}, false
	}
	if _, ok := gitRule(words); words[0] == "git" && !ok {
		return Rule{}, false // git through the shell: only what the git tool's rules allow
	}
	for _, w := range words {
		if !ruleWord(w) {
			return Rule{}, false
		}
	}
	return Rule{Tool: "run_shell", Pattern: strings.Join(words, rulePatternSep),
		Words: "run_shell of exactly `" + showWords(words) + "`"}, true
}

// plainWords reads command as one simple command of literal words, or
// says it is not one.
func plainWords(command string) ([]string, bool) {
	if strings.ContainsFunc(command, shellHidden) || strings.ContainsAny(command, "\n#") {
		return nil, false
	}
	parser := shellParsers.Get().(*syntax.Parser)
	file, err := parser.Parse(strings.NewReader(command), "")
	shellParsers.Put(parser)
	if err != nil || len(file.Stmts) != 1 {
		return nil, false
	}
	stmt := file.Stmts[0]
	call, ok := stmt.Cmd.(*syntax.CallExpr)
	if !ok || stmt.Negated || stmt.Background || stmt.Coprocess || stmt.Disown || stmt.Semicolon.IsValid() ||
		len(stmt.Redirs) > 0 || len(call.Assigns) > 0 || len(call.Args) == 0 {
		return nil, false
	}
	words := make([]string, len(call.Args))
	for i, w := range call.Args {
		if words[i], ok = literalWord(w); !ok {
			return nil, false
		}
	}
	return words, true
}

// literalWord is a word the shell passes on as written, quotes removed:
// plain text, '…', or "…" holding no expansion, and nothing in it that a
// shell would expand, glob or escape.
func literalWord(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, inner := range p.Parts {
				lit, ok := inner.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(lit.Value)
			}
		default:
			return "", false
		}
	}
	word := b.String()
	if word == "" || strings.ContainsAny(word, "\\*?[]{}$~`!"+rulePatternSep) {
		return "", false
	}
	return word, true
}

// ruleWord reports whether a word may stand in a rule: no piece of it
// (after "=", or glued to a short option) is absolute or climbs, names
// a credential, git's internals, a hook or a dot file.
func ruleWord(w string) bool {
	ok := true
	shellEachPiece(w, func(piece string) {
		ok = ok && rulePath(piece)
	})
	return ok
}

// rulePath reports whether a path may stand in a rule (see [RuleFor]).
func rulePath(p string) bool {
	if path.IsAbs(p) || strings.HasPrefix(p, "~") {
		return false
	}
	if _, denied := Denied(p); denied {
		return false
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." || strings.HasPrefix(part, ".") && part != "." {
			return false // climbs, or a dot file: .git, .pytest.ini, .bashrc
		}
	}
	switch name := path.Base(p); {
	case name == "tox.ini", name == "setup.cfg", name == "pyproject.toml":
		return false // pytest may read its configuration there
	case pythonHook(FileChange{Path: p}) != "":
		return false
	}
	return true
}

// gitRuleVerbs are the git subcommands an exact rule may name: they
// stage, commit or show, and delete or fetch nothing; the options each
// may take are these, and no other (git log --output writes a file).
var gitRuleVerbs = map[string][]string{
	"add":    nil,
	"status": {"-s", "--short", "-b", "--branch"},
	"diff":   {"--stat", "--cached", "--staged"},
	"log":    {"--oneline", "--stat"},
	"show":   {"--stat"},
}

// gitRule is the rule of a git argv: commit -m with any message, or an
// exact staging or showing command.
func gitRule(argv []string) (Rule, bool) {
	if len(argv) < 2 || argv[0] != "git" {
		return Rule{}, false
	}
	if _, err := CheckGit(argv); err != nil {
		return Rule{}, false
	}
	if len(argv) == 4 && argv[1] == "commit" && argv[2] == "-m" {
		return Rule{Tool: "git", Pattern: "commit -m *", Words: "git commit -m <any message>"}, true
	}
	allowed, ok := gitRuleVerbs[argv[1]]
	if !ok {
		return Rule{}, false
	}
	for _, a := range argv[2:] {
		if _, ok := literalText(a); !ok {
			return Rule{}, false
		}
		if strings.HasPrefix(a, "-") && !slices.Contains(allowed, a) || !strings.HasPrefix(a, "-") && !rulePath(a) {
			return Rule{}, false
		}
	}
	return Rule{Tool: "git", Pattern: strings.Join(argv, rulePatternSep), Words: "git of exactly `" + showWords(argv) + "`"}, true
}

// literalText reports whether s holds nothing a rule should bind: no
// glob, variable, escape, control or invisible character.
func literalText(s string) (string, bool) {
	if s == "" || strings.ContainsFunc(s, shellHidden) || strings.ContainsAny(s, "\n\\*?[]{}$~`"+rulePatternSep) {
		return "", false
	}
	return s, true
}

// writeRule is the rule of a write_file to one named path.
func writeRule(given, resolved string) (Rule, bool) {
	if _, ok := literalText(given); !ok || given != resolved || path.Clean(given) != given || !rulePath(given) {
		return Rule{}, false
	}
	return Rule{Tool: "write_file", Pattern: given, Words: "write_file to `" + given + "`"}, true
}

// showWords writes words for the owner, quoting those a reader would
// split.
func showWords(words []string) string {
	shown := make([]string, len(words))
	for i, w := range words {
		shown[i] = shellShow(w)
		if strings.ContainsAny(w, " \t'\"") {
			shown[i] = "'" + strings.ReplaceAll(shellShow(w), "'", `'\''`) + "'"
		}
	}
	return strings.Join(shown, " ")
}
