package broker

import (
	"strings"
	"testing"
	"time"

	"shelldon/clock"
)

// TestDraftsAreCoalesced: the first text goes at once; what comes within
// DraftInterval waits for its end and goes as the latest text; less of
// the same (a tag held back, reasoning) is not sent, another text is;
// nothing goes after stop.
func TestDraftsAreCoalesced(t *testing.T) {
	c := clock.NewFake(time.Unix(0, 0))
	var sent []string
	d := newDrafts(c, func(text string) { sent = append(sent, text) })
	d.offer("It")
	d.offer("It is")
	d.offer("It is sunny")
	c.Advance(DraftInterval / 2)
	d.offer("It is sunny in")
	c.Advance(DraftInterval / 2)
	d.offer("It is sunny in<thi") // the same, a tag held back
	c.Advance(DraftInterval)
	d.offer("Another try")
	d.offer("Another try<think>longer") // within the interval: it waits
	c.Advance(DraftInterval)            // and is the same
	c.Advance(DraftInterval)
	d.offer("Another try, then")
	d.offer("Another try, then more") // within the interval, and stopped
	d.stop()
	c.Advance(DraftInterval)
	d.offer("Another try, then more, late")
	want := []string{"It", "It is sunny in", "Another try", "Another try, then"}
	if strings.Join(sent, "|") != strings.Join(want, "|") {
		t.Errorf("drafts sent %q, want %q", sent, want)
	}
}
