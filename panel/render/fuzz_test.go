package render

import (
	"math"
	"testing"
	"time"
)

// FuzzRender renders any strings and numbers: it must not panic and must
// keep the frame's size and margins.
func FuzzRender(f *testing.F) {
	f.Add("(^‿^)", typicalCaption, "shelldon", "curious", int64(3*time.Hour), 7, int64(23<<20), false)
	f.Add("", "", "", "", int64(0), 0, int64(0), true)
	f.Add("(\x00\xff\n)", "\x1b[2J\r\n\t\u202e\U0001F600", "\xc3", "\u200d", int64(-1), -5, int64(-1), true)
	f.Add("█████████████████████████", "W W W W W W W W W W W W W W W W W W W W W W W W W W W W W W W W", "Ὗ", "Ἧ", int64(1<<62), math.MaxInt32, int64(1<<62), false)
	f.Fuzz(func(t *testing.T, face, caption, name, word string, uptime int64, turns int, memory int64, away bool) {
		scene := Scene{
			Face:    face,
			Caption: caption,
			Status:  Status{Name: name, Word: word, Away: away, Figures: &Figures{Uptime: time.Duration(uptime), TurnsToday: turns, Memory: memory}},
		}
		checkMargins(t, scene, Render(scene))
	})
}
