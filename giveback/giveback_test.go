package giveback

import (
	"runtime/metrics"
	"testing"
	"time"
)

// forcedCollections is how many collections this process was made to
// run (debug.FreeOSMemory and runtime.GC count).
func forcedCollections() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestWhenQuietCollectsOnceForABurst: the asks of one turn (the
// broker's, core's, the panel's frames) make one collection, after they
// stop.
func TestWhenQuietCollectsOnceForABurst(t *testing.T) {
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
