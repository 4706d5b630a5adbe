package panel

import (
	"bytes"
	"fmt"
	"image"
	"io"
	"os"
	"path/filepath"
	"sync"

	"shelldon/atomicfile"
	"shelldon/panel/render"
)

// Display shows frames. Show with partial set may refresh only what
// changed (a display that cannot ignores it), and never costs more than a
// whole frame; a frame it cannot show (a nil image, another size than the
// panel's) is refused with an error. Sleep powers the display down until
// the next Show; Close twice is no fault. panel/displaytest holds every
// display to this.
type Display interface {
	Show(img image.Image, partial bool) error
	Sleep() error
	Close() error
	Name() string
}

// PNGFile is a display that writes each frame to a PNG file, replaced
// atomically, for machines without the e-ink panel (and for looking at
// the face from elsewhere: /run/shelldon/panel.png).
type PNGFile struct {
	Path string
}

// Show implements [Display].
func (p PNGFile) Show(img image.Image, _ bool) error {
	f, ok := img.(*render.Frame)
	if !ok {
		return fmt.Errorf("png display: a %T is not a frame", img)
	}
	var buf bytes.Buffer
	if err := f.EncodePNG(&buf); err != nil {
		return fmt.Errorf("png display: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(p.Path), 0o755); err != nil {
		return fmt.Errorf("png display: %w", err)
	}
	// A picture of the pet, not its state: replaced whole for whoever
	// looks, not flushed to disk at every frame.
	if err := atomicfile.WriteView(p.Path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("png display: %w", err)
	}
	return nil
}

// Sleep implements [Display]: a file needs no power.
func (PNGFile) Sleep() error { return nil }

// Close implements [Display].
func (PNGFile) Close() error { return nil }

// Name implements [Display].
func (p PNGFile) Name() string { return "png " + p.Path }

// Terminal is a display that draws each frame on a terminal with block
// characters: `shelldon panel --preview`.
type Terminal struct {
	mu  sync.Mutex
	Out io.Writer
	// Size is the terminal's columns and lines, asked at each frame so
	// that a resized terminal gets the next one to fit; nil, or a size
	// under 1, is no bound (125 columns by 61 lines).
	Size func() (columns, lines int)
}

// Show implements [Display]: the screen is cleared and the frame drawn.
func (t *Terminal) Show(img image.Image, _ bool) error {
	f, ok := img.(*render.Frame)
	if !ok {
		return fmt.Errorf("terminal display: a %T is not a frame", img)
	}
	columns, lines := 0, 0
	if t.Size != nil {
		columns, lines = t.Size()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// The frame's last line ends with a newline, which takes a line of
	// the terminal's too.
	if lines > 1 {
		lines--
	}
	_, err := fmt.Fprintf(t.Out, "\x1b[H\x1b[2J%s\n", f.Terminal(columns, lines))
	return err
}

// Sleep implements [Display].
func (*Terminal) Sleep() error { return nil }

// Close implements [Display].
func (*Terminal) Close() error { return nil }

// Name implements [Display].
func (*Terminal) Name() string { return "terminal" }
