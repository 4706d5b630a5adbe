package broker

import (
	"strings"
	"sync"
	"time"

	"shelldon/clock"
)

// DraftInterval is the least time between two drafts of one job's
// answer: a model writes tens of tokens a second, an owner reads a few
// words, and each draft costs a frame on the bus and, on Telegram, an
// API call.
const DraftInterval = 250 * time.Millisecond

// drafts passes a streamed answer's text so far on, coalesced: at most
// one draft each DraftInterval, the latest text, and only when what an
// owner may see of it ([draftText]) grew or changed. A text that comes within the
// interval waits for its end, so the last words before a pause are
// not held back until the next chunk. It is safe for concurrent use.
type drafts struct {
	clock clock.Clock
	send  func(text string)

	mu      sync.Mutex
	pending string // the latest text, not yet looked at
	sent    string // the last draft sent, as draftText made it
	last    time.Time
	timer   clock.Timer // set while a draft waits for the interval's end
	stopped bool
}

func newDrafts(c clock.Clock, send func(text string)) *drafts {
	return &drafts{clock: c, send: send}
}

// offer takes the text so far.
func (d *drafts) offer(text string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return
	}
	d.pending = text
	if d.timer != nil {
		return // a draft is due at the interval's end; it takes this text
	}
	if wait := DraftInterval - d.clock.Now().Sub(d.last); wait > 0 {
		d.timer = d.clock.AfterFunc(wait, d.due)
		return
	}
	d.flush()
}

// due sends the text that waited for the interval's end.
func (d *drafts) due() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.timer = nil
	if !d.stopped {
		d.flush()
	}
}

// flush sends the pending text if it shows something new: more than the
// last draft, or another text (the chain's next try, or reasoning whose
// closing tag came without an opening one, now cut). Less of the same
// (a tag's start held back) is nothing new. The lock is held while it
// sends, so drafts go out in order and none after stop.
func (d *drafts) flush() {
	text := draftText(d.pending)
	if strings.HasPrefix(d.sent, text) {
		return
	}
	d.sent, d.last = text, d.clock.Now()
	d.send(text)
}

// stop ends the drafts: none is sent after it returns.
func (d *drafts) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = true
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}
