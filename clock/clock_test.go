package clock

import (
	"slices"
	"testing"
	"time"
)

func TestFakeRunsDueCallbacksInOrder(t *testing.T) {
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	c := NewFake(start)
	var fired []string
	c.AfterFunc(3*time.Second, func() { fired = append(fired, "3s") })
	c.AfterFunc(time.Second, func() { fired = append(fired, "1s") })
	stopped := c.AfterFunc(2*time.Second, func() { fired = append(fired, "2s") })
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop() should report true once, then false")
	}
	if d, ok := c.Next(); !ok || d != time.Second {
		t.Errorf("Next() = %v, %v, want 1s, true (the stopped 2s left out)", d, ok)
	}
	c.Advance(999 * time.Millisecond)
	if len(fired) != 0 {
		t.Fatalf("fired %v before anything was due", fired)
	}
	c.Advance(5 * time.Second)
	if want := []string{"1s", "3s"}; !slices.Equal(fired, want) {
		t.Errorf("fired %v, want %v", fired, want)
	}
	if got := c.Now(); !got.Equal(start.Add(5999 * time.Millisecond)) {
		t.Errorf("Now() = %v", got)
	}
	if d, ok := c.Next(); ok {
		t.Errorf("Next() = %v, true after every callback fired, want false", d)
	}
	c.Advance(time.Hour)
	if len(fired) != 2 {
		t.Errorf("a callback fired twice: %v", fired)
	}
}

func TestRealClock(t *testing.T) {
	done := make(chan struct{})
	Real{}.AfterFunc(time.Millisecond, func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Real.AfterFunc never fired")
	}
}
