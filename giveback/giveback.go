package giveback

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"time"

	"shelldon/clock"
)

// quiet is how long a process goes without another ask before WhenQuiet
// collects the garbage its work left: the asks of one turn (the broker's
// at its answer, core's at the turn's end, the panel's at each frame)
// come within it.
const quiet = 500 * time.Millisecond

// longQuiet is how long a process goes without another ask before
// WhenQuiet returns the memory the collector holds free to the kernel and
// lets go of the pages of its binary it has mapped (unmapProgramPages).
// The turns of one exchange, which come closer together than this, pay
// neither: the next turn would fault the heap's pages back in, and map
// back the code it runs, at a cost of about 2 ms of CPU in each process
// on x86-64 (BENCHMARKS.md). The panel, which redraws every minute, lets
// go again after each.
const longQuiet = 20 * time.Second

// choreQuiet is how long after a chore of a process that had let go what
// the chore mapped goes back. A chore says it is done at its end
// (AfterChore), so the wait is only for the chores that come together:
// core's minute check and its watchdog's ping, a few milliseconds apart
// every minute, release once. What a chore maps is held that long, up to
// 3 MB for a moment (core's return to the mood's face and the panel's
// drawing of it, BENCHMARKS.md): a twentieth of a second, not half.
const choreQuiet = 50 * time.Millisecond

// idlePercent is the collector's GOGC in a long-lived process between
// turns: half Go's default heap growth, which also halves the 4 MB heap
// the runtime lets a small process reach before its first collection,
// about 1.5 MB less PSS for each of core, the broker and the panel for a
// few more collections of a heap that stays small (BENCHMARKS.md).
// busyPercent is its GOGC from Busy to the giveback: a turn's garbage
// (about 1 MB in core) would pass the idle heap goal and pay a
// collection mid-turn besides the giveback's; at busyPercent the one
// collection of the turn is the giveback's.
const (
	idlePercent = 50
	busyPercent = 200
)

// littleGarbage is how much a process may allocate after a giveback's
// collection for the next giveback to skip its own: what it holds then
// is within littleGarbage of what the last one left, and a forced
// collection costs the same whatever little it frees. The release at
// longQuiet collects besides, so the idle process holds no more than
// before.
const littleGarbage = 256 << 10

// pending is what is due once the process goes quiet; collector, under
// the same lock, is whether TuneCollector took charge of GOGC and whether
// Busy has raised it, and given is whether a giveback collected yet, the
// bytes the process had allocated in all (/gc/heap/allocs:bytes) just
// after, and whether a giveback came since the last release.
var (
	pending struct {
		mu             sync.Mutex
		collect, pages clock.Timer
		// releaseAhead is whether a release is armed (WhenQuiet's at
		// longQuiet, AfterChore's at quiet) that has not come yet; busy
		// is whether a Busy is waiting for its giveback.
		releaseAhead, busy bool
	}
	collector struct{ tuned, raised bool }
	given     struct {
		collected, unreleased bool
		allocated             uint64
	}
)

// TuneCollector makes giveback decide the collector's GOGC, idlePercent
// from now on and busyPercent from Busy to the next giveback, for a
// process that runs for months (core, the broker, the panel, or all in
// one under `shelldon up`). A GOGC in the environment is the owner's and
// wins: then giveback leaves the collector alone. It takes charge afresh:
// the collector is at idlePercent until the next Busy, even if one came
// before.
func TuneCollector() {
	if os.Getenv("GOGC") != "" {
		return
	}
	pending.mu.Lock()
	defer pending.mu.Unlock()
	collector.tuned, collector.raised = true, false
	debug.SetGCPercent(idlePercent)
}

// Busy says a part of the process starts work (core a turn, the broker a
// job, the panel a new face): the collector lets the heap grow at
// busyPercent (when TuneCollector took charge) until the giveback that
// follows, which collects what the work left at once, and no chore
// releases meanwhile. A Busy no ask follows (a snapshot the panel does
// not draw) still ends in a giveback, after longQuiet.
func Busy() {
	pending.mu.Lock()
	defer pending.mu.Unlock()
	pending.busy = true
	arm(&pending.collect, longQuiet, giveBack)
	if !collector.tuned {
		return
	}
	if !collector.raised {
		collector.raised = true
		debug.SetGCPercent(busyPercent)
	}
}

// WhenQuiet collects the garbage the process's work left once no ask
// came for quiet, and returns the memory the collector holds free to the
// kernel, with the process's hold on its binary's pages, once none came
// for longQuiet. A part of the pet asks when it goes idle; under
// `shelldon up`, where core, the broker and the panel share one heap,
// their asks of one turn make one collection rather than one each.
func WhenQuiet() {
	pending.mu.Lock()
	defer pending.mu.Unlock()
	arm(&pending.collect, quiet, giveBack)
	arm(&pending.pages, longQuiet, letGo)
	pending.releaseAhead = true
}

// timers is the clock giveback's waits run on; tests use a fake one.
var timers clock.Clock = clock.Real{}

// AfterChore says a background chore is done, work the process does by
// its own timer rather than for a turn (core's minute check, the panel's
// minute redraw, a status strip's new figure): what the chore touched
// goes back choreQuiet from now if the process had let go already, and a
// release already ahead stays where it is, so that chores closer
// together than longQuiet never keep an idle process from letting go.
// During work (a Busy not yet given back) the work's giveback covers the
// chore.
func AfterChore() {
	pending.mu.Lock()
	defer pending.mu.Unlock()
	if pending.releaseAhead || pending.busy {
		return
	}
	given.unreleased = true // the chore's garbage, collected by the release
	arm(&pending.pages, choreQuiet, letGo)
	pending.releaseAhead = true
}

// arm makes *timer run f after d, from now, in place of what it was to
// run.
func arm(timer *clock.Timer, d time.Duration, f func()) {
	if *timer != nil {
		(*timer).Stop()
	}
	*timer = timers.AfterFunc(d, f)
}

// giveBack puts the idle GOGC back after Busy and collects the garbage
// the work left, unless the process allocated less than littleGarbage
// since the last collection. The heap's pages it frees stay mapped until
// the release at longQuiet (the runtime's scavenger returns some
// meanwhile), for the next turn of an exchange to use without faulting
// them in afresh. A giveback with no release ahead, Busy's after
// longQuiet when no ask followed it, releases at once.
func giveBack() {
	pending.mu.Lock()
	pending.busy = false
	if collector.raised {
		collector.raised = false
		debug.SetGCPercent(idlePercent)
	}
	given.unreleased = true
	releaseNow := !pending.releaseAhead
	little := given.collected && heapAllocated()-given.allocated < littleGarbage
	pending.mu.Unlock()
	switch {
	case releaseNow:
		releaseHeap()
	case !little:
		collect(runtime.GC)
	}
}

// letGo is what longQuiet brings: the heap's free memory and the
// binary's pages go back to the kernel.
func letGo() {
	pending.mu.Lock()
	pending.releaseAhead = false
	pending.mu.Unlock()
	release()
}

// release returns the heap's free memory, then runs the release's steps:
// the binary's pages, and what AlsoRelease added. Tests count releases
// instead; returning a test binary's pages is programpages_test.go's.
var release = func() {
	releaseHeap()
	releaseSteps()
}

// steps is what a release returns besides the heap: what AlsoRelease
// added, then, last, the pages of the binary the process has mapped, as
// every step before it runs code of the binary.
var steps = struct {
	mu    sync.Mutex
	added []*func() error
	last  func() error
}{last: releaseProgramPages}

// AlsoRelease adds step to what the process returns when it lets go
// (after longQuiet, and after a chore once it had let go): memory held
// outside the Go heap, which the collector cannot return (core: SQLite's
// page cache and allocator, state.Store.ReleaseMemory). A step that fails
// is logged and the release goes on. remove takes step out again, for
// what step holds on to ends (core's store closes).
func AlsoRelease(step func() error) (remove func()) {
	steps.mu.Lock()
	defer steps.mu.Unlock()
	added := &step
	steps.added = append(steps.added, added)
	return func() {
		steps.mu.Lock()
		defer steps.mu.Unlock()
		// A copy: a release running meanwhile ranges over the old one.
		steps.added = slices.DeleteFunc(slices.Clone(steps.added), func(s *func() error) bool { return s == added })
	}
}

// releaseSteps runs the release's steps in order.
func releaseSteps() {
	steps.mu.Lock()
	added, last := steps.added, steps.last
	steps.mu.Unlock()
	run := func(step func() error) {
		if err := step(); err != nil {
			slog.Warn("giveback: a release kept something", "err", err)
		}
	}
	for _, step := range added {
		run(*step)
	}
	if last != nil {
		run(last)
	}
}

// releaseHeap returns the memory the collector holds free to the kernel
// (debug.FreeOSMemory, a whole collection first) if a giveback came since
// it last did, so that the idle process holds none of the garbage it left
// nor the pages that garbage took.
func releaseHeap() {
	pending.mu.Lock()
	owed := given.unreleased
	given.unreleased = false
	pending.mu.Unlock()
	if owed {
		collect(debug.FreeOSMemory)
	}
}

// collect runs a whole collection (runtime.GC, or debug.FreeOSMemory,
// which also returns the free memory) outside the lock: a turn starting
// meanwhile (Busy) does not wait for it.
func collect(collection func()) {
	collection()
	allocated := heapAllocated()
	pending.mu.Lock()
	given.collected, given.allocated = true, allocated
	pending.mu.Unlock()
}

// heapAllocated is how many bytes the process has allocated on its heap
// in all.
func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// releaseProgramPages is unmapProgramPages as a release step: a process
// that cannot read its own mappings keeps them, and says why.
func releaseProgramPages() error {
	if err := unmapProgramPages(); err != nil {
		return fmt.Errorf("keeping this program's pages mapped: %w", err)
	}
	return nil
}
