package policy

import (
	"slices"
	"strings"
)

// shellAwkProgram says what in an awk program could run a command, write
// a file or read one not named on the command line, or "" when nothing
// does. It reads the program as awk's lexer does, far enough to tell its
// code from the text of its strings, regular expressions and comments,
// whose |, > and words do nothing (awk '/a|b/', '{ print "system" }').
// In the code it refuses:
//   - the names system, getline, close and fflush (commands and files),
//     ARGV and ARGC (which name the files read), and gawk's SYMTAB,
//     FUNCTAB and PROCINFO (which reach those by a string);
//   - @, gawk's extensions and indirect calls;
//   - a | that is not ||: a pipe to or from a command (and gawk's |&);
//   - a > or >> in a print or printf statement outside parentheses, which
//     sends the output to a file; any other > is a comparison
//     (if ($2 > 10) print, print ($1 > 2)).
//
// Where awks read a / differently — after the ) of if, while or for
// (mawk: a division; gawk: a regular expression may start), after a
// builtin's name (length / 2), after gawk's own keywords (case, which
// mawk takes for a variable) — it does not guess, and refuses; a string
// or a regular expression that does not end on its line is refused too.
// A regular expression ends at its first unescaped /, before any awk
// that reads [/] as a bracket would end it, so that what this reads as
// code is never less than what any awk runs.
func shellAwkProgram(program string) string {
	l := shellAwkLexer{src: program, printDepth: -1}
	return l.read()
}

// shellAwkBefore is what came before the lexer's position, which decides
// what a / is.
type shellAwkBefore int

const (
	awkOperator  shellAwkBefore = iota // the start, an operator, a keyword, a line's end: a / starts a regular expression
	awkOperand                         // a name, a number, a string, a ) or ]: a / divides
	awkAmbiguous                       // awks differ on what a / starts here
	awkCondition                       // if, while or for: the ( that follows opens a condition
)

// shellAwkLexer reads an awk program for shellAwkProgram.
type shellAwkLexer struct {
	src    string
	i      int
	before shellAwkBefore
	// parens holds, for each open (, whether it opens the condition of
	// if, while or for.
	parens []bool
	// printDepth is how many ( were open where the print or printf
	// statement being read started, or -1 outside one.
	printDepth int
}

// shellAwkRefused are the names that run commands, write or read files,
// or reach ARGV by a string.
var shellAwkRefused = []string{"system", "getline", "close", "fflush", "ARGV", "ARGC", "SYMTAB", "FUNCTAB", "PROCINFO"}

// shellAwkKeywords are POSIX awk's keywords (with func and nextfile,
// which gawk and mawk share): after one, a / starts a regular
// expression.
var shellAwkKeywords = []string{"BEGIN", "END", "function", "func", "if", "else", "while", "for", "do", "break",
	"continue", "next", "nextfile", "exit", "return", "delete", "in", "print", "printf"}

// shellAwkUnsure are names after which awks read a / differently: the
// builtins (length may stand without parentheses; mawk then reads a
// regular expression, gawk a division) and gawk's own keywords, which
// mawk takes for variables.
var shellAwkUnsure = []string{"length", "substr", "index", "split", "sub", "gsub", "match", "sprintf", "sin", "cos",
	"atan2", "exp", "log", "sqrt", "int", "rand", "srand", "tolower", "toupper", "gensub", "strftime", "systime",
	"mktime", "asort", "asorti", "patsplit", "and", "or", "xor", "lshift", "rshift", "compl", "strtonum", "isarray",
	"typeof", "mkbool", "switch", "case", "default", "BEGINFILE", "ENDFILE"}

func (l *shellAwkLexer) read() string {
	for l.i < len(l.src) {
		ch := l.src[l.i]
		switch {
		case ch == ' ' || ch == '\t':
			l.i++
		case ch == '\\':
			if !strings.HasPrefix(l.src[l.i:], "\\\n") {
				return "holds a \\ outside a string or a regular expression"
			}
			l.i += 2
		case ch == '\n' || ch == ';' || ch == '}':
			l.endStatement()
			l.i++
		case ch == '#':
			for l.i < len(l.src) && l.src[l.i] != '\n' {
				l.i++
			}
		case ch == '"':
			if !l.skipText('"') {
				return "holds a string that does not end on its line"
			}
			l.before = awkOperand
		case ch == '/':
			if what := l.slash(); what != "" {
				return what
			}
		case shellAwkNameStart(ch):
			if what := l.name(); what != "" {
				return what
			}
		case '0' <= ch && ch <= '9' || ch == '.':
			for l.i < len(l.src) && (shellAwkNameByte(l.src[l.i]) || l.src[l.i] == '.') {
				l.i++
			}
			l.before = awkOperand
		case ch == '(':
			l.parens = append(l.parens, l.before == awkCondition)
			l.before = awkOperator
			l.i++
		case ch == ')':
			condition := len(l.parens) > 0 && l.parens[len(l.parens)-1]
			if len(l.parens) > 0 {
				l.parens = l.parens[:len(l.parens)-1]
			}
			l.before = awkOperand
			if condition {
				l.before = awkAmbiguous
			}
			l.i++
		case ch == ']':
			l.before = awkOperand
			l.i++
		case ch == '|':
			if !strings.HasPrefix(l.src[l.i:], "||") {
				return "pipes to or from a command (|)"
			}
			l.before = awkOperator
			l.i += 2
		case ch == '>':
			if l.printDepth == len(l.parens) {
				return "sends what it prints to a file (>)"
			}
			l.before = awkOperator
			l.i++
		case ch == '@':
			return "uses @"
		case ch == '+' || ch == '-':
			// ++ and -- after an operand leave an operand (x++ / 2).
			if l.i+1 < len(l.src) && l.src[l.i+1] == ch && l.before == awkOperand {
				l.i += 2
				continue
			}
			l.before = awkOperator
			l.i++
		case strings.IndexByte("{[!~=*%^?:,&<$", ch) >= 0:
			l.before = awkOperator
			l.i++
		default:
			return "holds a character this check does not read in awk's code"
		}
	}
	return ""
}

// endStatement ends a print or printf statement at a line's end, a ; or
// a }.
func (l *shellAwkLexer) endStatement() {
	if l.printDepth >= len(l.parens) {
		l.printDepth = -1
	}
	l.before = awkOperator
}

// slash reads a / as a division or the start of a regular expression.
func (l *shellAwkLexer) slash() string {
	switch l.before {
	case awkAmbiguous:
		return "holds a / that awks read differently, as a division or a regular expression"
	case awkOperand:
		l.before = awkOperator
		l.i++
		return ""
	}
	if !l.skipText('/') {
		return "holds a regular expression that does not end on its line"
	}
	l.before = awkOperand
	return ""
}

// skipText moves past a string or a regular expression that starts at
// the lexer's position and ends at the first unescaped end byte, and
// reports whether it ends on its line.
func (l *shellAwkLexer) skipText(end byte) bool {
	for i := l.i + 1; i < len(l.src); i++ {
		switch l.src[i] {
		case '\\':
			i++
		case '\n':
			return false
		case end:
			l.i = i + 1
			return true
		}
	}
	return false
}

// name reads a name: a keyword, a builtin or a variable.
func (l *shellAwkLexer) name() string {
	start := l.i
	for l.i < len(l.src) && shellAwkNameByte(l.src[l.i]) {
		l.i++
	}
	name := l.src[start:l.i]
	switch {
	case slices.Contains(shellAwkRefused, name):
		return "uses " + name
	case name == "print" || name == "printf":
		l.printDepth = len(l.parens)
		l.before = awkOperator
	case name == "if" || name == "while" || name == "for":
		l.before = awkCondition
	case slices.Contains(shellAwkKeywords, name):
		l.before = awkOperator
	case slices.Contains(shellAwkUnsure, name):
		l.before = awkAmbiguous
	default:
		l.before = awkOperand
	}
	return ""
}

func shellAwkNameStart(ch byte) bool {
	return ch == '_' || 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z'
}

func shellAwkNameByte(ch byte) bool { return shellAwkNameStart(ch) || '0' <= ch && ch <= '9' }
