package visible_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"shelldon/daemon/visible"
	"shelldon/testhost"
)

// nastyArgvs are command lines whose words a naive join or quoting would
// get wrong. None holds a NUL: no argv can (execve ends an argument at
// one), and bash and mvdan.cc/sh both cut a $'...' word at \x00, so a NUL
// cannot come back; TestQuote shows how it is escaped.
var nastyArgvs = [][]string{
	{"ls"},
	{"rm", "-rf", "my file", "it's", "a  b", " lead", "trail "},
	{"echo", "$HOME", "${x}", "`id`", "$(id)", "$((1+1))", "*", "?", "[a]", "~", "~root", "{a,b}", "a;b", "a|b", "a&b", ">x", "<x", "#x", "x#", "!x", "(x)", "a=b"},
	{"git", "commit", "-m", "fix\n\nrm -rf /", "--author=x\r\ny"},
	{"printf", "\x1b[2K\rwrites 5 bytes to notes.txt"},
	{"cat", "evil\u202etxt.py", "\u2066x\u2069", "\u200b", "\ufeff"},
	{"", "", ""},
	{"a\tb", "\r", "\x7f", "\x01", "\x1f"},
	{"\xff\xfe", "a\xc3", "\xed\xa0\x80", "\xc0\xaf", "\xe2\x80"},
	{"\u0085", "\u009b", "\u00a0", "\u2028", "\U000e0041", "\u2764\ufe0f", "\U000e0100", "\ue000", "\ufffe", "\u0378", "\u3164", "\u2800"},
	{"café", "日本語", "e\u0301", "\ufffd", "👨\u200d👩"},
	{`\`, `\'`, "'", "''", `"`, `\n`, "$'x'", `\x1b`, `\u202e`, "%s", "%", "%%d"},
	{"it's\n", "'\n'", "\\\n", "\x1bab", "\u202eface", "\u0085beef", "\U000e0041ff"},
	{"-", "--", "--format=%H", "user@host:dir", "./a/b,c+d"},
	{"A=b", "x"}, {"A+=b"}, {"_x=1"}, {"a1=", "b"},
	{"if", "x"}, {"then"}, {"else"}, {"elif"}, {"fi"}, {"case"}, {"esac"}, {"for"}, {"select"},
	{"while"}, {"until"}, {"do"}, {"done"}, {"in"}, {"function", "f"}, {"time", "ls"}, {"coproc", "x"},
	{"declare", "a=b"}, {"typeset"}, {"local", "x"}, {"export", "A=b"}, {"readonly"}, {"nameref", "x"}, {"let", "x=1"},
	{"!"}, {"{"}, {"}"}, {"[["}, {"]]"}, {"(("}, {"x()"},
}

// parseArgv reads line as mvdan.cc/sh reads a bash command line and
// returns its words, expanded: it must be one simple command, no
// assignment or redirect, whose words are only literal text and quotes
// that expand without globbing, each into one field.
func parseArgv(line string) ([]string, error) {
	file, err := syntax.NewParser().Parse(strings.NewReader(line), "")
	if err != nil {
		return nil, err
	}
	if len(file.Stmts) == 0 {
		return nil, nil
	}
	if len(file.Stmts) != 1 {
		return nil, fmt.Errorf("%d statements", len(file.Stmts))
	}
	stmt := file.Stmts[0]
	if stmt.Negated || stmt.Background || stmt.Coprocess || len(stmt.Redirs) != 0 {
		return nil, errors.New("not a plain statement")
	}
	call, ok := stmt.Cmd.(*syntax.CallExpr)
	if !ok {
		return nil, fmt.Errorf("parsed as %T", stmt.Cmd)
	}
	if len(call.Assigns) != 0 {
		return nil, errors.New("parsed with assignments")
	}
	globbed := errors.New("globbed")
	cfg := &expand.Config{ReadDir2: func(string) ([]fs.DirEntry, error) { return nil, globbed }}
	var argv []string
	for _, word := range call.Args {
		for _, part := range word.Parts {
			switch part.(type) {
			case *syntax.Lit, *syntax.SglQuoted:
			default:
				return nil, fmt.Errorf("word %q holds a %T", line[word.Pos().Offset():word.End().Offset()], part)
			}
		}
		fields, err := expand.Fields(cfg, word)
		if err != nil {
			return nil, err
		}
		if len(fields) != 1 {
			return nil, fmt.Errorf("word %q expands to %q", line[word.Pos().Offset():word.End().Offset()], fields)
		}
		argv = append(argv, fields[0])
	}
	return argv, nil
}

// TestArgvParsesBack proves that the shell parser reads Argv's line back
// as the same argv, invalid UTF-8 included (it comes back through \x
// escapes), and that Argv is one line.
func TestArgvParsesBack(t *testing.T) {
	for _, argv := range nastyArgvs {
		line := visible.Argv(argv)
		if strings.ContainsAny(line, "\n\r") {
			t.Errorf("Argv(%q) = %q, want one line", argv, line)
		}
		got, err := parseArgv(line)
		if err != nil || !slices.Equal(got, argv) {
			t.Errorf("Argv(%q) = %q, which parses back as %q, %v", argv, line, got, err)
		}
	}
}

// TestArgvBash checks the same with bash itself, where it is installed:
// bash prints each word it reads from Argv's line, ended by a NUL.
func TestArgvBash(t *testing.T) {
	bash := testhost.Tool(t, "bash", "bash")
	// A word left open to globbing would match the file in dir.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(script string) ([]byte, error) {
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", script)
		cmd.Dir = dir
		// $'\u…' is encoded in the locale's charset; the approval is
		// read as UTF-8, so bash must be too.
		cmd.Env = []string{"LC_ALL=C.UTF-8", "PATH=/usr/bin:/bin"}
		return cmd.Output()
	}
	if out, err := run(`printf %s $'\u00e9'`); err != nil || string(out) != "é" {
		testhost.Missing(t, fmt.Sprintf("bash reading $'\\u00e9' as UTF-8 under LC_ALL=C.UTF-8 (it printed %q, %v)", out, err), "the C.UTF-8 locale comes with Debian's libc-bin; a bash of 4.2 or later")
	}
	for _, argv := range nastyArgvs {
		line := visible.Argv(argv)
		out, err := run(`printf '%s\0' ` + line)
		if err != nil {
			t.Errorf("bash printf %s: %v", line, err)
			continue
		}
		got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		if !bytes.HasSuffix(out, []byte{0}) {
			got = nil
		}
		if !slices.Equal(got, argv) {
			t.Errorf("Argv(%q) = %q, which bash reads as %q", argv, line, got)
		}
	}
}
