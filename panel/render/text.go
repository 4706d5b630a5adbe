package render

import (
	"image"
	"unicode"
)

// ellipsis ends text that was cut short.
const ellipsis = '…'

// clean turns s into characters that can be drawn on one line: line
// breaks, tabs and other whitespace controls become spaces and runs of
// spaces become one, with none at either end, other control and invisible format characters
// (zero-width joiners, bidi overrides) are dropped, and bytes that are not
// UTF-8 become U+FFFD (which ranging over a string already gives).
func clean(s string) []rune {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r' || r == '\u0085' || r == '\u2028' || r == '\u2029':
			r = ' '
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			continue
		}
		if r == ' ' && len(out) > 0 && out[len(out)-1] == ' ' {
			continue
		}
		out = append(out, r)
	}
	return trimSpaces(out)
}

// trimSpaces drops the spaces at both ends of runes.
func trimSpaces(runes []rune) []rune {
	for len(runes) > 0 && runes[0] == ' ' {
		runes = runes[1:]
	}
	for len(runes) > 0 && runes[len(runes)-1] == ' ' {
		runes = runes[:len(runes)-1]
	}
	return runes
}

// span is the horizontal reach of a run of glyphs drawn from a pen at 0:
// the union of their advances and their ink, so a glyph whose ink pokes out
// of its advance still counts.
type span struct {
	pen, min, max int
}

func (s span) then(g *glyph) span {
	if !g.bounds.Empty() {
		s.min = min(s.min, s.pen+g.bounds.Min.X)
		s.max = max(s.max, s.pen+g.bounds.Max.X)
	}
	s.pen += g.advance
	s.max = max(s.max, s.pen)
	return s
}

func (s span) width() int { return s.max - s.min }

func measure(gs []*glyph) span {
	var s span
	for _, g := range gs {
		s = s.then(g)
	}
	return s
}

// text is a run of characters shaped at one size.
type text struct {
	size   int
	runes  []rune
	glyphs []*glyph
}

func shape(size int, runes []rune) text {
	return text{size: size, runes: runes, glyphs: glyphs().shape(size, runes)}
}

func (t text) slice(from, to int) text {
	return text{size: t.size, runes: t.runes[from:to], glyphs: t.glyphs[from:to]}
}

func (t text) span() span { return measure(t.glyphs) }

// fitting is how many glyphs from the start of t fit in width.
func (t text) fitting(width int) int {
	var s span
	for i, g := range t.glyphs {
		if s = s.then(g); s.width() > width {
			return i
		}
	}
	return len(t.glyphs)
}

// elided is the longest start of t that fits in width with an ellipsis
// after it, spaces before the ellipsis dropped. With no room for even the
// ellipsis it is empty.
func (t text) elided(width int) text {
	dots := shape(t.size, []rune{ellipsis})
	best := 0
	var s span
	for i, g := range t.glyphs {
		if s = s.then(g); s.then(dots.glyphs[0]).width() > width {
			break
		}
		if t.runes[i] != ' ' {
			best = i + 1
		}
	}
	if best == 0 && dots.span().width() > width {
		return t.slice(0, 0)
	}
	return text{
		size:   t.size,
		runes:  append(t.runes[:best:best], ellipsis),
		glyphs: append(t.glyphs[:best:best], dots.glyphs[0]),
	}
}

// fit is t on one line of width, elided when it does not fit.
func (t text) fit(width int) text {
	if t.span().width() <= width {
		return t
	}
	return t.elided(width)
}

// wrap breaks t (cleaned: single spaces, none at the ends) into at most
// maxLines lines of width, at spaces where it can and inside a word longer
// than a line where it must; the last line is elided when text is left
// over. A glyph wider than a whole line is dropped rather than drawn across
// the edge.
func (t text) wrap(width, maxLines int) []text {
	var lines []text
	rest := t.slice(0, len(t.runes))
	for len(lines) < maxLines {
		rest = rest.slice(leadingSpaces(rest.runes), len(rest.runes))
		if len(rest.runes) == 0 {
			break
		}
		if len(lines) == maxLines-1 {
			lines = append(lines, rest.fit(width))
			break
		}
		n := rest.fitting(width)
		switch {
		case n == len(rest.runes), rest.runes[n] == ' ':
		case n == 0:
			rest = rest.slice(1, len(rest.runes))
			continue
		default:
			// Break at the last space, unless the word after it is longer
			// than a line anyway: then it starts here and is broken.
			if space := lastSpace(rest.runes[:n]); space > 0 && rest.word(space+1).span().width() <= width {
				n = space
			}
		}
		lines = append(lines, rest.slice(0, n))
		rest = rest.slice(n, len(rest.runes))
	}
	return lines
}

// word is the word of t starting at from.
func (t text) word(from int) text {
	to := from
	for to < len(t.runes) && t.runes[to] != ' ' {
		to++
	}
	return t.slice(from, to)
}

func leadingSpaces(runes []rune) int {
	n := 0
	for n < len(runes) && runes[n] == ' ' {
		n++
	}
	return n
}

// lastSpace is the index of the last space in runes, or -1.
func lastSpace(runes []rune) int {
	for i := len(runes) - 1; i >= 0; i-- {
		if runes[i] == ' ' {
			return i
		}
	}
	return -1
}

// draw puts t on f with its pen starting at (x, baseline), its pixels
// painted with ink (false draws paper, for text on a black badge). Layout
// keeps every glyph inside its area; only rows above or below area are
// left alone, so that a rare glyph reaching past the font's line (a
// stacked diacritic) cannot stray into the next band.
func (t text) draw(f *Frame, x, baseline int, area image.Rectangle, ink bool) {
	clip := image.Rect(0, area.Min.Y, Width, area.Max.Y)
	for _, g := range t.glyphs {
		for y := g.bounds.Min.Y; y < g.bounds.Max.Y; y++ {
			for gx := g.bounds.Min.X; gx < g.bounds.Max.X; gx++ {
				if !g.ink[(y-g.bounds.Min.Y)*g.bounds.Dx()+gx-g.bounds.Min.X] {
					continue
				}
				if p := (image.Point{X: x + gx, Y: baseline + y}); p.In(clip) {
					f.paint(p.X, p.Y, ink)
				}
			}
		}
		x += g.advance
	}
}
