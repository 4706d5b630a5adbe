package policy

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// shellFuzzSeeds add to the case files' commands the shapes the fuzzer
// should start from.
var shellFuzzSeeds = []string{
	`l\s -la`, "l's'", `"ls" x`, "ls # rm -rf x", "ls \\\n -la", "ls 2>&1 >/dev/null",
	"echo {a,b}", "ls .*", "find . -name '*.py' -exec rm {} +", "sed -n '/[/]/p' x",
	"sed 's/a/b/w out' x", "uniq a b", "tail -5f x", "git branch --list 'x*'",
	"git log --format=%GS", "pytest -p no:x @args", "sort -uo out x", "cat <<EOF\n$(id)\nEOF",
	"env X=1 sh -c 'rm x'", "ls\u200b", "ls\x00; rm x", "ls\r\nrm x", "X=1 ls", "$x ls",
}

// FuzzClassify checks that Classify never panics, that a note is one
// short line, and that a command called Safe holds nothing the rules
// refuse, as seen by a walk of its own over the syntax tree: every
// simple command starts with a plain word on the list, and there are no
// expansions, assignments, compound commands or redirects other than
// those to /dev/null or between stdout and stderr.
func FuzzClassify(f *testing.F) {
	for _, tc := range shellCases(f) {
		f.Add(tc.command)
	}
	for _, seed := range shellFuzzSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, command string) {
		got := Classify(command, shellWorkspace)
		if !got.Safe {
			if got.Note == "" || len(got.Note) > shellNoteLimit || strings.ContainsAny(got.Note, "\n\r") || !utf8.ValidString(got.Note) {
				t.Fatalf("Classify(%q) note = %q, want one line of valid UTF-8, at most %d bytes", command, got.Note, shellNoteLimit)
			}
			return
		}
		if got.Note != "" || len(got.Reasons) != 0 {
			t.Fatalf("Classify(%q) is safe with note %q and reasons %q", command, got.Note, got.Reasons)
		}
		if strings.ContainsFunc(command, shellHidden) {
			t.Fatalf("Classify(%q) is safe though it holds a hidden character", command)
		}
		file, err := syntax.NewParser().Parse(strings.NewReader(command), "")
		if err != nil {
			t.Fatalf("Classify(%q) is safe though it does not parse: %v", command, err)
		}
		if why := shellFuzzUnsafe(file); why != "" {
			t.Fatalf("Classify(%q) is safe, but %s", command, why)
		}
	})
}

// shellFuzzUnsafe walks a syntax tree and says what in it should not be
// in a safe command, or "".
func shellFuzzUnsafe(file *syntax.File) string {
	why := ""
	syntax.Walk(file, func(node syntax.Node) bool {
		if why != "" {
			return false
		}
		switch n := node.(type) {
		case *syntax.File, *syntax.Word, *syntax.Lit, *syntax.SglQuoted, *syntax.DblQuoted, nil:
			if q, ok := n.(*syntax.SglQuoted); ok && q.Dollar {
				why = "it holds $'…'"
			}
			if q, ok := n.(*syntax.DblQuoted); ok && q.Dollar {
				why = `it holds $"…"`
			}
		case *syntax.Stmt:
			if n.Negated || n.Background || n.Coprocess || n.Disown {
				why = "a statement is negated or in the background"
			}
		case *syntax.BinaryCmd:
			if n.Op != syntax.AndStmt && n.Op != syntax.OrStmt && n.Op != syntax.Pipe {
				why = "commands are joined by " + n.Op.String()
			}
		case *syntax.Redirect:
			why = shellFuzzRedirect(n)
		case *syntax.ParamExp:
			if !shellExitStatus(n) {
				why = "it expands a parameter other than $?"
			}
		case *syntax.CallExpr:
			if len(n.Assigns) > 0 {
				why = "it assigns a variable"
			} else if name, ok := shellFuzzLiteral(n.Args[0]); !ok || !shellFuzzListed(name, n.Args[1:]) {
				why = "a command word is not on the list: " + name
			}
		default:
			why = fmt.Sprintf("it holds a %T", n)
		}
		return why == ""
	})
	return why
}

// shellFuzzListed reports whether name with args runs a listed command:
// python only as python -m pytest or python --version.
func shellFuzzListed(name string, args []*syntax.Word) bool {
	if name == "python" || name == "python3" {
		if len(args) == 1 {
			flag, ok := shellFuzzLiteral(args[0])
			return ok && (flag == "--version" || flag == "-V" || flag == "-VV")
		}
		if len(args) < 2 {
			return false
		}
		flag, ok1 := shellFuzzLiteral(args[0])
		module, ok2 := shellFuzzLiteral(args[1])
		return ok1 && ok2 && flag == "-m" && module == "pytest"
	}
	for _, c := range shellSafeCommands.get() {
		if c.name == name {
			return true
		}
	}
	return false
}

// shellFuzzRedirect says what is wrong with a redirect in a safe command,
// or "".
func shellFuzzRedirect(r *syntax.Redirect) string {
	fd := ""
	if r.N != nil {
		fd = r.N.Value
	}
	target, ok := shellFuzzLiteral(r.Word)
	std := fd == "" || fd == "1" || fd == "2"
	switch {
	case !ok || !std:
		return "a redirect is not plain"
	case r.Op == syntax.DplOut && (target == "1" || target == "2"):
		return ""
	case (r.Op == syntax.RdrOut || r.Op == syntax.AppOut || r.Op == syntax.RdrClob) && target == "/dev/null":
		return ""
	case r.Op == syntax.RdrIn && fd == "" && shellFuzzPlainPath(target):
		return ""
	}
	return "it redirects with " + r.Op.String() + " " + target
}

// shellFuzzPlainPath reports whether a redirect may read from target: a
// path inside the workspace, with no glob, named like no credential.
func shellFuzzPlainPath(target string) bool {
	if _, denied := Denied(target); denied || strings.ContainsAny(target, "*?[{") || strings.Contains(target, "..") {
		return false
	}
	return target == "/dev/null" || target != "" && target[0] != '/' && target[0] != '~'
}

// shellFuzzLiteral resolves a word the shell would pass unchanged but for
// quotes, as quote removal does; ok is false for any expansion.
func shellFuzzLiteral(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			escaped := false
			for _, r := range p.Value {
				if r == '\\' && !escaped {
					escaped = true
					continue
				}
				escaped = false
				b.WriteRune(r)
			}
			if escaped {
				b.WriteByte('\\')
			}
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
				b.WriteString(strings.NewReplacer(`\\`, `\`, `\"`, `"`, `\$`, `$`, "\\`", "`").Replace(lit.Value))
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

func TestShellFuzzOracle(t *testing.T) {
	tests := []struct {
		command string
		unsafe  bool
	}{
		{"ls -la | wc -l && echo ok; true", false},
		{`l\s 2>&1 >/dev/null`, false},
		{"python -m pytest -q", false},
		{"python3 --version", false},
		{"python3 --version x.py", true},
		{"rm x", true},
		{"python x.py", true},
		{"ls > out", true},
		{"sort < names.txt", false},
		{"sort < /etc/passwd", true},
		{"sort < .env", true},
		{"ls 2>&3", true},
		{"echo $x", true},
		{"echo $?", false},
		{"echo ${?:-x}", true},
		{"echo $'x'", true},
		{"X=1 ls", true},
		{"(ls)", true},
		{"ls &", true},
		{"ls |& cat", true},
		{"l\\s\\ x", true},
	}
	for _, tt := range tests {
		file, err := syntax.NewParser().Parse(strings.NewReader(tt.command), "")
		if err != nil {
			t.Fatalf("parse %q: %v", tt.command, err)
		}
		if why := shellFuzzUnsafe(file); (why != "") != tt.unsafe {
			t.Errorf("shellFuzzUnsafe(%q) = %q, want unsafe=%v", tt.command, why, tt.unsafe)
		}
	}
}
