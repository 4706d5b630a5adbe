package render

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"
	"unicode/utf8"

	"shelldon/panel/render/rendertest"
)

// frameWith returns a frame with ink at points.
func frameWith(points ...image.Point) *Frame {
	f := NewFrame()
	for _, p := range points {
		f.paint(p.X, p.Y, true)
	}
	return f
}

func TestNewFrameIsWhite(t *testing.T) {
	f := NewFrame()
	if got, want := f.Bounds(), image.Rect(0, 0, Width, Height); got != want {
		t.Fatalf("Bounds() = %v, want %v", got, want)
	}
	for y := range Height {
		for x := range Width {
			if f.Black(x, y) {
				t.Fatalf("NewFrame().Black(%d, %d) = true, want all white", x, y)
			}
		}
	}
	if !f.Equal(&Frame{}) {
		t.Errorf("NewFrame().Equal(zero Frame) = false, want true: the zero Frame is white")
	}
}

func TestBlackAndAt(t *testing.T) {
	f := frameWith(image.Pt(0, 0), image.Pt(Width-1, Height-1), image.Pt(9, 3))
	tests := []struct {
		x, y int
		want bool
	}{
		{0, 0, true},
		{Width - 1, Height - 1, true},
		{9, 3, true},
		{8, 3, false},
		{10, 3, false},
		{-1, 0, false},
		{Width, 0, false},
		{0, Height, false},
	}
	for _, tt := range tests {
		if got := f.Black(tt.x, tt.y); got != tt.want {
			t.Errorf("Black(%d, %d) = %v, want %v", tt.x, tt.y, got, tt.want)
		}
		want := color.Gray{Y: 255}
		if tt.want {
			want = color.Gray{Y: 0}
		}
		if got := f.At(tt.x, tt.y); got != want {
			t.Errorf("At(%d, %d) = %v, want %v", tt.x, tt.y, got, want)
		}
	}
	if got := f.ColorModel(); got != color.GrayModel {
		t.Errorf("ColorModel() = %v, want color.GrayModel", got)
	}
}

func TestPaintOutsideIsIgnored(t *testing.T) {
	f := NewFrame()
	for _, p := range []image.Point{{-1, 0}, {0, -1}, {Width, 0}, {0, Height}, {Width + 7, 3}} {
		f.paint(p.X, p.Y, true)
	}
	if !f.Equal(NewFrame()) {
		t.Errorf("painting outside the frame changed it: %v", f.Changed(NewFrame()))
	}
}

func TestEqual(t *testing.T) {
	a := frameWith(image.Pt(5, 5))
	tests := []struct {
		name string
		b    *Frame
		want bool
	}{
		{"same pixels", frameWith(image.Pt(5, 5)), true},
		{"itself", a, true},
		{"one pixel more", frameWith(image.Pt(5, 5), image.Pt(Width-1, 0)), false},
		{"white", NewFrame(), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := a.Equal(tt.b); got != tt.want {
				t.Errorf("Equal(%s) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

func TestChanged(t *testing.T) {
	base := frameWith(image.Pt(100, 50))
	tests := []struct {
		name  string
		frame *Frame
		other *Frame
		want  image.Rectangle
	}{
		{"equal", frameWith(image.Pt(100, 50)), base, image.Rectangle{}},
		{"nil other is everything", base, nil, image.Rect(0, 0, Width, Height)},
		{"one pixel added", frameWith(image.Pt(100, 50), image.Pt(7, 3)), base, image.Rect(7, 3, 8, 4)},
		{"one pixel removed", NewFrame(), base, image.Rect(100, 50, 101, 51)},
		{"two corners", frameWith(image.Pt(100, 50), image.Pt(0, 0), image.Pt(Width-1, Height-1)), base, image.Rect(0, 0, Width, Height)},
		{"last byte of a row", frameWith(image.Pt(100, 50), image.Pt(Width-1, 10), image.Pt(Width-6, 20)), base, image.Rect(Width-6, 10, Width, 21)},
		{"within one byte", frameWith(image.Pt(100, 50), image.Pt(17, 9), image.Pt(22, 9)), base, image.Rect(17, 9, 23, 10)},
		{"moved pixel", frameWith(image.Pt(103, 52)), base, image.Rect(100, 50, 104, 53)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.frame.Changed(tt.other); got != tt.want {
				t.Errorf("Changed(%s) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

func TestChangedBetweenRenders(t *testing.T) {
	a := Render(Scene{Face: "(^‿^)", Caption: "hello", Status: typicalStatus})
	b := Render(Scene{Face: "(^‿^)", Caption: "goodbye", Status: typicalStatus})
	got := a.Changed(b)
	if got.Empty() || got.Min.Y < captionArea.Min.Y || !got.In(captionArea) {
		t.Errorf("Changed() between captions = %v, want a non-empty part of the caption band %v", got, captionArea)
	}
	for y := range Height {
		for x := range Width {
			if a.Black(x, y) != b.Black(x, y) && !image.Pt(x, y).In(got) {
				t.Fatalf("pixel (%d, %d) differs but lies outside Changed() = %v", x, y, got)
			}
		}
	}
}

func TestEncodePNG(t *testing.T) {
	f := Render(Scene{Face: "(o_O)?", Caption: "a png", Status: typicalStatus})
	var buf bytes.Buffer
	if err := f.EncodePNG(&buf); err != nil {
		t.Fatalf("EncodePNG: %v", err)
	}
	// IHDR's bit depth is byte 24 of the file.
	if depth := buf.Bytes()[24]; depth != 1 {
		t.Errorf("PNG bit depth = %d, want 1", depth)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("decode the encoded frame: %v", err)
	}
	if diff := rendertest.Diff(f, img); diff != 0 {
		t.Errorf("decoded PNG differs from the frame in %d pixels", diff)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, bytes.ErrTooLarge }

func TestEncodePNGReportsWriteErrors(t *testing.T) {
	if err := NewFrame().EncodePNG(failingWriter{}); err == nil {
		t.Errorf("EncodePNG(failing writer) = nil, want an error")
	}
}

func TestTerminal(t *testing.T) {
	// Cell c of the first line gets the 2×2 pattern c: bit 0 top left,
	// bit 1 top right, bit 2 bottom left, bit 3 bottom right.
	f := NewFrame()
	for c := range 16 {
		for bit, p := range []image.Point{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
			if c&(1<<bit) != 0 {
				f.paint(2*c+p.X, p.Y, true)
			}
		}
	}
	// The last column and line hold the frame's last pixels.
	f.paint(Width-1, Height-1, true)

	lines := strings.Split(f.Terminal(0, 0), "\n")
	if len(lines) != 61 {
		t.Fatalf("Terminal(0, 0) has %d lines, want 61", len(lines))
	}
	for i, line := range lines {
		if n := utf8.RuneCountInString(line); n != 125 {
			t.Fatalf("Terminal(0, 0) line %d has %d columns, want 125", i, n)
		}
	}
	if got, want := string([]rune(lines[0])[:16]), " ▘▝▀▖▌▞▛▗▚▐▜▄▙▟█"; got != want {
		t.Errorf("Terminal(0, 0) line 0 starts %q, want %q", got, want)
	}
	if got, want := string([]rune(lines[60])[124]), "▗"; got != want {
		t.Errorf("Terminal(0, 0) last cell = %q, want %q", got, want)
	}
	if got := strings.Trim(lines[30], " "); got != "" {
		t.Errorf("Terminal(0, 0) line 30 = %q, want blank", got)
	}
}

// A terminal smaller than the full 125×61 gets the frame shrunk to fit,
// every dot with ink drawn (a frame of all ink has no blank cell).
func TestTerminalFitsTheSize(t *testing.T) {
	tests := []struct {
		columns, lines        int
		wantColumns, wantLine int
	}{
		{0, 0, 125, 61},
		{125, 61, 125, 61},
		{200, 0, 125, 61},
		{80, 0, 63, 31},
		{80, 23, 42, 21},
		{40, 0, 32, 16},
		{1, 1, 1, 1},
		{-5, 30, 42, 21},
	}
	f := NewFrame()
	for y := range Height {
		for x := range Width {
			f.paint(x, y, true)
		}
	}
	for _, tt := range tests {
		lines := strings.Split(f.Terminal(tt.columns, tt.lines), "\n")
		if len(lines) != tt.wantLine {
			t.Errorf("Terminal(%d, %d) has %d lines, want %d", tt.columns, tt.lines, len(lines), tt.wantLine)
		}
		for i, line := range lines {
			if n := utf8.RuneCountInString(line); n != tt.wantColumns || strings.Contains(line, " ") {
				t.Errorf("Terminal(%d, %d) line %d = %q (%d columns), want %d with no blank", tt.columns, tt.lines, i, line, n, tt.wantColumns)
				break
			}
		}
	}
}
