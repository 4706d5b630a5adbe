package policy

import "strings"

// shellSedScript reads a sed script the way GNU sed 4.9 compiles it and
// accepts it only when every command selects, prints, substitutes or
// branches: addresses (N, $, N~S, +N, ~N, /re/ and \cREc with I and M),
// !, { }, the commands = d D g G h H l n N p P q Q x y z F, labels with
// :, b, t and T, comments, and s with the flags g p i I m M and a count.
// Anything else is refused with what it does: w and W and s///w write
// files, r and R read files the script names, e and s///e run commands,
// and a, i, c and v, or anything this reader does not follow, are
// refused as unknown. Regular expressions are read as sed reads them,
// including bracket expressions, where the delimiter does not end the
// expression: reading s/[/]/… any other way would let a w hide inside
// what looked like a regular expression.
func shellSedScript(script string) (problem shellClause, ok bool) {
	r := shellSedReader{s: script}
	depth := 0
	for {
		for !r.eof() && (r.peek() == ';' || r.peek() == ' ' || r.peek() == '\t' || r.peek() == '\n') {
			r.i++
		}
		if r.eof() {
			if depth != 0 {
				return shellSedUnread("leaves a { block open"), false
			}
			return shellClause{}, true
		}
		if !r.addresses() {
			return shellSedUnread("has an address this check does not read"), false
		}
		if !r.eof() && r.peek() == '!' {
			r.i++
			r.blanks()
		}
		if r.eof() {
			return shellSedUnread("ends without a command"), false
		}
		cmd := r.next()
		switch cmd {
		case '#':
			for !r.eof() && r.peek() != '\n' {
				r.i++
			}
			continue
		case '{':
			depth++
			continue
		case '}':
			if depth == 0 {
				return shellSedUnread("closes a block it never opened"), false
			}
			depth--
		case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case 'l', 'q', 'Q':
			r.blanks()
			r.digits()
		case ':', 'b', 't', 'T':
			r.blanks()
			start := r.i
			for !r.eof() && shellSedLabelByte(r.peek()) {
				r.i++
			}
			if cmd == ':' && r.i == start || !r.eof() && !strings.ContainsRune(" \t;\n}#", rune(r.peek())) {
				return shellSedUnread("has a label this check does not read"), false
			}
			continue
		case 's':
			if problem, ok := r.substitute(); !ok {
				return problem, false
			}
			continue
		case 'y':
			delim, ok := r.delimiter()
			if !ok || !r.slash(delim, false) || !r.slash(delim, false) {
				return shellSedUnread("has a y command this check does not read"), false
			}
		case 'w', 'W':
			return shellClause{risk: shellDeletes, what: "overwrites a file", how: "sed " + string(cmd)}, false
		case 'r', 'R':
			return shellClause{risk: shellOther, what: "reads a file its script names", how: "sed " + string(cmd)}, false
		case 'e':
			return shellClause{risk: shellRunsCode, what: "runs a command", how: "sed e"}, false
		default:
			return shellClause{risk: shellUnknown, what: "uses a sed command this check does not read", how: "sed " + shellShow(string(cmd))}, false
		}
		if !r.endOfCommand() {
			return shellSedUnread("has text after a command that this check does not read"), false
		}
	}
}

// shellSedUnread is the problem of a script this check does not follow.
func shellSedUnread(what string) shellClause {
	return shellClause{risk: shellUnknown, what: what, how: "sed"}
}

// shellSedLabelByte reports bytes that may appear in a label; sed ends a
// label at a blank, ";", "}", "#" or a line break, and this check accepts
// only plain names.
func shellSedLabelByte(c byte) bool {
	return c == '_' || c == '.' || c == '-' || shellAlnum(string(c))
}

// shellSedReader walks a sed script byte by byte.
type shellSedReader struct {
	s string
	i int
}

func (r *shellSedReader) eof() bool  { return r.i >= len(r.s) }
func (r *shellSedReader) peek() byte { return r.s[r.i] }

func (r *shellSedReader) next() byte {
	c := r.s[r.i]
	r.i++
	return c
}

// blanks skips spaces and tabs.
func (r *shellSedReader) blanks() {
	for !r.eof() && (r.peek() == ' ' || r.peek() == '\t') {
		r.i++
	}
}

// digits skips a number and reports whether there was one.
func (r *shellSedReader) digits() bool {
	start := r.i
	for !r.eof() && '0' <= r.peek() && r.peek() <= '9' {
		r.i++
	}
	return r.i > start
}

// addresses reads the optional addresses before a command.
func (r *shellSedReader) addresses() bool {
	found, ok := r.address()
	if !found || !ok {
		return ok
	}
	r.blanks()
	if !r.eof() && r.peek() == ',' {
		r.i++
		r.blanks()
		if found, ok := r.address(); !found || !ok {
			return false
		}
		r.blanks()
	}
	return true
}

// address reads one address, reporting whether there was one and whether
// it was well formed.
func (r *shellSedReader) address() (found, ok bool) {
	if r.eof() {
		return false, true
	}
	switch c := r.peek(); {
	case c == '/' || c == '\\':
		r.i++
		delim := byte('/')
		if c == '\\' {
			d, ok := r.delimiter()
			if !ok {
				return true, false
			}
			delim = d
		}
		if !r.slash(delim, true) {
			return true, false
		}
		for r.blanks(); !r.eof() && (r.peek() == 'I' || r.peek() == 'M'); r.blanks() {
			r.i++
		}
		return true, true
	case '0' <= c && c <= '9':
		r.digits()
		r.blanks()
		if !r.eof() && r.peek() == '~' {
			r.i++
			r.blanks()
			return true, r.digits()
		}
		return true, true
	case c == '+' || c == '~':
		r.i++
		r.blanks()
		return true, r.digits()
	case c == '$':
		r.i++
		return true, true
	}
	return false, true
}

// delimiter reads the byte that delimits a regular expression: not a
// line break, a backslash or part of a multibyte character.
func (r *shellSedReader) delimiter() (byte, bool) {
	if r.eof() {
		return 0, false
	}
	d := r.next()
	return d, d != '\n' && d != '\\' && d < 0x80
}

// slash reads up to the closing delimiter, as sed's match_slash does: a
// backslash escapes the next byte, a line break ends the script's line
// unterminated, and in a regular expression a bracket expression runs to
// its own end.
func (r *shellSedReader) slash(delim byte, regex bool) bool {
	for !r.eof() {
		c := r.next()
		switch {
		case c == '\n':
			return false
		case c == delim:
			return true
		case c == '\\':
			if r.eof() {
				return false
			}
			r.i++
		case c == '[' && regex:
			if !r.bracket() {
				return false
			}
		}
	}
	return false
}

// bracket reads a bracket expression after its "[", with its character
// classes ([:alpha:]), equivalence classes ([=a=]) and collating symbols
// ([.a.]), up to the closing "]".
func (r *shellSedReader) bracket() bool {
	if !r.eof() && r.peek() == '^' {
		r.i++
	}
	if !r.eof() && r.peek() == ']' {
		r.i++
	}
	// 0: plain; 1: after "["; 2: inside a class opened by "[" and one of
	// ".:="; 3: after that class's closing ".:=".
	state := 0
	var open byte
	for !r.eof() {
		c := r.next()
		switch c {
		case '\n':
			return false
		case '.', ':', '=':
			if state == 1 {
				open, state = c, 2
				continue
			}
			if state == 2 && c == open {
				state = 3
				continue
			}
		case '[':
			if state == 0 {
				state = 1
			}
			continue
		case ']':
			if state == 0 || state == 1 {
				return true
			}
			if state == 3 {
				state = 0
			}
		}
		state &^= 1
	}
	return false
}

// substitute reads an s command after its "s", through its flags and the
// end of the command.
func (r *shellSedReader) substitute() (shellClause, bool) {
	delim, ok := r.delimiter()
	if !ok || !r.slash(delim, true) || !r.slash(delim, false) {
		return shellSedUnread("has an s command this check does not read"), false
	}
	for {
		r.blanks()
		if r.eof() {
			return shellClause{}, true
		}
		switch c := r.peek(); {
		case c == 'g' || c == 'p' || c == 'i' || c == 'I' || c == 'm' || c == 'M':
			r.i++
		case '0' <= c && c <= '9':
			r.digits()
		case c == 'w':
			return shellClause{risk: shellDeletes, what: "overwrites a file", how: "sed s///w"}, false
		case c == 'e':
			return shellClause{risk: shellRunsCode, what: "runs the pattern space as a command", how: "sed s///e"}, false
		case c == ';' || c == '\n':
			r.i++
			return shellClause{}, true
		case c == '}' || c == '#':
			return shellClause{}, true
		default:
			return shellSedUnread("has an s flag this check does not read"), false
		}
	}
}

// endOfCommand reads what may follow a command: blanks, then the end, ";",
// a line break, or a "}" or "#" left for the next round.
func (r *shellSedReader) endOfCommand() bool {
	r.blanks()
	if r.eof() {
		return true
	}
	switch r.peek() {
	case ';', '\n':
		r.i++
		return true
	case '}', '#':
		return true
	}
	return false
}
