package chattest

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"shelldon/daemon/visible"
)

// screen is a model of a terminal's screen with no height limit: rows
// that would scroll away are kept above. It counts every character as
// one column, as the chat does.
type screen struct {
	lines    [][]rune
	row, col int
	width    int
	// pending is an incomplete UTF-8 sequence or escape sequence, left
	// for the next write.
	pending []byte
	foreign []string
}

// write shows what the program wrote.
func (s *screen) write(p []byte) {
	p = append(s.pending, p...)
	s.pending = nil
	for len(p) > 0 {
		n := s.step(p)
		if n == 0 {
			s.pending = append([]byte(nil), p...)
			return
		}
		p = p[n:]
	}
}

// step shows the first character or sequence of p and returns its
// length, or 0 when p holds only its beginning.
func (s *screen) step(p []byte) int {
	switch c := p[0]; {
	case c == '\r':
		s.col = 0
	case c == '\n':
		s.down()
	case c == '\b':
		s.col = max(0, min(s.col, s.width)-1)
	case c == '\t':
		s.col = min(s.width-1, (s.col/8+1)*8)
	case c == '\a':
	case c == 0x1b:
		return s.escape(p)
	case c < 0x20 || c == 0x7f:
		s.foreign = append(s.foreign, fmt.Sprintf("%q", string(c)))
	default:
		if !utf8.FullRune(p) {
			return 0
		}
		r, n := utf8.DecodeRune(p)
		if shown := string(p[:n]); visible.Line(shown) != shown {
			// A C1 control, a bidi override, an invisible character or
			// a byte that is not UTF-8: the terminal would act on it or
			// hide it.
			s.foreign = append(s.foreign, fmt.Sprintf("%q", shown))
			return n
		}
		s.put(r)
		return n
	}
	return 1
}

// escape acts on the CSI sequences the chat sends (cursor up, erase
// below, erase to the end of the row) and records any other as foreign.
func (s *screen) escape(p []byte) int {
	if len(p) < 2 {
		return 0
	}
	if p[1] != '[' {
		s.foreign = append(s.foreign, fmt.Sprintf("%q", string(p[:2])))
		return 2
	}
	end := 2
	for end < len(p) && (p[end] < 0x40 || p[end] > 0x7e) {
		end++
	}
	if end == len(p) {
		return 0
	}
	params, final := string(p[2:end]), p[end]
	n, err := strconv.Atoi(params)
	if params == "" {
		n, err = 1, nil
	}
	switch {
	case final == 'A' && err == nil:
		s.row = max(0, s.row-n)
	case final == 'J' && (params == "" || params == "0"):
		s.eraseRow()
		s.lines = s.lines[:s.row+1]
	case final == 'K' && (params == "" || params == "0"):
		s.eraseRow()
	default:
		s.foreign = append(s.foreign, fmt.Sprintf("%q", string(p[:end+1])))
	}
	return end + 1
}

func (s *screen) down() {
	s.row++
	for len(s.lines) <= s.row {
		s.lines = append(s.lines, nil)
	}
}

// put writes r at the cursor, wrapping at the right edge.
func (s *screen) put(r rune) {
	if s.col >= s.width {
		s.col = 0
		s.down()
	}
	line := s.lines[s.row]
	for len(line) <= s.col {
		line = append(line, ' ')
	}
	line[s.col] = r
	s.lines[s.row] = line
	s.col++
}

// eraseRow erases the cursor's row from the cursor on.
func (s *screen) eraseRow() {
	if line := s.lines[s.row]; len(line) > s.col {
		s.lines[s.row] = line[:s.col]
	}
}

func (s *screen) String() string {
	rows := make([]string, len(s.lines))
	for i, line := range s.lines {
		rows[i] = strings.TrimRight(string(line), " ")
	}
	return strings.Join(rows, "\n")
}
