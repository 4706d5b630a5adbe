package render

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/adler32"
	"hash/crc32"
	"image"
	"image/color"
	"io"
	"math/bits"
	"strings"
)

// Width and Height are the size of the Waveshare 2.13" V4 panel in landscape.
const Width, Height = 250, 122

// stride is the bytes per row of a Frame. The 6 bits past Width at the end
// of each row are always 0, so whole frames compare as byte slices.
const stride = (Width + 7) / 8

// Frame is one 1-bit frame, landscape, rows top to bottom, packed
// MSB-first, 1 = black ink. The zero Frame reads as all white; NewFrame
// makes one that can be drawn on.
type Frame struct {
	pix []byte
}

// blank stands in for the pixels of a zero Frame. Nothing writes to it.
var blank = make([]byte, stride*Height)

// NewFrame returns an all-white frame.
func NewFrame() *Frame {
	return &Frame{pix: make([]byte, stride*Height)}
}

func (f *Frame) pixels() []byte {
	if f.pix == nil {
		return blank
	}
	return f.pix
}

// Bounds is the frame's rectangle, (0,0)-(Width,Height).
func (f *Frame) Bounds() image.Rectangle { return image.Rect(0, 0, Width, Height) }

// ColorModel is gray: a frame holds only black and white.
func (f *Frame) ColorModel() color.Model { return color.GrayModel }

// At is color.Gray{0} for ink and color.Gray{255} for paper, which is also
// what lies outside the frame.
func (f *Frame) At(x, y int) color.Color {
	if f.Black(x, y) {
		return color.Gray{Y: 0}
	}
	return color.Gray{Y: 255}
}

// Black reports whether the pixel at (x, y) is inked; outside the frame it
// is not.
func (f *Frame) Black(x, y int) bool {
	if !(image.Point{X: x, Y: y}).In(f.Bounds()) {
		return false
	}
	return f.pixels()[y*stride+x/8]&(0x80>>(x%8)) != 0
}

// paint sets (x, y) to ink or paper; points outside the frame are ignored.
func (f *Frame) paint(x, y int, ink bool) {
	if !(image.Point{X: x, Y: y}).In(f.Bounds()) {
		return
	}
	if ink {
		f.pix[y*stride+x/8] |= 0x80 >> (x % 8)
	} else {
		f.pix[y*stride+x/8] &^= 0x80 >> (x % 8)
	}
}

// fill paints every pixel of r that lies in the frame.
func (f *Frame) fill(r image.Rectangle, ink bool) {
	r = r.Intersect(f.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			f.paint(x, y, ink)
		}
	}
}

// Equal reports whether g holds the same pixels. A nil g equals nothing.
func (f *Frame) Equal(g *Frame) bool {
	return g != nil && bytes.Equal(f.pixels(), g.pixels())
}

// Changed is the smallest rectangle holding every pixel that differs from
// g: empty when the frames are equal, the whole frame when g is nil (there
// is nothing on the panel to keep). A panel refreshes just this part.
func (f *Frame) Changed(g *Frame) image.Rectangle {
	if g == nil {
		return f.Bounds()
	}
	a, b := f.pixels(), g.pixels()
	changed := image.Rectangle{}
	for y := range Height {
		row := y * stride
		for i := range stride {
			diff := a[row+i] ^ b[row+i]
			if diff == 0 {
				continue
			}
			first := i*8 + bits.LeadingZeros8(diff)
			last := i*8 + 7 - bits.TrailingZeros8(diff)
			changed = changed.Union(image.Rect(first, y, last+1, y+1))
		}
	}
	return changed
}

// EncodePNG writes the frame as a 1-bit grayscale PNG. Its pixels go in
// uncompressed, in a stored deflate block: the whole frame is 4 KB, and
// image/png's compressor cost a fresh 850 KB and most of a millisecond a
// frame to save 3 KB of a file that lives on tmpfs.
func (f *Frame) EncodePNG(w io.Writer) error {
	// The scanlines: filter type 0 (none) before each row, then the row's
	// bits, which PNG's grayscale reads 0 = black, the frame 1 = ink.
	raw := make([]byte, 0, Height*(1+stride))
	pix := f.pixels()
	for y := range Height {
		raw = append(raw, 0)
		for _, b := range pix[y*stride : (y+1)*stride] {
			raw = append(raw, ^b)
		}
	}
	var out bytes.Buffer
	out.Grow(len(raw) + 128)
	out.WriteString("\x89PNG\r\n\x1a\n")
	var header [13]byte
	binary.BigEndian.PutUint32(header[0:], Width)
	binary.BigEndian.PutUint32(header[4:], Height)
	header[8] = 1 // the bit depth; the rest 0: grayscale, deflate, filter method 0, no interlace
	pngChunk(&out, "IHDR", header[:])
	pngChunk(&out, "IDAT", zlibStored(raw))
	pngChunk(&out, "IEND", nil)
	if _, err := w.Write(out.Bytes()); err != nil {
		return fmt.Errorf("encode frame as PNG: %w", err)
	}
	return nil
}

// pngChunk appends one PNG chunk: its length, type, data and the CRC of
// type and data.
func pngChunk(out *bytes.Buffer, kind string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	out.Write(n[:])
	crc := crc32.NewIEEE()
	crc.Write([]byte(kind))
	crc.Write(data)
	out.WriteString(kind)
	out.Write(data)
	binary.BigEndian.PutUint32(n[:], crc.Sum32())
	out.Write(n[:])
}

// zlibStored is data as a zlib stream of one stored (uncompressed)
// deflate block, which holds up to 65,535 bytes: a frame's 4,026.
func zlibStored(data []byte) []byte {
	out := make([]byte, 0, len(data)+11)
	out = append(out, 0x78, 0x01) // deflate, 32 KB window, no dictionary, fastest
	out = append(out, 1)          // the final block, stored
	out = binary.LittleEndian.AppendUint16(out, uint16(len(data)))
	out = binary.LittleEndian.AppendUint16(out, ^uint16(len(data)))
	out = append(out, data...)
	return binary.BigEndian.AppendUint32(out, adler32.Checksum(data))
}

// quadrants are the characters for a 2×2 cell of pixels, indexed by
// top-left | top-right<<1 | bottom-left<<2 | bottom-right<<3.
var quadrants = []rune(" ▘▝▀▖▌▞▛▗▚▐▜▄▙▟█")

// Terminal renders the frame for a terminal at most columns wide and lines
// tall, with the Unicode quadrant blocks: a character is 2×2 dots, a dot
// the s×s pixels at the smallest scale s that fits, inked when any of its
// pixels is, so that thin strokes survive the shrinking. A bound under 1
// is no bound: s = 1 draws every pixel, 125 columns by 61 lines; 80×23
// takes s = 3, 42 columns by 21 lines. Lines are joined with "\n",
// without a final newline.
func (f *Frame) Terminal(columns, lines int) string {
	scale := max(terminalScale(Width, columns), terminalScale(Height, lines))
	dot := 2 * scale // the pixels a character spans, each way
	columns, lines = (Width+dot-1)/dot, (Height+dot-1)/dot
	var b strings.Builder
	b.Grow(lines * (columns*3 + 1))
	for line := range lines {
		if line > 0 {
			b.WriteByte('\n')
		}
		for column := range columns {
			x, y := column*dot, line*dot
			cell := 0
			for bit, p := range [4]image.Point{{x, y}, {x + scale, y}, {x, y + scale}, {x + scale, y + scale}} {
				if f.inked(image.Rect(p.X, p.Y, p.X+scale, p.Y+scale)) {
					cell |= 1 << bit
				}
			}
			b.WriteRune(quadrants[cell])
		}
	}
	return b.String()
}

// terminalScale is the smallest scale at which pixels, two dots to a
// character, fit in chars; chars under 1 fits anything.
func terminalScale(pixels, chars int) int {
	if chars < 1 {
		return 1
	}
	return max(1, (pixels+2*chars-1)/(2*chars))
}

// inked says whether any pixel of r is black.
func (f *Frame) inked(r image.Rectangle) bool {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if f.Black(x, y) {
				return true
			}
		}
	}
	return false
}
