package chattest

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Size of the pseudo-terminal's window: wide enough that a prompt and a
// short line never wrap, so tests can compare whole lines.
const (
	Columns = 100
	Rows    = 40
)

// waitLimit bounds every wait, so that a broken program fails its test
// instead of hanging it.
const waitLimit = 20 * time.Second

// maxShown bounds what the screen keeps of the program's output, so a
// program that never stops printing fails its test instead of eating
// the machine's memory.
const maxShown = 4 << 20

// Terminal is one pseudo-terminal pair and the screen of its master side.
type Terminal struct {
	// Slave is the program's side: its standard input, output and error.
	Slave  *os.File
	master *os.File

	mu      sync.Mutex
	screen  screen
	shown   int // bytes of output read so far
	err     error
	changed chan struct{} // signalled on every read, for waits
	closed  chan struct{} // closed once the master side reads no more
}

// New opens a pseudo-terminal of Columns×Rows whose master side is read
// for the test's whole life, and closes both sides at cleanup.
func New(t testing.TB) *Terminal {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	var name string
	err = control(master, func(fd int) error {
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
			return fmt.Errorf("unlock: %w", err)
		}
		n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
		if err != nil {
			return fmt.Errorf("its number: %w", err)
		}
		name = fmt.Sprintf("/dev/pts/%d", n)
		return nil
	})
	if err != nil {
		master.Close()
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	slave, err := os.OpenFile(name, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		t.Fatalf("open the pseudo-terminal's slave %s: %v", name, err)
	}
	err = control(slave, func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: Rows, Col: Columns})
	})
	if err != nil {
		t.Fatalf("size the pseudo-terminal: %v", err)
	}
	term := &Terminal{Slave: slave, master: master, screen: screen{width: Columns, lines: [][]rune{nil}},
		changed: make(chan struct{}, 1), closed: make(chan struct{})}
	go term.read()
	t.Cleanup(func() {
		slave.Close()
		master.Close()
		<-term.closed
	})
	return term
}

// control runs f on f's descriptor without taking the file out of Go's
// poller, so that closing it still ends a read in progress.
func control(f *os.File, do func(fd int) error) error {
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var doErr error
	if err := raw.Control(func(fd uintptr) { doErr = do(int(fd)) }); err != nil {
		return err
	}
	return doErr
}

// read puts everything the program shows on the screen until the master
// side is closed, or every slave descriptor is (a program that exited).
func (term *Terminal) read() {
	defer close(term.closed)
	buf := make([]byte, 32<<10)
	for {
		n, err := term.master.Read(buf)
		term.mu.Lock()
		if term.shown += n; term.shown > maxShown && err == nil {
			err = fmt.Errorf("the program showed more than %d bytes", maxShown)
		}
		if n > 0 {
			term.screen.write(buf[:n])
		}
		if err != nil {
			term.err = err
		}
		term.mu.Unlock()
		select {
		case term.changed <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// Type sends keystrokes, as they are, to the program: "\r" is Enter,
// "\x04" Ctrl-D, "\x03" Ctrl-C, "\x7f" Backspace.
func (term *Terminal) Type(t testing.TB, keys string) {
	t.Helper()
	if _, err := term.master.WriteString(keys); err != nil {
		t.Fatalf("typing %q: %v", Shorten(keys), err)
	}
}

// Line types text and presses Enter.
func (term *Terminal) Line(t testing.TB, text string) {
	t.Helper()
	term.Type(t, text+"\r")
}

// Screen is everything the program has shown, as the terminal shows it:
// one string a row, with the rows that scrolled away above, trailing
// spaces trimmed.
func (term *Terminal) Screen() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.screen.String()
}

// LastLine is the row the cursor is on: where the program's prompt is.
func (term *Terminal) LastLine() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return strings.TrimRight(string(term.screen.lines[term.screen.row]), " ")
}

// Foreign lists the escape sequences and control or invisible characters
// that reached the terminal raw, in the order they came.
func (term *Terminal) Foreign() []string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return append([]string(nil), term.screen.foreign...)
}

// WaitFor waits until the screen shows want, and fails the test if it
// does not within a while.
func (term *Terminal) WaitFor(t testing.TB, want string) {
	t.Helper()
	term.WaitUntil(t, fmt.Sprintf("the screen to show %q", want), func(screen string) bool { return strings.Contains(screen, want) })
}

// WaitUntil waits until ok accepts the screen, and fails the test,
// saying what it waited for, if it does not within a while.
func (term *Terminal) WaitUntil(t testing.TB, what string, ok func(screen string) bool) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		screen := term.Screen()
		if ok(screen) {
			return
		}
		select {
		case <-term.changed:
		case <-term.closed:
			if screen := term.Screen(); !ok(screen) {
				t.Fatalf("the program left the terminal (%v) before %s; it shows:\n%s", term.err, what, lastRows(screen))
			}
			return
		case <-deadline:
			t.Fatalf("waited %v for %s; the screen shows:\n%s", waitLimit, what, lastRows(term.Screen()))
		}
	}
}

// WaitClosed waits until no program holds the slave side any more (the
// test's own Slave closed, and the program exited).
func (term *Terminal) WaitClosed(t testing.TB) {
	t.Helper()
	select {
	case <-term.closed:
	case <-time.After(waitLimit):
		t.Fatalf("the program still holds the terminal after %v; it shows:\n%s", waitLimit, lastRows(term.Screen()))
	}
}

// lastRows is the end of a screen, for a test's message: what a person
// would see in the window.
func lastRows(screen string) string {
	rows := strings.Split(screen, "\n")
	if len(rows) <= Rows {
		return screen
	}
	return fmt.Sprintf("[%d rows above]\n%s", len(rows)-Rows, strings.Join(rows[len(rows)-Rows:], "\n"))
}

// Shorten cuts a long text for a test's message.
func Shorten(s string) string {
	if len(s) <= 80 {
		return s
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:80], len(s))
}
