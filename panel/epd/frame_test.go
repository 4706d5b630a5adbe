package epd

import (
	"errors"
	"image"
	"image/color"
	"testing"
)

// The RAM is 250 rows of 16 bytes; these are written out by hand from the
// rotation rule (landscape (x, y) → RAM row 249-x, column y; bit 0x80 is
// the row's leftmost pixel; 1 is paper).
const (
	testRowBytes   = 16
	testRows       = 250
	testFrameBytes = testRowBytes * testRows
)

func whiteRAM() []byte {
	ram := make([]byte, testFrameBytes)
	for i := range ram {
		ram[i] = 0xFF
	}
	return ram
}

func landscape() *image.Gray {
	img := image.NewGray(image.Rect(0, 0, 250, 122))
	for i := range img.Pix {
		img.Pix[i] = 0xFF
	}
	return img
}

// inked returns a white landscape image with the given pixels black.
func inked(points ...image.Point) *image.Gray {
	img := landscape()
	for _, p := range points {
		img.SetGray(p.X, p.Y, color.Gray{})
	}
	return img
}

var corners = []image.Point{{0, 0}, {249, 0}, {0, 121}, {249, 121}}

func cornersRAM() []byte {
	ram := whiteRAM()
	ram[0*testRowBytes+0] = 0x7F   // (249, 0): top right → row 0, column 0
	ram[0*testRowBytes+15] = 0xBF  // (249, 121): bottom right → row 0, column 121
	ram[249*testRowBytes+0] = 0x7F // (0, 0): top left → row 249, column 0
	ram[249*testRowBytes+15] = 0xBF
	return ram
}

func TestPackFrame(t *testing.T) {
	topLine := landscape()
	leftLine := landscape()
	for x := range 250 {
		topLine.SetGray(x, 0, color.Gray{})
	}
	for y := range 122 {
		leftLine.SetGray(0, y, color.Gray{})
	}
	shifted := image.NewGray(image.Rect(-7, 40, 243, 162))
	for i := range shifted.Pix {
		shifted.Pix[i] = 0xFF
	}
	for _, p := range corners {
		shifted.SetGray(p.X-7, p.Y+40, color.Gray{})
	}
	grey := landscape()
	grey.SetGray(249, 0, color.Gray{Y: 0x7F}) // just darker than mid-grey: ink
	grey.SetGray(249, 1, color.Gray{Y: 0x80}) // mid-grey: paper
	rgba := image.NewNRGBA(image.Rect(0, 0, 250, 122))
	for y := range 122 {
		for x := range 250 {
			rgba.SetNRGBA(x, y, color.NRGBA{R: 0xFF, G: 0xFF, B: 0xFF, A: 0xFF})
		}
	}
	rgba.SetNRGBA(249, 0, color.NRGBA{R: 0x10, G: 0x20, B: 0x30, A: 0xFF}) // dark, opaque: ink
	rgba.SetNRGBA(249, 1, color.NRGBA{A: 0x00})                            // black but transparent: paper
	rgba.SetNRGBA(249, 2, color.NRGBA{A: 0x40})                            // faint black over paper: paper
	rgba.SetNRGBA(249, 3, color.NRGBA{R: 0xFF, A: 0xFF})                   // pure red is darker than mid-grey: ink
	paletted := image.NewPaletted(image.Rect(0, 0, 250, 122), color.Palette{color.White, color.Black})
	paletted.SetColorIndex(0, 0, 1)

	tests := []struct {
		name string
		img  image.Image
		want func() []byte
	}{
		{"blank", landscape(), whiteRAM},
		{"corners", inked(corners...), cornersRAM},
		{"corners of an image not at the origin", shifted, cornersRAM},
		{"top edge is the RAM's left column", topLine, func() []byte {
			ram := whiteRAM()
			for row := range testRows {
				ram[row*testRowBytes] = 0x7F
			}
			return ram
		}},
		{"left edge is the RAM's last row", leftLine, func() []byte {
			ram := whiteRAM()
			for i := range 15 {
				ram[249*testRowBytes+i] = 0x00
			}
			ram[249*testRowBytes+15] = 0x3F // pixels 120, 121 ink; the 6 padding bits paper
			return ram
		}},
		{"one pixel into the RAM row", inked(image.Pt(240, 9)), func() []byte {
			ram := whiteRAM()
			ram[9*testRowBytes+1] = 0xBF // row 249-240, column 9: byte 1, bit 0x40
			return ram
		}},
		{"mid-grey threshold", grey, func() []byte {
			ram := whiteRAM()
			ram[0] = 0x7F
			return ram
		}},
		{"colour and transparency", rgba, func() []byte {
			ram := whiteRAM()
			ram[0] = 0x6F // columns 0 and 3
			return ram
		}},
		{"paletted", paletted, func() []byte {
			ram := whiteRAM()
			ram[249*testRowBytes] = 0x7F
			return ram
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := make([]byte, testFrameBytes)
			if err := packFrame(got, tc.img, false); err != nil {
				t.Fatalf("packFrame(%s) = %v", tc.name, err)
			}
			want := tc.want()
			if i := firstDiff(got, want); i < len(want) {
				t.Errorf("packFrame(%s): RAM byte %d (row %d, byte %d) = %#02x, want %#02x",
					tc.name, i, i/testRowBytes, i%testRowBytes, got[i], want[i])
			}
		})
	}
}

// brokenImage returns nil colours, which a careless image type might.
type brokenImage struct{ image.Rectangle }

func (b brokenImage) ColorModel() color.Model { return color.GrayModel }
func (b brokenImage) At(x, y int) color.Color { return nil }

// overbright breaks the premultiplied rule (components above alpha).
type overbright struct{}

func (overbright) RGBA() (r, g, b, a uint32) { return 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0 }

func TestPackFrameBadInput(t *testing.T) {
	tests := []struct {
		name string
		img  image.Image
	}{
		{"nil", nil},
		{"portrait", image.NewGray(image.Rect(0, 0, 122, 250))},
		{"empty", image.NewGray(image.Rectangle{})},
		{"one short", image.NewGray(image.Rect(0, 0, 249, 122))},
		{"huge", brokenImage{image.Rect(0, 0, 1<<30, 1<<30)}},
		{"inverted bounds", brokenImage{image.Rectangle{Min: image.Pt(250, 122)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ram := whiteRAM()
			if err := packFrame(ram, tc.img, false); !errors.Is(err, ErrImageSize) {
				t.Errorf("packFrame(%s) = %v, want ErrImageSize", tc.name, err)
			}
		})
	}
	t.Run("nil colours are paper", func(t *testing.T) {
		ram := make([]byte, testFrameBytes)
		if err := packFrame(ram, brokenImage{image.Rect(0, 0, 250, 122)}, false); err != nil {
			t.Fatalf("packFrame(nil colours) = %v", err)
		}
		if i := firstDiff(ram, whiteRAM()); i < testFrameBytes {
			t.Errorf("packFrame(nil colours): byte %d = %#02x, want 0xff", i, ram[i])
		}
	})
	t.Run("over-bright colour is paper", func(t *testing.T) {
		if isInk(overbright{}) {
			t.Errorf("isInk(overbright) = true, want false")
		}
	})
}

func TestGeometryMatchesPinnedDriver(t *testing.T) {
	if frameWidth != 250 || frameHeight != 122 || rowBytes != testRowBytes || frameBytes != testFrameBytes {
		t.Errorf("geometry from waveshare2in13v4.EPD2in13v4 = %dx%d, %d bytes a row, %d a frame; want 250x122, %d, %d",
			frameWidth, frameHeight, rowBytes, frameBytes, testRowBytes, testFrameBytes)
	}
}

func BenchmarkPackFrame(b *testing.B) {
	img := inked(corners...)
	ram := make([]byte, testFrameBytes)
	for b.Loop() {
		if err := packFrame(ram, img, false); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPackFrameUpsideDown: turned over, each landscape pixel lands where
// the pixel diagonally opposite it would, so the corners swap in pairs
// and a one-pixel mark moves to the opposite corner.
func TestPackFrameUpsideDown(t *testing.T) {
	opposite := func(p image.Point) image.Point { return image.Pt(249-p.X, 121-p.Y) }
	for _, p := range []image.Point{{0, 0}, {249, 0}, {0, 121}, {249, 121}, {240, 9}, {17, 100}} {
		got, want := make([]byte, testFrameBytes), make([]byte, testFrameBytes)
		if err := packFrame(got, inked(p), true); err != nil {
			t.Fatal(err)
		}
		if err := packFrame(want, inked(opposite(p)), false); err != nil {
			t.Fatal(err)
		}
		if i := firstDiff(got, want); i < len(want) {
			t.Errorf("packFrame(ink at %v, upside down): RAM byte %d = %#02x, want %#02x as for ink at %v", p, i, got[i], want[i], opposite(p))
		}
	}
}
