package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"shelldon/demomodel"
	"shelldon/testhost"
)

// TestPanelPreviewFitsTheTerminal runs `shelldon panel --preview` against a
// live pet as the owner would: in an 80×24 terminal (a real pseudo-terminal
// of that size), piped with $COLUMNS set, and piped with nothing said of
// the size. Each frame fits, so nothing wraps or scrolls off.
func TestPanelPreviewFitsTheTerminal(t *testing.T) {
	p := newPet(t, demomodel.New())
	tests := []struct {
		name          string
		tty           *unix.Winsize // nil: stdout is a pipe
		env           []string
		columns, rows int
	}{
		{"an 80×24 terminal", &unix.Winsize{Col: 80, Row: 24}, []string{"COLUMNS=200", "LINES=100"}, 80, 24},
		{"piped with COLUMNS=60", nil, []string{"COLUMNS=60", "LINES="}, 60, 24},
		{"piped, no size said", nil, []string{"COLUMNS=", "LINES="}, 80, 24},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "panel", "--preview", "--state-dir", p.cfg.StateDir)
			cmd.Env = append(os.Environ(), tt.env...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out := new(syncBuffer)
			if tt.tty != nil {
				master, slave := openPTY(t, tt.tty)
				cmd.Stdout = slave
				go io.Copy(out, master)
			} else {
				cmd.Stdout = out
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			frame := waitFrame(t, out, 15*time.Second)
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			lines := strings.Split(frame, "\n")
			if len(lines) > tt.rows-1 || len(lines) < 10 {
				t.Errorf("the preview is %d lines, want 10 to %d (a %d-line terminal less the cursor's line); stderr:\n%s", len(lines), tt.rows-1, tt.rows, stderr.String())
			}
			for i, line := range lines {
				if n := utf8.RuneCountInString(line); n > tt.columns {
					t.Errorf("preview line %d is %d columns, want at most %d: %q", i, n, tt.columns, line)
					break
				}
			}
		})
	}
}

// openPTY opens a pseudo-terminal of size ws; the test closes both ends.
func openPTY(t *testing.T, ws *unix.Winsize) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		testhost.Missing(t, "a pseudo-terminal (/dev/ptmx): "+err.Error(), "mount devpts")
	}
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("number of the pseudo-terminal: %v", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		testhost.Missing(t, "the pseudo-terminal's other end: "+err.Error(), "mount devpts on /dev/pts")
	}
	t.Cleanup(func() { slave.Close() })
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, ws); err != nil {
		t.Fatalf("size the pseudo-terminal: %v", err)
	}
	return master, slave
}

// clearScreen starts each frame of the preview.
const clearScreen = "\x1b[H\x1b[2J"

// waitFrame waits for the preview's first whole frame in out: the text
// between a screen clear and the newline before the next clear, or the
// end once the output has rested.
func waitFrame(t *testing.T, out *syncBuffer, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	last := ""
	for time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		// A terminal turns "\n" into "\r\n".
		_, after, found := strings.Cut(strings.ReplaceAll(out.String(), "\r", ""), clearScreen)
		if !found {
			continue
		}
		if frame, _, next := strings.Cut(after, clearScreen); next {
			return strings.TrimSuffix(frame, "\n")
		}
		if after == last && strings.HasSuffix(after, "\n") {
			return strings.TrimSuffix(after, "\n")
		}
		last = after
	}
	t.Fatalf("no whole frame within %v; the preview wrote %q", within, out.String())
	return ""
}
