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

// How much each part matters, least first: when the room runs out the
// strip gives up parts in this order (see fitStatus).
const (
	// The uptime goes first: it tells least at a glance (a restart shows
	// in /status and the journal), and it is the figure that grows.
	uptimeImportance = iota + 1
	// The turns today say how busy the day was.
	turnsImportance
	// The word goes before the memory: the face says it too. Only a long
	// face name (they may have 24 letters) crowds it, and then it is cut
	// short rather than left out.
	wordImportance
	// The memory is the board's health, where 416 MB hold everything; the
	// shortest figure, it is kept whenever it fits beside the name.
	memoryImportance
	// Essential parts, the name and the away badge, are always shown.
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

// statusParts lists what the strip would show given room: the name and
// the word (or the away badge) on the left, core's figures on the right.
func statusParts(s Status) []statusPart {
	var parts []statusPart
	add := func(str string, importance int, right, badge bool) {
		runes := clean(capped(str))
		if len(runes) > 0 {
			parts = append(parts, statusPart{text: shape(statusSize, runes), importance: importance, right: right, badge: badge})
		}
	}
	add(s.Name, essential, false, false)
	if s.Away {
		add(s.Word, essential, false, true)
	} else {
		add(s.Word, wordImportance, false, false)
	}
	for _, fig := range figures(s.Figures) {
		add(fig.text, fig.importance, true, false)
	}
	return parts
}

// figure is one of core's figures as the strip writes it.
type figure struct {
	text       string
	importance int
}

// figures are f as the strip writes them, none when f is nil.
func figures(f *Figures) []figure {
	if f == nil {
		return nil
	}
	var out []figure
	if f.Uptime > 0 {
		out = append(out, figure{"up " + formatUptime(f.Uptime), uptimeImportance})
	}
	turns := "turns"
	if f.TurnsToday == 1 {
		turns = "turn"
	}
	out = append(out, figure{fmt.Sprintf("%d %s", f.TurnsToday, turns), turnsImportance})
	if f.Memory > 0 {
		out = append(out, figure{formatMemory(f.Memory), memoryImportance})
	}
	return out
}

// minWordLetters is the least of a word cut short worth showing.
const minWordLetters = 3

// fitStatus picks the parts to show in width: the essential ones, then the
// others from the most important down until one does not fit, which goes
// with every less important one; the word is elided instead when at least
// minWordLetters of it fit. So the strip gives up its parts in one order
// as the room shrinks (or the figures grow), and never trades a part for a
// shorter, less important one that would flicker in and out as the figures
// change. The parts keep their order. When the essential parts alone are
// too wide, the name is elided.
func fitStatus(parts []statusPart, width int) []statusPart {
	parts = slices.Clone(parts)
	byImportance := make([]int, len(parts))
	for i := range parts {
		byImportance[i] = i
	}
	slices.SortStableFunc(byImportance, func(a, b int) int { return cmp.Compare(parts[b].importance, parts[a].importance) })
	keep := make([]bool, len(parts))
	for _, i := range byImportance {
		keep[i] = true
		over := stripWidth(kept(parts, keep)) - width
		if parts[i].importance == essential || over <= 0 {
			continue
		}
		if word := parts[i].text; parts[i].importance == wordImportance {
			if short := word.fit(word.span().width() - over); len(short.runes) > minWordLetters {
				parts[i].text = short
				break
			}
		}
		keep[i] = false
		break
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

// formatUptime is short, in its largest whole unit: "45m", "3h", "12d".
// Short, it leaves room for the other figures; whole hours and days, it
// changes the frame once an hour rather than every minute, and each change
// is an e-ink refresh.
func formatUptime(d time.Duration) string {
	switch {
	case d < time.Hour:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh", d/time.Hour)
	default:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
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
