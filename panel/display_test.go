package panel_test

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unicode/utf8"

	"shelldon/panel"
	"shelldon/panel/displaytest"
	"shelldon/panel/epd"
	"shelldon/panel/epd/epdtest"
)

// displays are every display the panel can draw on; a new one is a line
// here, and passes the suite before the panel may use it.
var displays = []displaytest.Impl{
	{Name: "png", New: pngTarget},
	{Name: "terminal", New: terminalTarget},
	{Name: "epd", New: epdTarget},
}

func TestDisplays(t *testing.T) { displaytest.Run(t, displays) }

// pngTarget writes the frames to a file in a directory of their own, which
// a fault replaces with a file so that nothing can be made there.
func pngTarget(t *testing.T) displaytest.Target {
	dir := filepath.Join(t.TempDir(), "run")
	path := filepath.Join(dir, "panel.png")
	// The file's bytes count when a new one is in place: the display
	// replaces it whole, so a new inode is a new file.
	var sent int64
	var lastInode uint64
	return displaytest.Target{
		Display: panel.PNGFile{Path: path},
		Shown: func() (image.Image, error) {
			raw, err := os.ReadFile(path)
			if errors.Is(err, os.ErrNotExist) {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			img, err := png.Decode(bytes.NewReader(raw))
			if err != nil {
				return nil, fmt.Errorf("%s holds %d bytes that are no PNG: %w", path, len(raw), err)
			}
			return img, nil
		},
		Sent: func() int64 {
			info, err := os.Stat(path)
			if err != nil {
				return sent
			}
			if inode := info.Sys().(*syscall.Stat_t).Ino; inode != lastInode {
				lastInode = inode
				sent += info.Size()
			}
			return sent
		},
		Fault: func(on bool) {
			if on {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(dir, dir+".away"); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(dir, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err := os.Remove(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(dir+".away", dir); err != nil {
				t.Fatal(err)
			}
		},
	}
}

// terminalTarget draws on a terminal of no bound (a character is 2×2
// pixels, so its screen reads back exactly) that a fault makes fail.
func terminalTarget(t *testing.T) displaytest.Target {
	out := &screen{}
	return displaytest.Target{
		Display: &panel.Terminal{Out: out},
		Shown:   out.shown,
		Sent:    out.sent,
		Fault:   out.fault,
	}
}

// epdTarget drives the e-paper display on a fake Waveshare controller
// that checks the bytes against the reference sequence.
func epdTarget(t *testing.T) displaytest.Target {
	c := epdtest.New()
	d, err := epd.New(c.Port(), c.DC(), c.RST(), c.BUSY())
	if err != nil {
		t.Fatalf("epd.New on the fake controller: %v", err)
	}
	return displaytest.Target{Display: d, Shown: c.Shown, Sent: c.Sent, Fault: c.Fault, Asleep: c.Asleep}
}

// screen is a terminal: it keeps what was written, and fails while
// faulted.
type screen struct {
	mu      sync.Mutex
	written bytes.Buffer
	broken  bool
}

var errTerminalGone = errors.New("the terminal is gone")

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken {
		return 0, errTerminalGone
	}
	return s.written.Write(p)
}

func (s *screen) fault(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.broken = on
}

func (s *screen) sent() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(s.written.Len())
}

// quadrants are the block characters for a 2×2 cell, indexed by
// top-left | top-right<<1 | bottom-left<<2 | bottom-right<<3.
const quadrants = " ▘▝▀▖▌▞▛▗▚▐▜▄▙▟█"

// shown reads the last screen back: after the last clear, lines of block
// characters, each a 2×2 cell of pixels.
func (s *screen) shown() (image.Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	const clear = "\x1b[H\x1b[2J"
	all := s.written.String()
	at := strings.LastIndex(all, clear)
	if at < 0 {
		if all != "" {
			return nil, fmt.Errorf("the terminal shows %q with no clear before it", all)
		}
		return nil, nil
	}
	last, ok := strings.CutSuffix(all[at+len(clear):], "\n")
	if !ok {
		return nil, fmt.Errorf("the last screen does not end its last line: %q", last)
	}
	// The screen's size is the frame's: 2×2 pixels a character.
	lines := strings.Split(last, "\n")
	columns := utf8.RuneCountInString(lines[0])
	for i, line := range lines {
		if n := utf8.RuneCountInString(line); n != columns {
			return nil, fmt.Errorf("line %d of the screen is %d characters, line 0 %d", i, n, columns)
		}
	}
	img := image.NewGray(image.Rect(0, 0, 2*columns, 2*len(lines)))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	cells := []rune(quadrants)
	for line, text := range lines {
		for column, r := range []rune(text) {
			cell := slices.Index(cells, r)
			if cell < 0 {
				return nil, fmt.Errorf("line %d column %d: %q is no block character", line, column, r)
			}
			for bit, p := range [4]image.Point{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
				if cell&(1<<bit) != 0 {
					img.SetGray(2*column+p.X, 2*line+p.Y, color.Gray{})
				}
			}
		}
	}
	return img, nil
}
