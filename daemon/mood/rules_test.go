package mood

import (
	"testing"

	"shelldon/panel/moment"
)

// TestEveryMoodSpeaksToTheOwner: the panel's idle frame for each mood
// shows the mood's own face under a line of words for the owner, never
// the default face or an empty caption.
func TestEveryMoodSpeaksToTheOwner(t *testing.T) {
	for _, r := range rules {
		if got := moment.Idle(r.mood); got.Face != r.mood || got.Word != r.mood || got.Caption == "" {
			t.Errorf("moment.Idle(%q) = %+v, want the %s face and word with a caption", r.mood, got, r.mood)
		}
	}
}
