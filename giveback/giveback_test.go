package giveback

import (
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"shelldon/clock"
)

// forcedCollections is how many collections this process was made to
// run (debug.FreeOSMemory and runtime.GC count).
func forcedCollections() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// sink keeps what allocateGarbage allocates from being optimized away.
var sink []byte

// allocateGarbage allocates n bytes that are garbage at once.
func allocateGarbage(n int) {
	for range n / 4096 {
		sink = make([]byte, 4096)
	}
	sink = nil
}

// givenBack asks WhenQuiet once and says how many forced collections
// followed, given the time for one and any more.
func givenBack() uint64 {
	before := forcedCollections()
	WhenQuiet()
	for deadline := time.Now().Add(quiet + 3*time.Second); forcedCollections() == before && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(2 * quiet) // room for any collection more
	return forcedCollections() - before
}

// TestWhenQuietCollectsOnceForABurst: the asks of one turn (the
// broker's, core's, the panel's frames) make one collection, after they
// stop.
func TestWhenQuietCollectsOnceForABurst(t *testing.T) {
	allocateGarbage(2 * littleGarbage)
	before := forcedCollections()
	for range 5 {
		WhenQuiet()
	}
	deadline := time.Now().Add(10 * time.Second)
	for forcedCollections() == before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(2 * quiet) // room for any collection more
	if got := forcedCollections() - before; got != 1 {
		t.Errorf("five asks in a burst made %d forced collections, want 1", got)
	}
}

// TestLittleGarbageIsNotCollectedAgain: a giveback after less than
// littleGarbage allocated since the last one's collection skips its own
// (the heap is as that one left it, but for that little), and one after
// more collects.
func TestLittleGarbageIsNotCollectedAgain(t *testing.T) {
	allocateGarbage(2 * littleGarbage)
	if got := givenBack(); got != 1 {
		t.Fatalf("a giveback after %d bytes of garbage made %d forced collections, want 1", 2*littleGarbage, got)
	}
	if got := givenBack(); got != 0 {
		t.Errorf("a giveback after next to no garbage made %d forced collections, want 0", got)
	}
	allocateGarbage(2 * littleGarbage)
	if got := givenBack(); got != 1 {
		t.Errorf("a giveback after %d bytes of garbage made %d forced collections, want 1", 2*littleGarbage, got)
	}
}

// TestTheHeapIsReleasedWhenLongQuiet: the giveback at quiet collects
// but returns nothing to the kernel itself, so the next turn of an
// exchange finds the heap's pages mapped; the release at longQuiet
// returns what the collector holds free (letGo's other half, dropping
// the binary's pages, is left to programpages_test.go: under
// qemu-arm-static, make test-cross, a collection after it reads the test
// binary's read-only data as zeros, which a real kernel's file-backed
// pages never are).
func TestTheHeapIsReleasedWhenLongQuiet(t *testing.T) {
	givenBackAfterAPile(true) // WhenQuiet's release ahead
	if free := heapFree(); free < pile/2 {
		t.Errorf("after the giveback at quiet the collector holds %d bytes free and mapped, want most of the %d bytes of garbage it collected kept for the next turn", free, pile)
	}
	before := forcedCollections()
	releaseHeap()
	if got := forcedCollections() - before; got != 1 {
		t.Errorf("longQuiet after a giveback made %d forced collections, want 1 (the release's)", got)
	}
	if free := heapFree(); free > pile/4 {
		t.Errorf("after the release the collector still holds %d bytes free and mapped, want the garbage's returned", free)
	}
	before = forcedCollections()
	releaseHeap()
	if got := forcedCollections() - before; got != 0 {
		t.Errorf("longQuiet with no giveback since the last release made %d forced collections, want 0", got)
	}
}

// pile is the garbage givenBackAfterAPile leaves for the giveback.
const pile = 128 * littleGarbage

// givenBackAfterAPile runs a giveback, with or without a release ahead,
// after pile bytes of garbage that no collection touched on the way: all
// of it is the giveback's, whatever earlier tests left free. The timers
// earlier tests armed are stopped first.
func givenBackAfterAPile(releaseAhead bool) {
	stopPending()
	pending.mu.Lock()
	pending.releaseAhead = releaseAhead
	pending.mu.Unlock()
	percent := debug.SetGCPercent(-1)
	allocateGarbage(pile)
	debug.SetGCPercent(percent)
	giveBack()
}

// TestABusyNoAskFollowedReleasesAtOnce: a Busy that no ask followed (a
// snapshot the panel did not draw) ends in a giveback after longQuiet
// with no release armed behind it; that giveback returns the heap itself.
func TestABusyNoAskFollowedReleasesAtOnce(t *testing.T) {
	givenBackAfterAPile(false) // as after the last release, or before any ask
	if free := heapFree(); free > pile/4 {
		t.Errorf("a giveback with no release ahead left %d bytes free and mapped, want the garbage's returned", free)
	}
}

// TestASkippedCollectionIsMadeUpWhenLongQuiet: a giveback that skipped
// its collection after little garbage still leaves the release at
// longQuiet to do, which collects it.
func TestASkippedCollectionIsMadeUpWhenLongQuiet(t *testing.T) {
	stopPending()
	allocateGarbage(2 * littleGarbage)
	givenBack()
	releaseHeap()
	if got := givenBack(); got != 0 {
		t.Fatalf("a giveback after next to no garbage made %d forced collections, want 0", got)
	}
	before := forcedCollections()
	releaseHeap()
	if got := forcedCollections() - before; got != 1 {
		t.Errorf("longQuiet after a giveback that skipped its collection made %d forced collections, want 1", got)
	}
}

// stopPending stops the givebacks earlier tests armed (WhenQuiet's and
// Busy's timers), which would otherwise run while a later test measures.
func stopPending() {
	pending.mu.Lock()
	defer pending.mu.Unlock()
	for _, timer := range []clock.Timer{pending.collect, pending.pages} {
		if timer != nil {
			timer.Stop()
		}
	}
}

// gcPercent and heapGoal are the collector's GOGC and the heap size at
// which it collects next.
func gcPercent() uint64 { return readMetric("/gc/gogc:percent") }
func heapGoal() uint64  { return readMetric("/gc/heap/goal:bytes") }

// heapFree is the memory the collector holds free and has not returned
// to the kernel.
func heapFree() uint64 { return readMetric("/memory/classes/heap/free:bytes") }

func readMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestBusyGrowsTheHeapGoalUntilTheGiveback: between Busy and the
// giveback the collector lets the heap grow to the busy percent, so a
// turn's garbage waits for the giveback's collection rather than paying
// one of its own mid-turn; the giveback puts the idle percent back.
func TestBusyGrowsTheHeapGoalUntilTheGiveback(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Cleanup(func() { debug.SetGCPercent(100) })
	TuneCollector()
	t.Cleanup(func() { collector.tuned = false })
	if got := gcPercent(); got != idlePercent {
		t.Fatalf("GOGC after TuneCollector = %d, want %d", got, idlePercent)
	}
	idleGoal := heapGoal()
	Busy()
	if got, goal := gcPercent(), heapGoal(); got != busyPercent || goal <= idleGoal {
		t.Errorf("busy: GOGC %d and heap goal %d bytes, want %d and more than the idle goal %d", got, goal, busyPercent, idleGoal)
	}
	givenBack()
	if got := gcPercent(); got != idlePercent {
		t.Errorf("GOGC after the giveback = %d, want %d", got, idlePercent)
	}
}

// TestAGOGCInTheEnvironmentWins: an owner's GOGC is the collector's,
// busy or not.
func TestAGOGCInTheEnvironmentWins(t *testing.T) {
	t.Setenv("GOGC", "100")
	t.Cleanup(func() { debug.SetGCPercent(100) })
	TuneCollector()
	t.Cleanup(func() { collector.tuned = false })
	Busy()
	if got := gcPercent(); got != 100 {
		t.Errorf("GOGC = %d with GOGC=100 in the environment, want 100", got)
	}
}
