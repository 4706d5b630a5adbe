package panel

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"shelldon/clock"
	"shelldon/panel/render"
)

// Policy is how a slow e-ink display is refreshed.
type Policy struct {
	// FullEvery forces a full refresh after this many partial ones, and
	// FullAfter once the last full refresh is this old: partial refreshes
	// leave ghosts that only a full one clears.
	FullEvery int
	FullAfter time.Duration
	// SleepAfter powers the display down once no frame came for this long.
	SleepAfter time.Duration
}

// bigChange is the share of the frame above which a change is refreshed
// in full: a partial refresh of most of the panel ghosts as much as a full
// one flashes.
const bigChange = 0.6

// Counts are what a panel did, for the logs, the tests and the
// benchmarks: the frames it drew, and what its refresh policy did with
// them.
type Counts struct {
	Drawn, Full, Partial, Unchanged, Sleeps int
}

// refresher sends frames to a display by the policy. It is safe for use by
// the actor's goroutines and its own sleep timer.
type refresher struct {
	display Display
	policy  Policy
	clock   clock.Clock
	log     *slog.Logger

	mu    sync.Mutex
	shown *render.Frame // the frame on the display; nil before the first
	// shownLook is what the scene of the frame shown looked like.
	shownLook render.Look
	partials  int // since the last full refresh
	lastFull  time.Time
	asleep    bool
	sleep     clock.Timer
	counts    Counts
}

// show draws scene and sends the frame unless it is what the display
// shows: a scene that looks as the one shown is not even drawn, and a
// frame that came out the same is not sent. A failed frame is not taken
// as shown, so the next one is compared with what really is there.
func (r *refresher) show(scene render.Scene) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	look := scene.Look()
	if r.shown != nil && look == r.shownLook {
		r.counts.Unchanged++
		return nil
	}
	f := render.Render(scene)
	r.counts.Drawn++
	if r.shown != nil && f.Equal(r.shown) {
		r.shownLook = look
		r.counts.Unchanged++
		return nil
	}
	now := r.clock.Now()
	full := r.shown == nil || r.asleep ||
		r.partials >= r.policy.FullEvery ||
		now.Sub(r.lastFull) >= r.policy.FullAfter ||
		changedShare(f, r.shown) > bigChange
	if err := r.display.Show(f, !full); err != nil {
		return fmt.Errorf("show a frame on %s: %w", r.display.Name(), err)
	}
	r.shown, r.shownLook, r.asleep = f, look, false
	if full {
		r.partials, r.lastFull = 0, now
		r.counts.Full++
	} else {
		r.partials++
		r.counts.Partial++
	}
	if r.sleep != nil {
		r.sleep.Stop()
	}
	r.sleep = r.clock.AfterFunc(r.policy.SleepAfter, r.doze)
	return nil
}

// doze puts the display to sleep; the next frame wakes it with a full
// refresh. It comes by its own timer, long after the last frame: a chore.
func (r *refresher) doze() {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer afterChore()
	if r.asleep {
		return
	}
	if err := r.display.Sleep(); err != nil {
		r.log.Warn("panel: the display would not sleep", "display", r.display.Name(), "err", err)
		return
	}
	r.asleep = true
	r.counts.Sleeps++
}

// stats returns what the refresher did so far.
func (r *refresher) stats() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}

// stop cancels the sleep timer.
func (r *refresher) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sleep != nil {
		r.sleep.Stop()
	}
}

// changedShare is the part of the frame, 0 to 1, inside the rectangle of
// what changed from before (everything when there is no before).
func changedShare(f, before *render.Frame) float64 {
	if before == nil {
		return 1
	}
	r := f.Changed(before)
	b := f.Bounds()
	return float64(r.Dx()*r.Dy()) / float64(b.Dx()*b.Dy())
}
