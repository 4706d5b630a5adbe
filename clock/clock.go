package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and schedules callbacks.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a scheduled callback.
type Timer interface {
	// Stop cancels the callback; it reports whether it was still pending.
	Stop() bool
}

// Real is the system clock.
type Real struct{}

// Now implements [Clock].
func (Real) Now() time.Time { return time.Now() }

// AfterFunc implements [Clock].
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Fake is a clock that moves only when told to. Callbacks due by an
// [Fake.Advance] run synchronously inside it, in due order.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

// NewFake returns a fake clock reading start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

type fakeTimer struct {
	c       *Fake
	due     time.Time
	f       func()
	stopped bool
}

// Now implements [Clock].
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc implements [Clock].
func (c *Fake) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, due: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// Stop implements [Timer].
func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.stopped {
		return false
	}
	t.stopped = true
	return true
}

// Next says how far ahead the first pending callback is due, and false
// when none is: a test waits for the code under test to schedule one.
func (c *Fake) Next() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first *fakeTimer
	for _, t := range c.timers {
		if !t.stopped && (first == nil || t.due.Before(first.due)) {
			first = t
		}
	}
	if first == nil {
		return 0, false
	}
	return first.due.Sub(c.now), true
}

// Step sets the clock's reading d on, forward or back, as an operator or
// NTP steps a wall clock: no callback runs, and those waiting keep what
// is left of their waits, as Go's timers, which run on the monotonic
// clock, do. Only what was computed from a reading moves.
func (c *Fake) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.timers {
		t.due = t.due.Add(d)
	}
}

// Advance moves the clock forward by d and runs every callback that fell due.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	keep := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.due.After(c.now):
			t.stopped = true
			due = append(due, t)
		default:
			keep = append(keep, t)
		}
	}
	c.timers = keep
	c.mu.Unlock()
	sort.SliceStable(due, func(i, j int) bool { return due[i].due.Before(due[j].due) })
	for _, t := range due {
		t.f()
	}
}
