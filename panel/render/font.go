package render

import (
	_ "embed"
	"fmt"
	"image"
	"strings"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
)

// fontFile is DejaVu Sans Mono Bold: bold strokes survive thresholding to
// one bit, and it draws every character the face registry accepts. It is
// a string, not a []byte, so its 334 KB stay in the binary's read-only
// data, which the panel lets go of between draws (giveback) and maps
// back by the page as it draws: embedded as a []byte it sat in the
// writable data segment, which a process keeps, and the pages a draw had
// read stayed the panel's for good (380 KB of its PSS idle,
// BENCHMARKS.md). The parser reads it through a strings.Reader, which
// copies only what a lookup reads.
//
//go:embed DejaVuSansMono-Bold.ttf
var fontFile string

// inkThreshold is the antialiased coverage (of 0xffff) from which a pixel
// is inked.
const inkThreshold = 0x8000

// glyph is one character thresholded to 1 bit at one size.
type glyph struct {
	// bounds are the inked pixels' box, relative to the pen on the
	// baseline; empty for a glyph without ink.
	bounds image.Rectangle
	// ink is bounds.Dx()×bounds.Dy() pixels, row by row.
	ink     []bool
	advance int
}

// glyphKey names a cached glyph by the font's glyph index rather than the
// rune, so the cache never holds more than the font's glyphs per size.
type glyphKey struct {
	size  int
	index sfnt.GlyphIndex
}

// maxCachedGlyphs bounds the glyph cache: captions may hold any character,
// and the panel runs for months. When full, the cache starts over.
const maxCachedGlyphs = 2048

// glyphCache rasterizes and keeps glyphs. An opentype face is not safe for
// concurrent use, so the faces live under the same lock as the cache.
type glyphCache struct {
	mu     sync.Mutex
	font   *opentype.Font
	buf    sfnt.Buffer
	faces  map[int]font.Face
	glyphs map[glyphKey]*glyph
}

var (
	cacheOnce sync.Once
	cache     *glyphCache
)

// glyphs returns the process's glyph cache, parsing the embedded font the
// first time.
func glyphs() *glyphCache {
	cacheOnce.Do(func() {
		parsed, err := opentype.ParseReaderAt(strings.NewReader(fontFile))
		if err != nil {
			panic(fmt.Sprintf("render: the embedded DejaVuSansMono-Bold.ttf is corrupt: %v", err))
		}
		cache = &glyphCache{
			font:   parsed,
			faces:  make(map[int]font.Face),
			glyphs: make(map[glyphKey]*glyph),
		}
	})
	return cache
}

// shape returns the glyphs drawing runes at size (pixels per em). A rune
// the font has no glyph for is drawn as U+FFFD.
func (c *glyphCache) shape(size int, runes []rune) []*glyph {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*glyph, len(runes))
	for i, r := range runes {
		out[i] = c.lookup(size, r)
	}
	return out
}

// lookup is shape for one rune; c.mu must be held.
func (c *glyphCache) lookup(size int, r rune) *glyph {
	index, err := c.font.GlyphIndex(&c.buf, r)
	if err != nil || index == 0 {
		r = '\uFFFD'
		index, _ = c.font.GlyphIndex(&c.buf, r)
	}
	key := glyphKey{size: size, index: index}
	if g, ok := c.glyphs[key]; ok {
		return g
	}
	face, ok := c.faces[size]
	if !ok {
		// Full hinting rounds advances and metrics to whole pixels, so
		// every glyph is drawn from a whole-pixel pen and looks the same
		// wherever it lands.
		face, err = opentype.NewFace(c.font, &opentype.FaceOptions{Size: float64(size), DPI: 72, Hinting: font.HintingFull})
		if err != nil {
			panic(fmt.Sprintf("render: make a %d px face of the embedded font: %v", size, err))
		}
		c.faces[size] = face
	}
	if len(c.glyphs) >= maxCachedGlyphs {
		clear(c.glyphs)
	}
	g := rasterize(face, r)
	c.glyphs[key] = g
	return g
}

// rasterize draws r with its pen at the origin and keeps the pixels whose
// coverage reaches inkThreshold, cropped to their box.
func rasterize(face font.Face, r rune) *glyph {
	dr, mask, maskp, advance, _ := face.Glyph(fixed.Point26_6{}, r)
	g := &glyph{advance: advance.Round()}
	if mask == nil {
		return g
	}
	inked := func(x, y int) bool {
		_, _, _, a := mask.At(maskp.X+x-dr.Min.X, maskp.Y+y-dr.Min.Y).RGBA()
		return a >= inkThreshold
	}
	for y := dr.Min.Y; y < dr.Max.Y; y++ {
		for x := dr.Min.X; x < dr.Max.X; x++ {
			if inked(x, y) {
				g.bounds = g.bounds.Union(image.Rect(x, y, x+1, y+1))
			}
		}
	}
	g.ink = make([]bool, g.bounds.Dx()*g.bounds.Dy())
	for y := g.bounds.Min.Y; y < g.bounds.Max.Y; y++ {
		for x := g.bounds.Min.X; x < g.bounds.Max.X; x++ {
			g.ink[(y-g.bounds.Min.Y)*g.bounds.Dx()+x-g.bounds.Min.X] = inked(x, y)
		}
	}
	return g
}
