package giveback

import (
	"errors"
	"slices"
	"testing"
	"time"

	"shelldon/clock"
)

// realRelease is the release the package makes, before a test counts
// releases instead.
var realRelease = release

// onAFakeClock runs giveback's waits on a fake clock for the test, with
// nothing pending, and counts the releases (letGo's) instead of making
// them; it gives back the real clock and the real release after.
func onAFakeClock(t *testing.T) (fake *clock.Fake, releases *int) {
	stopPending()
	fake = clock.NewFake(time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC))
	releases = new(int)
	timers, release = fake, func() { *releases++ }
	reset := func() {
		stopPending()
		pending.mu.Lock()
		pending.collect, pending.pages, pending.releaseAhead, pending.busy = nil, nil, false, false
		pending.mu.Unlock()
	}
	reset()
	t.Cleanup(func() {
		reset()
		timers, release = clock.Real{}, realRelease
	})
	return fake, releases
}

// TestAChoreDoesNotPutOffTheRelease: core's minute check, or the panel's
// minute redraw, 10 s after a turn's end leaves the release where the
// turn put it, longQuiet after the turn; before, each chore re-armed it
// for another longQuiet, and a pet whose chores came closer than that
// never let go.
func TestAChoreDoesNotPutOffTheRelease(t *testing.T) {
	fake, releases := onAFakeClock(t)
	WhenQuiet() // a turn's end
	fake.Advance(10 * time.Second)
	AfterChore()
	fake.Advance(longQuiet - 10*time.Second)
	if *releases != 1 {
		t.Errorf("longQuiet after the turn's end, with a chore 10 s in, %d releases came, want 1", *releases)
	}
}

// TestAChoreOfAReleasedPetIsReleasedWhenQuiet: a chore that finds the pet
// already released (no turn for longer than longQuiet) hands back what it
// touched once it is done, choreQuiet later, not longQuiet later: core's
// check comes every minute, so waiting longQuiet held the pages a third of
// every idle minute. A second chore within choreQuiet (the watchdog's ping
// beside the minute check) shares the release.
func TestAChoreOfAReleasedPetIsReleasedWhenQuiet(t *testing.T) {
	fake, releases := onAFakeClock(t)
	WhenQuiet()
	fake.Advance(longQuiet)
	if *releases != 1 {
		t.Fatalf("longQuiet after the turn's end, %d releases came, want 1", *releases)
	}
	fake.Advance(time.Minute)
	// What a chore maps is held at most this long (up to 3 MB at a
	// moment, BENCHMARKS.md); it was half a second.
	const heldAtMost = 50 * time.Millisecond
	AfterChore()
	fake.Advance(heldAtMost / 2)
	AfterChore()
	fake.Advance(heldAtMost / 2)
	if *releases != 2 {
		t.Fatalf("%v after a chore of a released pet, %d releases came in all, want 2", heldAtMost, *releases)
	}
	fake.Advance(choreQuiet)
	if *releases != 2 {
		t.Errorf("a second chore within choreQuiet of the first made a release of its own (%d in all, want 2)", *releases)
	}
}

// TestAChoreDuringWorkLeavesItsGivebackAlone: a chore while a part of the
// process is busy (under `shelldon up`, core's check while the broker
// runs a job) releases nothing mid-work: the work's giveback covers the
// chore's pages.
func TestAChoreDuringWorkLeavesItsGivebackAlone(t *testing.T) {
	fake, releases := onAFakeClock(t)
	Busy()
	AfterChore()
	fake.Advance(quiet)
	if *releases != 0 {
		t.Errorf("quiet after a chore during work, %d releases came, want 0", *releases)
	}
}

// TestAReleaseRunsWhatAlsoReleaseAdded: the release that longQuiet brings
// returns, besides the heap and the binary's pages, what a process holds
// outside the Go heap (core's SQLite cache and allocator), in the order
// added and before the binary's pages; a step that fails keeps none after
// it from running, and a step removed runs no more.
func TestAReleaseRunsWhatAlsoReleaseAdded(t *testing.T) {
	fake, _ := onAFakeClock(t)
	release = realRelease
	var ran []string
	steps.mu.Lock()
	saved := steps.added
	savedLast := steps.last
	steps.added, steps.last = nil, func() error { ran = append(ran, "the program's pages"); return nil }
	steps.mu.Unlock()
	t.Cleanup(func() {
		steps.mu.Lock()
		steps.added, steps.last = saved, savedLast
		steps.mu.Unlock()
	})
	AlsoRelease(func() error { ran = append(ran, "first"); return errors.New("held on") })
	removeSecond := AlsoRelease(func() error { ran = append(ran, "second"); return nil })
	AlsoRelease(func() error { ran = append(ran, "third"); return nil })
	WhenQuiet()
	fake.Advance(longQuiet - time.Millisecond)
	if len(ran) != 0 {
		t.Fatalf("before longQuiet the steps ran: %q", ran)
	}
	fake.Advance(time.Millisecond)
	// The program's pages go last: every step before runs the program's
	// code, and would map back what an earlier unmapping let go.
	if want := []string{"first", "second", "third", "the program's pages"}; !slices.Equal(ran, want) {
		t.Errorf("at longQuiet the steps ran %q, want %q", ran, want)
	}
	ran = nil
	removeSecond()
	WhenQuiet()
	fake.Advance(longQuiet)
	if want := []string{"first", "third", "the program's pages"}; !slices.Equal(ran, want) {
		t.Errorf("after the second step was removed, the release ran %q, want %q", ran, want)
	}
}
