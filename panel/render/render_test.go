package render

import (
	"bytes"
	"image"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"shelldon/faces"
	"shelldon/panel/render/rendertest"
)

// typicalFigures, typicalStatus and typicalCaption are the scene every
// face golden shares, each with its own word.
var typicalFigures = &Figures{Uptime: 3*time.Hour + 12*time.Minute, TurnsToday: 7, Memory: 23 << 20}

var typicalStatus = Status{Name: "shelldon", Word: "curious", Figures: typicalFigures}

const typicalCaption = "thinking about lunch and the meaning of small boards"

// goldenScenes are the frames kept as PNG files: every built-in face,
// under its own name as the strip's word, then layouts that stress the
// bands. The frames of the pet's moments are panel's goldens.
func goldenScenes(t *testing.T) map[string]Scene {
	t.Helper()
	scenes := map[string]Scene{}
	registry := faces.Builtin()
	for _, name := range registry.Names() {
		glyphs, ok := registry.Lookup(name)
		if !ok {
			t.Fatalf("Builtin().Lookup(%q) found nothing for a listed face", name)
		}
		status := typicalStatus
		status.Word = name
		scenes["face-"+name] = Scene{Face: glyphs, Caption: typicalCaption, Status: status}
	}
	happy, _ := registry.Lookup(faces.DefaultReply)
	longStatus := Status{
		Name:    "shelldon-the-magnificent",
		Word:    "contemplative",
		Figures: &Figures{Uptime: 412*24*time.Hour + 5*time.Hour, TurnsToday: 1234, Memory: 3 << 30},
	}
	scenes["layout-no-caption"] = Scene{Face: happy, Status: typicalStatus}
	scenes["layout-one-line"] = Scene{Face: happy, Caption: "hello!", Status: typicalStatus}
	scenes["layout-long-caption"] = Scene{Face: happy, Status: typicalStatus, Caption: strings.Repeat("a caption that goes on and on about everything it saw today ", 4)}
	scenes["layout-long-word"] = Scene{Face: happy, Status: typicalStatus, Caption: "look: supercalifragilisticexpialidociouslyextraordinarilylongwordwithoutanyspaces"}
	scenes["layout-away"] = Scene{Face: happy, Caption: "where did everyone go?", Status: Status{Name: "shelldon", Word: "away", Away: true}}
	scenes["layout-long-status"] = Scene{Face: happy, Caption: typicalCaption, Status: longStatus}
	scenes["layout-very-long-name"] = Scene{Face: happy, Caption: typicalCaption, Status: Status{Name: strings.Repeat("shelldon", 8), Word: "away", Away: true}}
	scenes["layout-long-face"] = Scene{Face: strings.Repeat("(o_o)", 5), Caption: typicalCaption, Status: typicalStatus}
	scenes["layout-empty"] = Scene{}
	scenes["layout-bad-input"] = Scene{Face: "(\x00o\t_\no)\xff", Caption: "line one\nline\ttwo\x07 \xfe\u202eend\U0001F600", Status: Status{Name: "shell\ndon", Word: "\x1b[31mred"}}
	return scenes
}

func TestGolden(t *testing.T) {
	scenes := goldenScenes(t)
	for name, scene := range scenes {
		t.Run(name, func(t *testing.T) {
			rendertest.Golden(t, name, Render(scene), "Render of "+name)
		})
	}
	rendertest.Orphans(t, slices.Collect(maps.Keys(scenes)))
}

// checkMargins fails unless the frame keeps the layout's paper: the side
// margins (but for the rule), the row under the rule, the row between the
// face and the caption, and the bottom row; and the rule is whole.
func checkMargins(t *testing.T, scene Scene, f *Frame) {
	t.Helper()
	if f.Bounds() != image.Rect(0, 0, Width, Height) {
		t.Fatalf("Render(%+v).Bounds() = %v, want %dx%d", scene, f.Bounds(), Width, Height)
	}
	paper := func(x, y int, where string) {
		if f.Black(x, y) {
			t.Errorf("Render(%+v) inks (%d, %d), in %s", scene, x, y, where)
		}
	}
	for y := range Height {
		if y == ruleY {
			continue
		}
		for x := range margin {
			paper(x, y, "the left margin")
			paper(Width-1-x, y, "the right margin")
		}
	}
	for x := range Width {
		if !f.Black(x, ruleY) {
			t.Errorf("Render(%+v) leaves (%d, %d) of the rule white", scene, x, ruleY)
		}
		paper(x, ruleY+1, "the row under the rule")
		paper(x, Height-1, "the bottom row")
		if len(clean(scene.Caption)) > 0 {
			paper(x, captionTop-1, "the row above the caption")
		}
	}
}

func TestRenderKeepsMargins(t *testing.T) {
	scenes := goldenScenes(t)
	scenes["wide glyphs"] = Scene{Face: strings.Repeat("█", 24), Caption: strings.Repeat("█▓ ", 30), Status: Status{Name: strings.Repeat("█", 40), Word: "▓▓"}}
	scenes["overhanging greek"] = Scene{Face: "Ἧ_Ἧ", Caption: strings.Repeat("Ὗ", 60), Status: Status{Name: strings.Repeat("Ὗ", 50), Word: "Ἧ", Away: true}}
	scenes["one huge word"] = Scene{Face: "(o_o)", Caption: strings.Repeat("W", 5000)}
	for name, scene := range scenes {
		t.Run(name, func(t *testing.T) {
			checkMargins(t, scene, Render(scene))
		})
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	scene := Scene{Face: "(•ᴗ•)☝", Caption: typicalCaption, Status: typicalStatus}
	if a, b := Render(scene), Render(scene); !a.Equal(b) {
		t.Errorf("two renders of %+v differ in %v", scene, a.Changed(b))
	}
}

func TestRenderConcurrently(t *testing.T) {
	scenes := goldenScenes(t)
	want := map[string]*Frame{}
	for name, scene := range scenes {
		want[name] = Render(scene)
	}
	type result struct {
		name  string
		frame *Frame
	}
	got := make(chan result)
	for name, scene := range scenes {
		go func() { got <- result{name, Render(scene)} }()
	}
	for range scenes {
		g := <-got
		if !g.frame.Equal(want[g.name]) {
			t.Errorf("Render(%s) in parallel differs from the same render alone in %v", g.name, g.frame.Changed(want[g.name]))
		}
	}
}

func TestGlyphCacheStaysBounded(t *testing.T) {
	var runes []rune
	for r := rune(0x100); r < 0x250; r++ {
		runes = append(runes, r)
	}
	for r := rune(0x2500); r < 0x2630; r++ {
		runes = append(runes, r)
	}
	cache := glyphs()
	for _, size := range faceSizes {
		cache.shape(size, runes)
	}
	cache.mu.Lock()
	defer cache.mu.Unlock()
	if n := len(cache.glyphs); n > maxCachedGlyphs {
		t.Errorf("glyph cache holds %d glyphs after %d lookups, over its bound of %d", n, len(runes)*len(faceSizes), maxCachedGlyphs)
	}
}

func BenchmarkRender(b *testing.B) {
	scene := Scene{Face: "(^‿^)", Caption: typicalCaption, Status: typicalStatus}
	for b.Loop() {
		Render(scene)
	}
}

// BenchmarkEncodePNG is a typical frame encoded as the PNG file display
// writes it.
func BenchmarkEncodePNG(b *testing.B) {
	f := Render(Scene{Face: "(^‿^)", Caption: typicalCaption, Status: typicalStatus})
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := f.EncodePNG(&buf); err != nil {
			b.Fatal(err)
		}
	}
}
