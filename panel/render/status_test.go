package render

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFormatUptime(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{30 * time.Second, "0m"},
		{45 * time.Minute, "45m"},
		{59*time.Minute + 59*time.Second, "59m"},
		{time.Hour, "1h"},
		{3*time.Hour + 59*time.Minute, "3h"},
		{26 * time.Hour, "1d"},
		{412*24*time.Hour + 23*time.Hour, "412d"},
	}
	for _, tt := range tests {
		if got := formatUptime(tt.in); got != tt.want {
			t.Errorf("formatUptime(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFormatMemory(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{1, "1K"},
		{900 << 10, "900K"},
		{1 << 20, "1M"},
		{23<<20 + 100, "23M"},
		{1536 << 20, "1.5G"},
	}
	for _, tt := range tests {
		if got := formatMemory(tt.in); got != tt.want {
			t.Errorf("formatMemory(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// shown is the text of each part the strip keeps for s.
func shown(s Status) []string {
	var out []string
	for _, p := range fitStatus(statusParts(s), statusArea.Dx()) {
		out = append(out, string(p.text.runes))
	}
	return out
}

func TestStatusFitting(t *testing.T) {
	tests := []struct {
		name   string
		status Status
		want   []string
	}{
		{"all of it", typicalStatus, []string{"shelldon", "curious", "up 3h", "7 turns", "23M"}},
		{"one turn", Status{Name: "shelldon", Word: "happy", Figures: &Figures{Uptime: time.Hour, TurnsToday: 1, Memory: 23 << 20}}, []string{"shelldon", "happy", "up 1h", "1 turn", "23M"}},
		{"unknown figures left out", Status{Name: "shelldon", Word: "happy", Figures: &Figures{}}, []string{"shelldon", "happy", "0 turns"}},
		{"no figures", Status{Name: "shelldon", Word: "waking"}, []string{"shelldon", "waking"}},
		{"away shows no figures", Status{Name: "shelldon", Word: "away", Away: true}, []string{"shelldon", "away"}},
		{"a long word is cut short for the memory", Status{Name: "shelldon-the-magnificent", Word: "contemplative", Figures: &Figures{Uptime: 412 * 24 * time.Hour, TurnsToday: 1234, Memory: 3 << 30}}, []string{"shelldon-the-magnificent", "con…", "3.0G"}},
		{"a word too long for three letters is left out", Status{Name: "shelldon-the-magnificent!", Word: "contemplative", Figures: &Figures{Memory: 3 << 30}}, []string{"shelldon-the-magnificent!", "3.0G"}},
		{"padded and broken text", Status{Name: " shell\ndon ", Word: "\x1b[1m"}, []string{"shell don", "[1m"}},
		{"nothing", Status{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := shown(tt.status); !slices.Equal(got, tt.want) {
				t.Errorf("status strip for %+v shows %q, want %q", tt.status, got, tt.want)
			}
		})
	}
}

func TestStatusElidesAVeryLongName(t *testing.T) {
	s := Status{Name: strings.Repeat("shelldon", 10), Word: "away", Away: true}
	got := shown(s)
	if len(got) != 2 || !strings.HasSuffix(got[0], "…") || !strings.HasPrefix(got[0], "shelldon") || got[1] != "away" {
		t.Fatalf("status strip for a very long name shows %q, want the name elided and the away badge", got)
	}
	if w := stripWidth(fitStatus(statusParts(s), statusArea.Dx())); w > statusArea.Dx() {
		t.Errorf("status strip is %d px wide, over %d", w, statusArea.Dx())
	}
}

func TestAwayBadgeIsInverted(t *testing.T) {
	present := Render(Scene{Status: Status{Name: "shelldon", Word: "away"}})
	away := Render(Scene{Status: Status{Name: "shelldon", Word: "away", Away: true}})
	changed := away.Changed(present)
	if changed.Empty() || changed.Max.Y > ruleY {
		t.Fatalf("Away changed %v, want a part of the status strip", changed)
	}
	// A badge is mostly ink: white letters on a black box.
	inked := 0
	for y := changed.Min.Y; y < changed.Max.Y; y++ {
		for x := changed.Min.X; x < changed.Max.X; x++ {
			if away.Black(x, y) {
				inked++
			}
		}
	}
	if area := changed.Dx() * changed.Dy(); inked*2 < area {
		t.Errorf("the away badge inks %d of %d pixels, want most of them", inked, area)
	}
}

// TestMemoryIsKeptWhenItFits: whatever else the strip holds, the memory
// figure is shown whenever it fits beside the name.
func TestMemoryIsKeptWhenItFits(t *testing.T) {
	for _, word := range []string{"sad", "curious", "thinking", "contemplative", "over the moon about lunch"} {
		for _, uptime := range []time.Duration{5 * time.Minute, 3*time.Hour + 12*time.Minute, 412 * 24 * time.Hour} {
			for _, turns := range []int{0, 7, 1234} {
				s := Status{Name: "shelldon", Word: word, Figures: &Figures{Uptime: uptime, TurnsToday: turns, Memory: 23 << 20}}
				if got := shown(s); !slices.Contains(got, "23M") {
					t.Errorf("status strip for %q up %v, %d turns shows %q, want the memory 23M kept", word, uptime, turns, got)
				}
			}
		}
	}
}

// TestStatusDegradesWithWidth: as the room shrinks the strip gives up its
// parts in one order, each taking the less important ones with it: the
// uptime first, then the turns, then the word (cut short while three
// letters of it fit), then the memory; the name is elided last.
func TestStatusDegradesWithWidth(t *testing.T) {
	s := Status{Name: "shelldon", Word: "curious", Figures: &Figures{Uptime: 3 * time.Hour, TurnsToday: 7, Memory: 23 << 20}}
	// roomFor is the width the parts need side by side.
	roomFor := func(texts ...string) int {
		var parts []statusPart
		for _, text := range texts {
			parts = append(parts, statusPart{text: shape(statusSize, []rune(text))})
		}
		return stripWidth(parts)
	}
	all := roomFor("shelldon", "curious", "up 3h", "7 turns", "23M")
	if all > statusArea.Dx() {
		t.Fatalf("a typical strip needs %d px, more than the panel's %d", all, statusArea.Dx())
	}
	tests := []struct {
		width int
		want  []string
	}{
		{statusArea.Dx(), []string{"shelldon", "curious", "up 3h", "7 turns", "23M"}},
		{all, []string{"shelldon", "curious", "up 3h", "7 turns", "23M"}},
		{all - 1, []string{"shelldon", "curious", "7 turns", "23M"}},
		{roomFor("shelldon", "curious", "7 turns", "23M") - 1, []string{"shelldon", "curious", "23M"}},
		{roomFor("shelldon", "curious", "23M") - 1, []string{"shelldon", "curio…", "23M"}},
		{roomFor("shelldon", "cur…", "23M"), []string{"shelldon", "cur…", "23M"}},
		{roomFor("shelldon", "cur…", "23M") - 1, []string{"shelldon", "23M"}},
		{roomFor("shelldon", "23M") - 1, []string{"shelldon"}},
		{roomFor("shel…"), []string{"shel…"}},
	}
	for _, tt := range tests {
		var got []string
		for _, p := range fitStatus(statusParts(s), tt.width) {
			got = append(got, string(p.text.runes))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("fitStatus(%q, %d) shows %q, want %q", "shelldon curious up 3h 7 turns 23M", tt.width, got, tt.want)
		}
	}
}

// TestStatusOnlyLosesPartsAsItNarrows: a part shown at some width is shown
// at every greater one, so no part comes and goes as the figures grow.
func TestStatusOnlyLosesPartsAsItNarrows(t *testing.T) {
	s := Status{Name: "shelldon", Word: "thinking", Figures: &Figures{Uptime: 26 * time.Hour, TurnsToday: 12, Memory: 1536 << 20}}
	wider := fitStatus(statusParts(s), statusArea.Dx())
	for width := statusArea.Dx() - 1; width > 0; width-- {
		parts := fitStatus(statusParts(s), width)
		for _, p := range parts[1:] { // the name is elided, never dropped
			if !slices.ContainsFunc(wider, func(w statusPart) bool { return w.importance == p.importance }) {
				t.Errorf("fitStatus at %d px shows %q, which it left out at %d px", width, string(p.text.runes), width+1)
			}
		}
		wider = parts
	}
}

// TestATypicalStripShowsAllFive holds README's word for it: a word of up
// to seven letters, a one-digit uptime and count of turns and 1 to 99 MB
// in use leave room for every part; an eight-letter word, not for the
// uptime.
func TestATypicalStripShowsAllFive(t *testing.T) {
	tests := []struct {
		word   string
		uptime time.Duration
		turns  int
		memory int64
		want   []string
	}{
		{"curious", 9 * time.Minute, 9, 99 << 20, []string{"shelldon", "curious", "up 9m", "9 turns", "99M"}},
		{"excited", 9 * time.Hour, 0, 1 << 20, []string{"shelldon", "excited", "up 9h", "0 turns", "1M"}},
		{"neutral", 9 * 24 * time.Hour, 1, 23 << 20, []string{"shelldon", "neutral", "up 9d", "1 turn", "23M"}},
		{"thinking", 3 * time.Hour, 7, 23 << 20, []string{"shelldon", "thinking", "7 turns", "23M"}},
	}
	for _, tt := range tests {
		s := Status{Name: "shelldon", Word: tt.word, Figures: &Figures{Uptime: tt.uptime, TurnsToday: tt.turns, Memory: tt.memory}}
		if got := shown(s); !slices.Equal(got, tt.want) {
			t.Errorf("status strip for %q up %v, %d turns, %d bytes shows %q, want %q", tt.word, tt.uptime, tt.turns, tt.memory, got, tt.want)
		}
	}
}
