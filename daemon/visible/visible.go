package visible

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text makes s safe to show as a multi-line text: newlines and tabs stay;
// every other character that a terminal or chat client would not show as
// itself is replaced by a visible escape (see the package doc). A text
// with nothing to escape is returned as it is.
func Text(s string) string {
	return show(s, true)
}

// Line is [Text] for one line: newline, carriage return and tab are
// escaped too (\n, \r, \t), so the result is one line and a tab cannot
// pass for spaces.
func Line(s string) string {
	return show(s, false)
}

// hidden reports whether the valid rune r would not be shown as itself:
// it is not graphic (controls, format characters, the line and paragraph
// separators, private use, unassigned) or it is graphic but drawn as
// nothing (the other default-ignorable code points and the variation
// selectors).
func hidden(r rune) bool {
	if r < utf8.RuneSelf {
		// Most of what is shown is ASCII, so skip the table lookups.
		return r < 0x20 || r == 0x7f
	}
	return !unicode.IsGraphic(r) || unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// invalid reports whether the rune and width that utf8.DecodeRuneInString
// returned stand for a byte that is not valid UTF-8, rather than for a
// real U+FFFD in the input.
func invalid(r rune, n int) bool {
	return r == utf8.RuneError && n == 1
}

// show is Text when multiline, else Line.
func show(s string, multiline bool) string {
	escaped := func(r rune, n int) bool {
		if multiline && (r == '\n' || r == '\t') {
			return false
		}
		return invalid(r, n) || hidden(r)
	}
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if escaped(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case !escaped(r, n):
			b.WriteString(s[i : i+n])
		case invalid(r, n):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, "<U+%04X>", r)
		}
		i += n
	}
	return b.String()
}

// Quote returns one word (a path, an argument) as a POSIX shell word that
// reads unambiguously: unquoted when it is only safe characters, else
// single-quoted, else (when it holds control, invisible or bidi
// characters, non-ASCII spaces, or invalid UTF-8) bash ANSI-C quoting
// $'...' with those characters as \n, \t, \x1b, \u202e, \U000e0041 and
// invalid bytes as \xff. A shell reads the result back as s exactly,
// except that a NUL cuts a $'...' word short there, as no argv can hold
// a NUL anyway.
func Quote(s string) string {
	switch {
	case s == "":
		return "''"
	case strings.IndexFunc(s, unsafeInWord) < 0:
		return s
	case !needsEscapes(s):
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case invalid(r, n):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		// Every escape has its full number of digits, so a hex digit
		// after it is not read as part of it.
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff && (hidden(r) || blank(r)):
			fmt.Fprintf(&b, `\u%04x`, r)
		case hidden(r) || blank(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	b.WriteByte('\'')
	return b.String()
}

// unsafeInWord reports whether r may not stand unquoted in a shell word: safe
// are the ASCII letters and digits and the punctuation no shell gives a
// meaning to inside a word. Paths and flags such as
// "./cmd/shelldon", "--format=%H" and "user@host:dir" stay unquoted.
func unsafeInWord(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return false
	}
	return !strings.ContainsRune("_-./,:+=@%", r)
}

// blank reports whether r is a non-ASCII rune that looks like a space.
// Text keeps it, as it is shown as the space it is; in a word it would
// read as the ASCII space between words, so Quote escapes it.
func blank(r rune) bool {
	return r > 0x7f && (unicode.Is(unicode.Zs, r) || r == '\u2800')
}

// needsEscapes reports whether single quotes cannot show s: it holds an
// invalid byte or a rune that is hidden or blank.
func needsEscapes(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if invalid(r, n) || hidden(r) || blank(r) {
			return true
		}
		i += n
	}
	return false
}

// Argv is the command line argv as one line of [Quote]d words separated
// by single spaces, which a shell parses back into argv. The first word
// is also quoted when the shell would read it, unquoted, as something
// other than a command name: a reserved word such as "if" or "time", a
// declaration such as "export", or an assignment such as "A=b".
func Argv(argv []string) string {
	words := make([]string, len(argv))
	for i, arg := range argv {
		words[i] = Quote(arg)
		if i == 0 && words[i] == arg && notACommand(arg) {
			// Safe characters hold no quote, so wrapping is quoting.
			words[i] = "'" + arg + "'"
		}
	}
	return strings.Join(words, " ")
}

// shellWords are the words bash and mvdan.cc/sh read specially in a
// command's first place: bash's reserved words (compgen -k, without
// those that hold an unsafe character and are quoted anyway) and the
// builtins whose arguments are parsed as assignments.
var shellWords = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true,
	"case": true, "esac": true, "for": true, "select": true, "while": true,
	"until": true, "do": true, "done": true, "in": true, "function": true,
	"time": true, "coproc": true,
	"declare": true, "typeset": true, "local": true, "export": true,
	"readonly": true, "nameref": true, "let": true,
}

// notACommand reports whether the safe word w, first on a command line,
// would not be read as the command's name.
func notACommand(w string) bool {
	if shellWords[w] {
		return true
	}
	// An assignment is a name, then = or +=.
	name, _, ok := strings.Cut(w, "=")
	if !ok {
		return false
	}
	name = strings.TrimSuffix(name, "+")
	if name == "" || '0' <= name[0] && name[0] <= '9' {
		return false
	}
	for _, c := range name {
		if c != '_' && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
