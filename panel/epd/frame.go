package epd

import (
	"fmt"
	"image"
	"image/color"
)

// The landscape frame the pet renders is the portrait RAM turned on its side.
var (
	frameWidth  = panel.Height // 250
	frameHeight = panel.Width  // 122
	// rowBytes is one RAM row: 122 pixels rounded up to whole bytes.
	rowBytes   = (panel.Width + 7) / 8
	frameBytes = rowBytes * panel.Height
)

// packFrame writes img into dst in the controller's RAM layout: 250 rows of
// 16 bytes, most significant bit leftmost, 1 for paper and 0 for ink, the 6
// bits past the 122nd pixel of each row left as paper.
//
// The landscape image is turned 90° counter-clockwise, as Waveshare's
// getbuffer does with img.rotate(90, expand=True): landscape pixel (x, y)
// lands in RAM row 249-x, column y. So the landscape top edge is the RAM's
// left column and the landscape right edge is RAM row 0. upsideDown turns
// the image by 180° first, for a panel mounted the other way up.
func packFrame(dst []byte, img image.Image, upsideDown bool) error {
	if img == nil {
		return fmt.Errorf("%w: nil image", ErrImageSize)
	}
	b := img.Bounds()
	if b.Dx() != frameWidth || b.Dy() != frameHeight {
		return fmt.Errorf("%w: got %dx%d, want %dx%d", ErrImageSize, b.Dx(), b.Dy(), frameWidth, frameHeight)
	}
	for i := range dst {
		dst[i] = 0xFF
	}
	for y := range frameHeight {
		for x := range frameWidth {
			if !isInk(img.At(b.Min.X+x, b.Min.Y+y)) {
				continue
			}
			row, col := frameWidth-1-x, y
			if upsideDown {
				row, col = x, frameHeight-1-y
			}
			dst[row*rowBytes+col/8] &^= 0x80 >> (col % 8)
		}
	}
	return nil
}

// isInk reports whether c, laid over white paper, is darker than mid-grey.
func isInk(c color.Color) bool {
	if c == nil {
		return false
	}
	r, g, b, a := c.RGBA()
	paper := uint64(0xFFFF - min(a, 0xFFFF))
	// The luma weights of color.GrayModel, in 16 bits; uint64 so that a
	// color breaking the premultiplied rule cannot overflow.
	luma := (19595*(uint64(r)+paper) + 38470*(uint64(g)+paper) + 7471*(uint64(b)+paper) + 1<<15) >> 16
	return luma < 0x8000
}
