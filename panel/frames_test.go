package panel

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/faces"
	"shelldon/panel/moment"
	"shelldon/panel/render"
	"shelldon/panel/render/rendertest"
)

// TestFrames keeps what the owner sees at each moment of the pet's day as
// golden PNGs in testdata/golden, drawn by the panel from the snapshots
// core sends (go test ./panel -update rewrites them): the mood's face when
// idle, a reply's reaction, thinking, a turn that failed, core away, the
// first moments before core is heard, a long caption, and the status strip
// at its narrowest and widest. Each frame's strip tells the face's story.
func TestFrames(t *testing.T) {
	// A typical core: up 3h12m, seven turns today, 23 MB in use.
	typical := contracts.PanelStatus{Name: "shelldon", Since: start.Add(-(3*time.Hour + 12*time.Minute)), TurnsToday: 7, Memory: 23 << 20}
	// A core just started, before its first turn.
	fresh := contracts.PanelStatus{Name: "shelldon", Since: start.Add(-5 * time.Minute), Memory: 900 << 10}
	// A core up for over a year on a busy day, near its memory's bound.
	seasoned := contracts.PanelStatus{Name: "shelldon", Since: start.Add(-412 * 24 * time.Hour), TurnsToday: 1234, Memory: 1536 << 20}
	// A face the pet added, with as long a name as faces may have.
	const longest = "over-the-moon-about-cats"
	if len(longest) != contracts.MaxFaceNameLen {
		t.Fatalf("%q is %d letters, want the longest a face may have, %d", longest, len(longest), contracts.MaxFaceNameLen)
	}
	added, err := faces.Builtin().With(longest, "(☆▽☆)")
	if err != nil {
		t.Fatal(err)
	}
	// shows is a frame core asks for.
	shows := func(m moment.Moment, status contracts.PanelStatus, ambient bool) func(*Panel, *clock.Fake) {
		return func(p *Panel, _ *clock.Fake) { p.take(snapshot(m, status, ambient)) }
	}
	frames := map[string]func(*Panel, *clock.Fake){
		"thinking":     shows(moment.Thinking(), typical, false),
		"reply":        shows(moment.Reply(faces.Builtin(), "sad", "poor cat, I hope she is better soon"), typical, false),
		"failed":       shows(moment.Failed(), typical, false),
		"long-caption": shows(moment.Reply(faces.Builtin(), "curious", strings.Repeat("and then I wondered what else there is to know about cats ", 3)), typical, false),
		"away": func(p *Panel, clk *clock.Fake) {
			p.take(snapshot(moment.Idle("excited"), typical, true))
			p.coreGone()
			clk.Advance(p.opts.AwayAfter)
		},
		"waking": func(p *Panel, clk *clock.Fake) {
			p.scheduleTick()
			clk.Advance(redrawEvery)
		},
		"strip-narrowest": shows(moment.Reply(faces.Builtin(), "sad", "oh no"), fresh, false),
		"strip-widest":    shows(moment.Reply(added, longest, "I made a face for this"), seasoned, false),
	}
	for _, mood := range []string{"neutral", "curious", "happy", "excited", "sad", "grumpy", "bored", faces.Sleeping} {
		frames["idle-"+mood] = shows(moment.Idle(mood), typical, true)
	}
	for name, draw := range frames {
		t.Run(name, func(t *testing.T) {
			clk := clock.NewFake(start)
			p, d := offline(t, clk)
			defer p.stop()
			draw(p, clk)
			if d.count() == 0 {
				t.Fatalf("the panel drew nothing for %s", name)
			}
			rendertest.Golden(t, name, d.last().frame, "the panel's "+name+" frame")
		})
	}
	rendertest.Orphans(t, slices.Collect(maps.Keys(frames)))
}

// TestFramesTellOneStory: in every moment's frame the strip's word is the
// one that moment gives its face, and never the word of another moment.
func TestFramesTellOneStory(t *testing.T) {
	status := contracts.PanelStatus{Name: "shelldon", Since: start, TurnsToday: 7, Memory: 23 << 20}
	draw := func(word string, away bool, m moment.Moment) *render.Frame {
		figures := &render.Figures{TurnsToday: 7, Memory: 23 << 20}
		if away {
			figures = nil
		}
		return render.Render(render.Scene{Face: m.Glyphs, Caption: m.Caption, Status: render.Status{Name: "shelldon", Word: word, Away: away, Figures: figures}})
	}
	// The reply's sad face under the excited mood that came before it.
	clk := clock.NewFake(start)
	p, d := offline(t, clk)
	defer p.stop()
	p.take(snapshot(moment.Idle("excited"), status, true))
	reply := moment.Reply(faces.Builtin(), "sad", "poor cat")
	p.take(snapshot(reply, status, false))
	if got, want := d.last().frame, draw("sad", false, reply); !got.Equal(want) {
		t.Errorf("after a sad reply under an excited mood the panel differs from a sad strip in %v", got.Changed(want))
	}
	// Core goes while the pet was excited: asleep, and the strip says away.
	p.coreGone()
	clk.Advance(p.opts.AwayAfter)
	if got, want := d.last().frame, draw("away", true, moment.Away()); !got.Equal(want) {
		t.Errorf("with core away after an excited mood the panel differs from the away frame in %v", got.Changed(want))
	}
}
