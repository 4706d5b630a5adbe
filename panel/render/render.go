package render

import (
	"image"
	"strings"
	"time"
)

// Scene is what one frame shows.
type Scene struct {
	// Face is the kaomoji glyphs to draw large, e.g. "(^‿^)". An empty
	// face leaves the middle of the frame blank.
	Face string
	// Caption is the pet's thought, wrapped to at most 2 lines and elided
	// with "…" when longer.
	Caption string
	Status  Status
}

// Status is the strip along the top: the pet's name and the word for its
// face on the left, core's figures on the right.
type Status struct {
	Name string // "shelldon"
	// Word is the face's, in a word ("happy", "thinking"); may be empty.
	Word string
	// Away draws Word white on black, to be seen from across the room:
	// core is not reachable.
	Away bool
	// Figures are nil when no core vouches for them: while it is away, or
	// before it is first heard from.
	Figures *Figures
}

// Look is what a scene shows: scenes of the same look draw the same
// frame, so a panel compares looks, and draws only a new one.
type Look struct {
	Face, Caption, Name, Word string
	Away                      bool
	// Figures are core's figures as the strip writes them ("up 3h",
	// "2 turns", "23M"): an uptime within its hour or a memory within its
	// megabyte looks the same.
	Figures string
}

// Look is what s shows.
func (s Scene) Look() Look {
	var shown []string
	for _, fig := range figures(s.Status.Figures) {
		shown = append(shown, fig.text)
	}
	return Look{Face: s.Face, Caption: s.Caption, Name: s.Status.Name, Word: s.Status.Word, Away: s.Status.Away,
		Figures: strings.Join(shown, "\x00")}
}

// Figures are core's vital signs.
type Figures struct {
	Uptime     time.Duration // 0 or less is not shown
	TurnsToday int
	Memory     int64 // bytes in use by the pet; 0 = unknown
}

// maxTextBytes is how much of any one string a frame reads: far more than
// fits, and it keeps a runaway caption from costing more than a frame.
const maxTextBytes = 4 << 10

// The layout, top to bottom: the status strip, a rule, the face band and
// the caption band, with margin columns of paper left and right and a row
// of paper at the bottom. The ascents and descents are how far the font's
// glyphs reach above and below the baseline at that size, accented
// capitals and box drawing included (TestLinesHoldTheirGlyphs checks); only
// a few stacked diacritics reach further, and lose a row to their band.
const (
	margin = 2

	statusSize     = 11
	statusAscent   = 10
	statusDescent  = 3
	statusBaseline = statusAscent
	// statusDotY is the top of the dots between parts, halfway up a
	// lowercase letter.
	statusDotY = statusBaseline - 5
	ruleY      = statusAscent + statusDescent
	faceTop    = ruleY + 2
	// facePad is the least paper above and below the face in its band.
	facePad = 3

	captionSize    = 14
	captionAscent  = 13
	captionDescent = 4
	captionLines   = 2
	captionPitch   = 15
	captionTop     = Height - 1 - (captionLines-1)*captionPitch - captionAscent - captionDescent
	// captionBaseline is the first line's.
	captionBaseline = captionTop + captionAscent
)

// faceSizes are the sizes tried for the face, largest first; the face is
// drawn at the first that fits its band.
var faceSizes = []int{54, 48, 44, 38, 32, 26, 20, 16}

var (
	statusArea  = image.Rect(margin, 0, Width-margin, ruleY)
	captionArea = image.Rect(margin, captionTop, Width-margin, Height-1)
)

// Render draws s as a frame. Any strings are accepted: control characters
// are dropped (line breaks and tabs become spaces), bytes that are not
// UTF-8 are drawn as U+FFFD, as is any character the font lacks, and text
// that does not fit is elided at a glyph, never cut at the frame's edge.
func Render(s Scene) *Frame {
	f := NewFrame()
	drawStatus(f, s.Status)
	f.fill(image.Rect(0, ruleY, Width, ruleY+1), true)

	faceBand := image.Rect(margin, faceTop, Width-margin, captionTop-1)
	lines := shape(captionSize, clean(capped(s.Caption))).wrap(captionArea.Dx(), captionLines)
	if len(lines) == 0 {
		faceBand.Max.Y = Height - 1
	}
	drawFace(f, clean(capped(s.Face)), faceBand)
	drawCaption(f, lines)
	return f
}

func capped(s string) string {
	if len(s) > maxTextBytes {
		return s[:maxTextBytes]
	}
	return s
}

// drawFace draws face centered in band.
func drawFace(f *Frame, face []rune, band image.Rectangle) {
	if len(face) == 0 {
		return
	}
	t := sizeFace(face, band)
	box := t.inkBox()
	s := t.span()
	x := band.Min.X + (band.Dx()-s.width())/2 - s.min
	baseline := band.Min.Y + (band.Dy()-box.Dy())/2 - box.Min.Y
	t.draw(f, x, baseline, band, true)
}

// sizeFace shapes face at the largest of faceSizes it fits band at,
// elided at the smallest if it fits at none.
func sizeFace(face []rune, band image.Rectangle) text {
	var t text
	for _, size := range faceSizes {
		t = shape(size, face)
		if t.span().width() <= band.Dx() && t.inkBox().Dy() <= band.Dy()-2*facePad {
			return t
		}
	}
	return t.fit(band.Dx())
}

// inkBox is the box of t's ink relative to the pen on the baseline.
func (t text) inkBox() image.Rectangle {
	box := image.Rectangle{}
	pen := 0
	for _, g := range t.glyphs {
		box = box.Union(g.bounds.Add(image.Pt(pen, 0)))
		pen += g.advance
	}
	return box
}

// drawCaption centers each line in the caption band.
func drawCaption(f *Frame, lines []text) {
	baseline := captionBaseline
	if len(lines) < captionLines {
		// Fewer lines sit in the middle of the band.
		baseline += (captionLines - len(lines)) * captionPitch / 2
	}
	for _, line := range lines {
		s := line.span()
		x := captionArea.Min.X + (captionArea.Dx()-s.width())/2 - s.min
		line.draw(f, x, baseline, captionArea, true)
		baseline += captionPitch
	}
}
