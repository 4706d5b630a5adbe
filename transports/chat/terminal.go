package chat

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"shelldon/daemon/visible"
)

// A terminal's own line editing (its canonical mode) holds at most 4,095
// characters a line and drops the rest without a word, and it lets what
// the chat prints land in the middle of what the owner is typing. So on
// a real terminal the chat edits the line itself: the terminal passes
// every key through (signals such as Ctrl-C stay the terminal's), the
// chat echoes what is typed, and whatever it prints goes above the
// prompt, which it then draws again with the line as typed so far.
// Input that is not a terminal (a pipe, a file) is read as lines, with
// the same bound.

// terminal is the owner's side of the chat: the screen the chat prints on
// and the line the owner is typing.
type terminal struct {
	out io.Writer
	// fd is the terminal's descriptor, for its width; editing says the
	// chat edits the line and echoes it (a terminal in its raw mode).
	fd      int
	editing bool
	saved   *unix.Termios // the mode to give the terminal back
	ctl     syscall.RawConn

	prompt string
	// over says the owner's input has ended: no prompt is shown again.
	over bool
	// shown says the prompt, and when editing the line after it, is on
	// the screen; cols is how many columns they take there.
	shown bool
	cols  int
	// draft is the reply being written, shown above the prompt while
	// editing (drafted says in how many rows) and drawn again with it.
	draft   string
	drafted int

	// line is what is typed, as typed; it goes to core as it is shown
	// (visible.Line), and size is how long that is.
	line    []byte
	size    int
	dropped int    // bytes typed on this line beyond maxMessage
	partial []byte // the start of a character split between two reads
	escape  escapeState
	seq     []byte          // the escape sequence being typed, from its ESC
	echo    strings.Builder // what is typed, to echo at the end of a read
}

// typed is one line the owner entered, with how many bytes of it were
// beyond what a message may hold and so dropped.
type typed struct {
	text    string
	dropped int
}

// escapeState tracks an escape sequence being typed: a key's (the arrow
// keys, function keys), which the editor passes over, or any other, which
// is the owner's text.
type escapeState int

const (
	noEscape escapeState = iota
	afterEscape
	inCSI // ESC [ … final byte
	inSS3 // ESC O and one byte
)

// newTerminal prepares in and out for the chat: when both are the same
// kind of thing as a terminal, it puts the terminal into raw mode, keeping
// its signals; restore gives its mode back.
func newTerminal(in io.Reader, out io.Writer) (*terminal, error) {
	t := &terminal{out: out, prompt: promptIdle}
	inConn, okIn := rawConn(in)
	_, okOut := rawConn(out)
	if !okIn || !okOut || !isTerminal(inConn) {
		return t, nil
	}
	saved, fd, err := changeMode(inConn, func(raw *unix.Termios) {
		// No line editing, no echo, no literal-next (Ctrl-V) of the
		// terminal's own; signals (Ctrl-C, Ctrl-Z) stay.
		raw.Lflag &^= unix.ICANON | unix.ECHO | unix.ECHONL | unix.IEXTEN
		raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	})
	t.fd = fd
	if err != nil {
		return nil, fmt.Errorf("put the terminal in raw mode: %w", err)
	}
	t.ctl, t.saved, t.editing = inConn, saved, true
	return t, nil
}

// rawConn is the descriptor behind r or w, when it is a file.
func rawConn(f any) (syscall.RawConn, bool) {
	sc, ok := f.(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	if !ok {
		return nil, false
	}
	c, err := sc.SyscallConn()
	return c, err == nil
}

// isTerminal reports whether c is a terminal.
func isTerminal(c syscall.RawConn) bool {
	return control(c, func(fd int) error {
		_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		return err
	}) == nil
}

// control runs do on c's descriptor, leaving the file as it is (in Go's
// poller where it was, so that closing it still ends a read).
func control(c syscall.RawConn, do func(fd int) error) error {
	var doErr error
	if err := c.Control(func(fd uintptr) { doErr = do(int(fd)) }); err != nil {
		return err
	}
	return doErr
}

// restore gives the terminal back its own line editing and echo; the
// chat reads whole lines from then on. Calling it again does nothing.
func (t *terminal) restore() {
	if !t.editing {
		return
	}
	// The prompt goes while the chat still knows where it is; what is
	// typed from now on is the terminal's to echo, after the next one.
	t.write(t.clear())
	t.line, t.size, t.dropped = t.line[:0], 0, 0
	t.editing = false
	control(t.ctl, func(fd int) error { return unix.IoctlSetTermios(fd, unix.TCSETS, t.saved) })
}

// width is how many columns the terminal has.
func (t *terminal) width() int {
	var cols int
	control(t.ctl, func(fd int) error {
		ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
		if err == nil {
			cols = int(ws.Col)
		}
		return err
	})
	if cols <= 0 {
		return 80
	}
	return cols
}

func (t *terminal) write(s string) {
	// A terminal that cannot be written to leaves the owner nothing to
	// tell; the chat goes on for when it can again.
	io.WriteString(t.out, s)
}

// say prints text (lines, without a final newline) above the prompt,
// which it draws again after it, with the line being typed.
func (t *terminal) say(text string) {
	t.write(t.clear() + text + "\n")
	t.showPrompt()
}

// end prints the chat's last words, with no prompt after them.
func (t *terminal) end(text string) {
	t.write(t.clear() + text + "\n")
}

// clear takes the prompt and the line being typed off the screen, or,
// where they cannot be taken back, moves past them; it returns what to
// write for that.
func (t *terminal) clear() string {
	if !t.shown {
		return ""
	}
	t.shown = false
	if !t.editing {
		return "\n"
	}
	// The cursor is after the last column used; with the line wrapped
	// over several rows, go up to the prompt's row first, and past the
	// draft above it.
	up := max(t.cols-1, 0)/t.width() + t.drafted
	t.drafted = 0
	if up > 0 {
		return fmt.Sprintf("\r\x1b[%dA\x1b[J", up)
	}
	return "\r\x1b[J"
}

// setPrompt changes the prompt, drawing it again at once when editing.
func (t *terminal) setPrompt(p string) {
	if p == t.prompt {
		return
	}
	t.prompt = p
	if t.shown && t.editing {
		t.redraw()
	}
}

// inputOver takes the prompt away for good: nothing more is read.
func (t *terminal) inputOver() {
	t.over = true
	t.write(t.clear())
}

// showPrompt draws the prompt, and the line typed so far, unless they
// are on the screen already or the input is over.
func (t *terminal) showPrompt() {
	if t.shown || t.over {
		return
	}
	s := t.prompt
	if t.editing {
		s += visible.Line(string(t.line))
	}
	t.cols = utf8.RuneCountInString(s)
	t.shown = true
	if t.editing && t.draft != "" {
		var block string
		block, t.drafted = draftBlock(t.draft, t.width())
		s = block + s
	}
	t.write(s)
}

// setDraft shows text, a reply being written, above the prompt in place
// of the draft shown before; "" takes it away. Only a terminal the chat
// edits can take a draft back, so elsewhere (a pipe) none is shown: the
// reply comes whole, as ever.
func (t *terminal) setDraft(text string) {
	if !t.editing || text == t.draft {
		return
	}
	t.draft = text
	if t.shown {
		t.redraw()
	}
}

// maxDraftRows bounds the rows a draft takes above the prompt: the
// chat takes its rows back by moving up, which reaches no row that has
// scrolled off the screen. A longer draft shows its end.
const maxDraftRows = 8

// draftPrefix marks a reply being written, where a reply says
// "shelldon: ".
const draftPrefix = "shelldon… "

// draftBlock is a draft as the rows above the prompt show it, each line
// visible and lined up as a reply's, at most maxDraftRows rows of width
// columns (the end of it); and how many rows that is.
func draftBlock(draft string, width int) (block string, rows int) {
	lines := strings.Split(draftPrefix+indent(visible.Text(draft)), "\n")
	var kept []string
	for i := len(lines) - 1; i >= 0 && rows < maxDraftRows; i-- {
		line := []rune(lines[i])
		n := max(1, (len(line)+width-1)/width)
		if rows+n > maxDraftRows {
			n = maxDraftRows - rows
			line = append([]rune("…"), line[len(line)-(n*width-1):]...)
		}
		kept = append(kept, string(line))
		rows += n
	}
	slices.Reverse(kept)
	return strings.Join(kept, "\n") + "\n", rows
}

// redraw draws the prompt and the line again, after an edit.
func (t *terminal) redraw() {
	t.write(t.clear())
	t.showPrompt()
}

// feed takes what the owner typed and returns the lines it ended; eof
// says the owner ended the input (Ctrl-D on an empty line, when
// editing). The sequences of keys the editor does not use (arrows, F1)
// are dropped whole; every other character, a control or an escape
// sequence too, is the owner's text: it is echoed, and goes to core, as
// the chat shows any text: visibly (\x1b]0;title\x07), never half-eaten.
func (t *terminal) feed(keys []byte) (lines []typed, eof bool) {
	defer t.flush()
	for _, c := range keys {
		if t.escape != noEscape && t.passOver(c) {
			continue
		}
		if c >= utf8.RuneSelf {
			t.partial = append(t.partial, c)
			for len(t.partial) > 0 && utf8.FullRune(t.partial) {
				r, n := utf8.DecodeRune(t.partial)
				if r != utf8.RuneError || n > 1 {
					t.insert(t.partial[:n])
				}
				t.partial = t.partial[n:]
			}
			continue
		}
		t.partial = t.partial[:0] // a character cut short is no character
		switch c {
		case '\r', '\n':
			t.flush()
			if t.editing {
				t.showPrompt()
				t.write("\n")
			}
			lines = append(lines, typed{text: visible.Line(string(t.line)), dropped: t.dropped})
			t.line, t.size, t.dropped, t.shown = t.line[:0], 0, 0, false
		case 0x7f, '\b': // backspace: the last character
			_, n := utf8.DecodeLastRune(t.line)
			t.edit(t.line[:len(t.line)-n])
		case 0x15: // Ctrl-U: the whole line
			t.dropped = 0
			t.edit(t.line[:0])
		case 0x17: // Ctrl-W: the last word
			words := strings.TrimRight(string(t.line), " \t")
			t.edit(t.line[:strings.LastIndexAny(words, " \t")+1])
		case 0x04: // Ctrl-D: the end, on an empty line
			if t.editing && len(t.line) == 0 {
				return lines, true
			}
		case 0x1b:
			t.escape, t.seq = afterEscape, append(t.seq[:0], c)
		default:
			t.insert([]byte{c})
		}
	}
	return lines, false
}

// keyFinals are the final bytes of the CSI sequences keys send: the
// arrows, Home and End, F1 to F4, Shift-Tab, and Insert, Delete, Page Up
// and the other keys of ESC [ N ~.
const keyFinals = "ABCDFHPQRSZ~"

// passOver follows an escape sequence to its end and reports whether it
// took c. A key's sequence (an arrow, a function key) is dropped whole;
// any other is the owner's text, inserted as typed, and the byte that
// showed it is none of a key's (c, if not taken) is the editor's again.
func (t *terminal) passOver(c byte) bool {
	switch {
	case t.escape == afterEscape && c == '[':
		t.escape, t.seq = inCSI, append(t.seq, c)
		return true
	case t.escape == afterEscape && c == 'O':
		t.escape, t.seq = inSS3, append(t.seq, c)
		return true
	case t.escape == inCSI && c >= 0x20 && c < 0x40:
		// a parameter or an intermediate byte: the sequence goes on
		t.seq = append(t.seq, c)
		return true
	case t.escape == inCSI && c >= 0x40 && c <= 0x7e:
		t.escape = noEscape
		if !strings.ContainsRune(keyFinals, rune(c)) {
			t.insertAll(append(t.seq, c))
		}
		return true
	case t.escape == inSS3 && c >= 0x40 && c <= 0x7e:
		t.escape = noEscape // F1 to F4, the keypad
		return true
	}
	t.escape = noEscape
	t.insertAll(t.seq)
	return false
}

// insertAll inserts each byte of an escape sequence, all ASCII.
func (t *terminal) insertAll(seq []byte) {
	for i := range seq {
		t.insert(seq[i : i+1])
	}
}

// insert adds one character to the line and echoes it, unless the line
// is full.
func (t *terminal) insert(char []byte) {
	shown := visible.Line(string(char))
	if t.size+len(shown) > maxMessage {
		t.dropped += len(char)
		return
	}
	t.size += len(shown)
	if !t.editing {
		t.line = append(t.line, char...)
		return
	}
	if !t.shown {
		t.flush()
		t.showPrompt()
	}
	t.line = append(t.line, char...)
	t.cols += utf8.RuneCountInString(shown)
	t.echo.WriteString(shown)
}

// flush writes what is echoed so far.
func (t *terminal) flush() {
	if t.echo.Len() > 0 {
		t.write(t.echo.String())
		t.echo.Reset()
	}
}

// edit replaces the line with a shorter one and shows it.
func (t *terminal) edit(line []byte) {
	if len(line) == len(t.line) {
		return
	}
	t.line, t.size = line, len(visible.Line(string(line)))
	if t.editing {
		t.flush()
		t.redraw()
	}
}

// WithoutEcho runs read with the terminal behind in not echoing what is
// typed, keeping its line editing, and gives the echo back after: a
// secret typed at a prompt (`shelldon setup`'s token and key) is not left
// on the screen. Where in is no terminal, read runs as it is.
func WithoutEcho(in io.Reader, read func() error) error {
	conn, ok := rawConn(in)
	if !ok || !isTerminal(conn) {
		return read()
	}
	saved, _, err := changeMode(conn, func(quiet *unix.Termios) {
		quiet.Lflag &^= unix.ECHO
		quiet.Lflag |= unix.ECHONL // Enter still ends the line on the screen
	})
	if err != nil {
		return fmt.Errorf("turn the terminal's echo off: %w", err)
	}
	defer control(conn, func(fd int) error { return unix.IoctlSetTermios(fd, unix.TCSETS, saved) })
	return read()
}

// changeMode applies change to the mode of the terminal behind conn, and
// returns the mode it had and the terminal's descriptor.
func changeMode(conn syscall.RawConn, change func(*unix.Termios)) (saved *unix.Termios, fd int, err error) {
	err = control(conn, func(d int) error {
		var err error
		if saved, err = unix.IoctlGetTermios(d, unix.TCGETS); err != nil {
			return err
		}
		mode := *saved
		change(&mode)
		fd = d
		return unix.IoctlSetTermios(d, unix.TCSETS, &mode)
	})
	return saved, fd, err
}
