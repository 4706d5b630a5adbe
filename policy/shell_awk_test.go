package policy

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"shelldon/testhost"
)

func TestShellAwkProgram(t *testing.T) {
	tests := []struct {
		program string
		ok      bool
	}{
		// strings, regular expressions and comments are not code
		{`/foo\|bar/`, true},
		{`/foo|bar/ { print $1 }`, true},
		{`$0 ~ "a|b"`, true},
		{`{ print "system(\"id\") > x" }`, true},
		{`/a>b/ { n++ } END { print n }`, true},
		{`/x\/ { print > "y" } /`, true},
		{"{ print } # | sh > x", true},
		{`{ mysystem = 1; getlines = 2; print mysystem, getlines }`, true},
		// a > outside print, or inside parentheses, compares
		{`{ if ($2 > 10) print $1 }`, true},
		{`{ print ($1 > 2) }`, true},
		{`{ printf("%s %d", $1, $2 > 3) }`, true},
		{`$2 >= 5 { n++ }; END { print n }`, true},
		{`{ x = $1 > 3; print x }`, true},
		{"{ print $1 }\n$2 > 3 { n++ }", true},
		// division, and ++ and -- after an operand
		{`{ total += $2 / 2; a[i] / 3; (1 + 2) / 4; x++ / 5; "a" / 6 } END { print total / NR }`, true},
		{`{ print length($0) / 2 }`, true},
		{"{ s = $1 \\\n  \"|\" }", true},
		{`BEGIN { print ENVIRON["HOME"] }`, true},
		// what runs, writes or reads another file
		{`{ print > "out" }`, false},
		{`{ print $1 >> "log" }`, false},
		{`{ print $1, $2 > "x" ".txt" }`, false},
		{`{ printf "%s", $1 > "x" }`, false},
		{`{ printf("%s", $1) > "x" }`, false},
		{`{ if (x) print $1 > "f" }`, false},
		{`{ print a[x > 1] }`, false},
		{`{ print | "sh" }`, false},
		{`{ print |& "cat" }`, false},
		{`BEGIN { system("id") }`, false},
		{`{ "date" | getline d }`, false},
		{`BEGIN { close("x"); fflush() }`, false},
		{`BEGIN { print ARGV[1]; ARGC = 3 }`, false},
		{`BEGIN { SYMTAB["AR" "GV"][1] = "x" }`, false},
		{`BEGIN { f = "system"; @f("id") }`, false},
		{`@include "x"`, false},
		{`BEGIN { awk::system("id") }`, false},
		// a / that awks read differently
		{`{ if (x) /a/ ; print > "x" }`, false},
		{`{ while (x) /re/ }`, false},
		{`{ print length / 2 }`, false},
		{`{ x = case / 2; print > "f"; y = 1 / 1 }`, false},
		// what only looks like a string, a regular expression or a comment
		{`{ a = 4 / 2; print a > "/tmp/x" }`, false},
		{"# \"\n{ print > \"x\" }", false},
		{`/[/] { print > "y" } /`, false},
		{`{ print "\" > "x" }`, false},
		{"{ print \"a\n> x\" }", false},
		{"/a\n/ { print > \"x\" }", false},
		{`{ print } \ | "sh"`, false},
		{"{ print \"é\" }", true},
		{"{ print é }", false},
	}
	for _, tt := range tests {
		what := shellAwkProgram(tt.program)
		if (what == "") != tt.ok {
			t.Errorf("shellAwkProgram(%q) = %q, want ok=%v", tt.program, what, tt.ok)
		}
	}
}

// shellAwkHiding builds programs that try to hide a write or a command
// from the reader: what comes before (a name, a number, a builtin, the
// condition of an if, gawk's case, a field, x++, a ) or ], a line's
// end), then what may open a string, a regular expression, a comment or
// a division, the write, and what may close it. Every write names a file
// relative to the working directory, so a program the reader wrongly
// passes writes only into the test's own directory.
var shellAwkHiding = struct{ before, open, write []string }{
	before: []string{"", "x", "1", "length", "if (x)", "while (x)", "case", "$1", "x++", ")", "a[1]", "(x)", ";", "\n", "print"},
	open:   []string{"", "/", `"`, "#", "\n", "\\", "/ 2;", "[/]", "\\/"},
	write:  []string{`print > "out"`, `print | "cat >ran"`, `"touch ran" | getline`},
}

// TestAwkProgramsTheReaderPassesWriteNothing runs the image's awk (mawk)
// over every program of shellAwkHiding, bare and as an action, that the
// reader passes: none may leave a file behind. (A write behind a # with
// no line's end after it is a comment to every awk, and is not run.)
func TestAwkProgramsTheReaderPassesWriteNothing(t *testing.T) {
	mawk := testhost.Tool(t, "mawk", "mawk")
	unescape := strings.NewReplacer(`\n`, "\n", `\\`, `\`).Replace
	ran, built := 0, 0
	for _, before := range shellAwkHiding.before {
		for _, open := range shellAwkHiding.open {
			for _, write := range shellAwkHiding.write {
				for _, end := range shellAwkHiding.open {
					if open == "#" && end != "\\n" {
						continue
					}
					body := unescape(before + " " + open + " " + write + " " + end)
					for _, p := range []string{body, "{ " + body + " }"} {
						built++
						if shellAwkProgram(p) != "" {
							continue
						}
						ran++
						shellAwkRun(t, mawk, p)
					}
				}
			}
		}
	}
	t.Logf("mawk ran the %d of %d programs the reader passes", ran, built)
}

// shellAwkRun runs awk over program in a directory of its own, and fails
// the test if the program left a file there.
func shellAwkRun(t *testing.T, awk, program string) {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, awk, program)
	cmd.Dir, cmd.Stdin, cmd.Env = dir, strings.NewReader("a b\n1 2\n"), []string{"PATH=/usr/bin:/bin"}
	cmd.Run() // most of these programs are not awk at all
	if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
		t.Errorf("shellAwkProgram(%q) passes it, but %s left %v behind (%v)", program, awk, entries, err)
	}
}
