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
		{3*time.Hour + 12*time.Minute, "3h12m"},
		{3*time.Hour + 5*time.Minute + 59*time.Second, "3h05m"},
		{26 * time.Hour, "1d2h"},
		{412*24*time.Hour + 5*time.Hour + 59*time.Minute, "412d5h"},
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
		{"all that fits", typicalStatus, []string{"shelldon", "curious", "up 3h12m", "7 turns"}},
		{"no mood frees room", Status{Name: "shelldon", Uptime: time.Hour, TurnsToday: 1, Memory: 23 << 20}, []string{"shelldon", "up 1h00m", "1 turn", "23M"}},
		{"unknowns left out", Status{Name: "shelldon"}, []string{"shelldon", "0 turns"}},
		{"away is kept", Status{Name: "shelldon", Away: true, Mood: "lonely", Uptime: time.Hour, TurnsToday: 7, Memory: 23 << 20}, []string{"shelldon", "lonely", "away", "up 1h00m", "23M"}},
		{"a long mood gives way to shorter parts", Status{Name: "shelldon-the-magnificent", Mood: "contemplative", Uptime: 412 * 24 * time.Hour, TurnsToday: 1234, Memory: 3 << 30}, []string{"shelldon-the-magnificent", "up 412d0h"}},
		{"padded and broken text", Status{Name: " shell\ndon ", Mood: "\x1b[1m"}, []string{"shell don", "[1m", "0 turns"}},
		{"nothing", Status{}, []string{"0 turns"}},
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
	s := Status{Name: strings.Repeat("shelldon", 10), Away: true, Mood: "curious", TurnsToday: 3}
	got := shown(s)
	if len(got) != 2 || !strings.HasSuffix(got[0], "…") || !strings.HasPrefix(got[0], "shelldon") || got[1] != "away" {
		t.Fatalf("status strip for a very long name shows %q, want the name elided and the away badge", got)
	}
	if w := stripWidth(fitStatus(statusParts(s), statusArea.Dx())); w > statusArea.Dx() {
		t.Errorf("status strip is %d px wide, over %d", w, statusArea.Dx())
	}
}

func TestAwayBadgeIsInverted(t *testing.T) {
	present := Render(Scene{Status: Status{Name: "shelldon"}})
	away := Render(Scene{Status: Status{Name: "shelldon", Away: true}})
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
