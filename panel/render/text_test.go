package render

import (
	"image"
	"slices"
	"strings"
	"testing"
	"unicode"

	"shelldon/faces"
)

func TestClean(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"hello", "hello"},
		{"  padded  ", "padded"},
		{"line\nbreak", "line break"},
		{"crlf\r\nline", "crlf line"},
		{"tab\there", "tab here"},
		{"many    spaces", "many spaces"},
		{"bell\a and nul\x00", "bell and nul"},
		{"\x1b[31mred\x1b[0m", "[31mred[0m"},
		{"bad \xff byte", "bad \uFFFD byte"},
		{"cut \xe2\x80", "cut \uFFFD\uFFFD"},
		{"bidi \u202eevil", "bidi evil"},
		{"zero\u200bwidth", "zerowidth"},
		{"next\u0085line\u2028sep", "next line sep"},
		{"c1 \u009b control", "c1 control"},
		{"(˘_˘)…", "(˘_˘)…"},
		{"non\u00a0breaking", "non\u00a0breaking"},
		{"", ""},
		{" \n\t ", ""},
	}
	for _, tt := range tests {
		if got := string(clean(tt.in)); got != tt.want {
			t.Errorf("clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// lineStrings is the text of each line.
func lineStrings(lines []text) []string {
	var out []string
	for _, l := range lines {
		out = append(out, string(l.runes))
	}
	return out
}

// glyphsWide is a width for n glyphs of the monospaced font at
// captionSize: room for n advances and a little ink past them, not for
// n+1.
func glyphsWide(n int) int {
	advance := shape(captionSize, []rune{'x'}).glyphs[0].advance
	return n*advance + advance/2
}

func TestWrap(t *testing.T) {
	tests := []struct {
		in       string
		width    int
		maxLines int
		want     []string
	}{
		{"hello", 10, 2, []string{"hello"}},
		{"hello world", 10, 2, []string{"hello", "world"}},
		{"hello world", 11, 2, []string{"hello world"}},
		{"one two three four five six", 10, 2, []string{"one two", "three fou…"}},
		{"one two three four five six", 10, 3, []string{"one two", "three four", "five six"}},
		{"one two three four five six", 10, 1, []string{"one two t…"}},
		{"abcdefghijklmnopqrstuvwxyz", 10, 3, []string{"abcdefghij", "klmnopqrst", "uvwxyz"}},
		{"abcdefghijklmnopqrstuvwxyz", 10, 2, []string{"abcdefghij", "klmnopqrs…"}},
		{"look: abcdefghijklmnop", 10, 3, []string{"look: abcd", "efghijklmn", "op"}},
		{"look: abcdefgh", 10, 3, []string{"look:", "abcdefgh"}},
		{"exactly ten and ten more", 10, 3, []string{"exactly", "ten and", "ten more"}},
		{"fits in two lines", 9, 2, []string{"fits in", "two lines"}},
		{"a b", 1, 2, []string{"a", "b"}},
		{"ab cd ef", 2, 2, []string{"ab", "c…"}},
		{"naïve café über", 6, 3, []string{"naïve", "café", "über"}},
		{"", 10, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			width := glyphsWide(tt.width)
			lines := shape(captionSize, clean(tt.in)).wrap(width, tt.maxLines)
			if got := lineStrings(lines); !slices.Equal(got, tt.want) {
				t.Errorf("wrap(%q, %d glyphs, %d lines) = %q, want %q", tt.in, tt.width, tt.maxLines, got, tt.want)
			}
			for _, l := range lines {
				if w := l.span().width(); w > width {
					t.Errorf("wrap(%q) line %q is %d px wide, over %d", tt.in, string(l.runes), w, width)
				}
			}
		})
	}
}

func TestWrapDropsGlyphsWiderThanTheLine(t *testing.T) {
	lines := shape(captionSize, clean("ab")).wrap(3, 2)
	if got := lineStrings(lines); len(got) != 0 {
		t.Errorf("wrap(%q, 3 px) = %q, want no lines", "ab", got)
	}
}

// TestCaptionElision wraps captions into the real caption band: every line
// fits, and the text is all there unless the last line ends with "…".
func TestCaptionElision(t *testing.T) {
	captions := []string{
		typicalCaption,
		"short",
		strings.Repeat("word ", 40),
		strings.Repeat("x", 200),
		"a sentence that nearly fills two lines of the panel, almost",
		"a sentence that is a little too long to fit into the two lines of the small panel",
		strings.Repeat("█", 70),
		strings.Repeat("Ἧ", 70),
	}
	for _, caption := range captions {
		t.Run(caption, func(t *testing.T) {
			lines := shape(captionSize, clean(caption)).wrap(captionArea.Dx(), captionLines)
			if len(lines) == 0 || len(lines) > captionLines {
				t.Fatalf("wrap(%q) gave %d lines, want 1 to %d", caption, len(lines), captionLines)
			}
			for _, l := range lines {
				if w := l.span().width(); w > captionArea.Dx() {
					t.Errorf("wrap(%q) line %q is %d px wide, over %d", caption, string(l.runes), w, captionArea.Dx())
				}
			}
			shown := strings.Join(lineStrings(lines), "")
			whole := strings.ReplaceAll(string(clean(caption)), " ", "")
			elided := strings.HasSuffix(shown, "…")
			if got := strings.ReplaceAll(shown, " ", ""); !elided && got != whole {
				t.Errorf("wrap(%q) shows %q without an ellipsis, want all of it", caption, shown)
			}
			if elided && !strings.HasPrefix(whole, strings.ReplaceAll(strings.TrimSuffix(shown, "…"), " ", "")) {
				t.Errorf("wrap(%q) shows %q, which is not the caption's start", caption, shown)
			}
		})
	}
}

func TestElided(t *testing.T) {
	tests := []struct {
		in    string
		width int
		want  string
	}{
		{"abcdef", 4, "abc…"},
		{"ab cdef", 4, "ab…"},
		{"ab cdef", 3, "ab…"},
		{"abcdef", 1, "…"},
		{"abcdef", 0, ""},
	}
	for _, tt := range tests {
		got := shape(captionSize, clean(tt.in)).elided(glyphsWide(tt.width))
		if string(got.runes) != tt.want {
			t.Errorf("elided(%q, %d glyphs) = %q, want %q", tt.in, tt.width, string(got.runes), tt.want)
		}
		if w := got.span().width(); w > glyphsWide(tt.width) {
			t.Errorf("elided(%q, %d glyphs) is %d px wide, over %d", tt.in, tt.width, w, glyphsWide(tt.width))
		}
	}
}

// TestLinesHoldTheirGlyphs checks the layout's ascents and descents
// against the font: Latin with its accents, box drawing, and every
// character of the built-in faces stay within their rows.
func TestLinesHoldTheirGlyphs(t *testing.T) {
	var runes []rune
	for r := rune(0x20); r <= 0x17f; r++ {
		if unicode.IsPrint(r) {
			runes = append(runes, r)
		}
	}
	for r := rune(0x2500); r <= 0x257f; r++ {
		runes = append(runes, r)
	}
	registry := faces.Builtin()
	for _, name := range registry.Names() {
		glyphs, _ := registry.Lookup(name)
		runes = append(runes, []rune(glyphs)...)
	}
	runes = append(runes, ellipsis, '\uFFFD')
	lines := []struct {
		name             string
		size             int
		ascent, descent  int
		baseline, bottom int
	}{
		{"status", statusSize, statusAscent, statusDescent, statusBaseline, ruleY},
		{"caption", captionSize, captionAscent, captionDescent, captionBaseline + (captionLines-1)*captionPitch, Height - 1},
	}
	for _, line := range lines {
		for i, g := range glyphs().shape(line.size, runes) {
			if g.bounds.Empty() {
				continue
			}
			if g.bounds.Min.Y < -line.ascent || g.bounds.Max.Y > line.descent {
				t.Errorf("%q (%U) at %d px reaches %v, beyond the %s line's ascent %d and descent %d", runes[i], runes[i], line.size, g.bounds, line.name, line.ascent, line.descent)
			}
		}
		if line.baseline+line.descent > line.bottom {
			t.Errorf("the %s line's descent ends at row %d, past its band's end %d", line.name, line.baseline+line.descent, line.bottom)
		}
	}
	if captionBaseline-captionAscent < captionArea.Min.Y {
		t.Errorf("the caption's first line starts at row %d, above its band at %d", captionBaseline-captionAscent, captionArea.Min.Y)
	}
}

func TestSizeFace(t *testing.T) {
	band := image.Rect(margin, faceTop, Width-margin, captionTop-1)
	tests := []struct {
		face     string
		wantSize int
	}{
		{"(^‿^)", 54},
		{"(-_-) zZ", 48},
		{strings.Repeat("o", 24), 16},
	}
	for _, tt := range tests {
		if got := sizeFace([]rune(tt.face), band).size; got != tt.wantSize {
			t.Errorf("sizeFace(%q) size = %d, want %d", tt.face, got, tt.wantSize)
		}
	}
	registry := faces.Builtin()
	for _, name := range registry.Names() {
		glyphs, _ := registry.Lookup(name)
		face := sizeFace([]rune(glyphs), band)
		if w := face.span().width(); w > band.Dx() {
			t.Errorf("sizeFace(%q) is %d px wide, over the band's %d", glyphs, w, band.Dx())
		}
		if h := face.inkBox().Dy(); h > band.Dy()-2*facePad {
			t.Errorf("sizeFace(%q) is %d px tall, over the band's %d less padding", glyphs, h, band.Dy())
		}
		if i := slices.Index(faceSizes, face.size); i > 0 {
			bigger := shape(faceSizes[i-1], []rune(glyphs))
			if bigger.span().width() <= band.Dx() && bigger.inkBox().Dy() <= band.Dy()-2*facePad {
				t.Errorf("sizeFace(%q) chose %d px, but %d px fits too", glyphs, face.size, faceSizes[i-1])
			}
		}
	}
	if got := string(sizeFace([]rune(strings.Repeat("(o_o)", 6)), band).runes); !strings.HasSuffix(got, "…") {
		t.Errorf("sizeFace(a face too wide at every size) = %q, want it elided", got)
	}
}
