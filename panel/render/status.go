package render

import (
	"cmp"
	"fmt"
	"image"
	"slices"
	"time"
)

// statusGap is the room between two parts of the status strip; a dot in
// its middle separates parts on the same side.
const statusGap = 9

// badgePad is the black margin around the text of an inverted part.
const badgePad = 2

// How much each part matters: the strip shows the most important parts
// that fit.
const (
	memoryImportance = iota + 1
	turnsImportance
	uptimeImportance
	moodImportance
	// essential parts (the name, the away badge) are always shown.
	essential
)

// statusPart is one item of the strip.
type statusPart struct {
	text       text
	importance int
	right      bool // aligned to the right edge rather than the left
	badge      bool // white on black, to be seen from across the room
}

func (p statusPart) width() int {
	w := p.text.span().width()
	if p.badge {
		w += 2 * badgePad
	}
	return w
}

// statusParts lists what the strip would show given room: name and mood on
// the left; "away", uptime, turns and memory on the right.
func statusParts(s Status) []statusPart {
	var parts []statusPart
	add := func(str string, importance int, right, badge bool) {
		runes := clean(capped(str))
		if len(runes) > 0 {
			parts = append(parts, statusPart{text: shape(statusSize, runes), importance: importance, right: right, badge: badge})
		}
	}
	add(s.Name, essential, false, false)
	add(s.Mood, moodImportance, false, false)
	if s.Away {
		add("away", essential, true, true)
	}
	if s.Uptime > 0 {
		add("up "+formatUptime(s.Uptime), uptimeImportance, true, false)
	}
	turns := "turns"
	if s.TurnsToday == 1 {
		turns = "turn"
	}
	add(fmt.Sprintf("%d %s", s.TurnsToday, turns), turnsImportance, true, false)
	if s.Memory > 0 {
		add(formatMemory(s.Memory), memoryImportance, true, false)
	}
	return parts
}

// fitStatus picks the parts to show in width: the essential ones, then the
// others from the most important down, each if it still fits, so a long
// part left out does not take a shorter, less important one with it. The
// parts keep their order. When the essential parts alone are too wide, the
// name is elided.
func fitStatus(parts []statusPart, width int) []statusPart {
	byImportance := make([]int, len(parts))
	for i := range parts {
		byImportance[i] = i
	}
	slices.SortStableFunc(byImportance, func(a, b int) int { return cmp.Compare(parts[b].importance, parts[a].importance) })
	keep := make([]bool, len(parts))
	for _, i := range byImportance {
		keep[i] = true
		if parts[i].importance != essential && stripWidth(kept(parts, keep)) > width {
			keep[i] = false
		}
	}
	fitted := kept(parts, keep)
	if over := stripWidth(fitted) - width; over > 0 {
		// Only the name and the away badge are left, and the badge is short.
		name := &fitted[0]
		name.text = name.text.fit(name.text.span().width() - over)
	}
	return fitted
}

func kept(parts []statusPart, keep []bool) []statusPart {
	var out []statusPart
	for i, p := range parts {
		if keep[i] {
			out = append(out, p)
		}
	}
	return out
}

// stripWidth is the room the parts take, gaps included.
func stripWidth(parts []statusPart) int {
	w := 0
	for i, p := range parts {
		if i > 0 {
			w += statusGap
		}
		w += p.width()
	}
	return w
}

// drawStatus draws the parts that fit the strip: the left ones from the
// left edge, the right ones up to the right edge, with a dot between two
// plain parts on the same side.
func drawStatus(f *Frame, s Status) {
	parts := fitStatus(statusParts(s), statusArea.Dx())
	var left, right []statusPart
	for _, p := range parts {
		if p.right {
			right = append(right, p)
		} else {
			left = append(left, p)
		}
	}
	drawStatusRun(f, left, statusArea.Min.X)
	drawStatusRun(f, right, statusArea.Max.X-stripWidth(right))
}

// drawStatusRun draws parts side by side from x.
func drawStatusRun(f *Frame, parts []statusPart, x int) {
	for i, p := range parts {
		if i > 0 {
			separate(f, parts[i-1], p, x-statusGap)
		}
		drawStatusPart(f, p, x)
		x += p.width() + statusGap
	}
}

// separate draws the dot between parts a and b in the gap starting at x,
// unless one of them is a badge, which stands apart on its own.
func separate(f *Frame, a, b statusPart, x int) {
	if a.badge || b.badge {
		return
	}
	const dot = 2
	mid := x + (statusGap-dot)/2
	f.fill(image.Rect(mid, statusDotY, mid+dot, statusDotY+dot), true)
}

func drawStatusPart(f *Frame, p statusPart, x int) {
	s := p.text.span()
	if p.badge {
		f.fill(image.Rect(x, statusArea.Min.Y, x+p.width(), statusArea.Max.Y), true)
		p.text.draw(f, x+badgePad-s.min, statusBaseline, statusArea, false)
		return
	}
	p.text.draw(f, x-s.min, statusBaseline, statusArea, true)
}

// formatUptime is short: "45m", "3h12m", "2d5h".
func formatUptime(d time.Duration) string {
	minutes := int64(d / time.Minute)
	switch {
	case minutes < 60:
		return fmt.Sprintf("%dm", minutes)
	case minutes < 24*60:
		return fmt.Sprintf("%dh%02dm", minutes/60, minutes%60)
	default:
		return fmt.Sprintf("%dd%dh", minutes/(24*60), minutes/60%24)
	}
}

// formatMemory is short: "900K", "23M", "1.2G".
func formatMemory(bytes int64) string {
	switch {
	case bytes < 1<<20:
		return fmt.Sprintf("%dK", (bytes+1<<10-1)>>10)
	case bytes < 1<<30:
		return fmt.Sprintf("%dM", bytes>>20)
	default:
		return fmt.Sprintf("%.1fG", float64(bytes)/(1<<30))
	}
}
