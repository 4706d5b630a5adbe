package giveback

import (
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
)

// quiet is how long a process goes without another ask before WhenQuiet
// gives its memory back: the asks of one turn (the
// broker's at its answer, core's at the turn's end, the panel's at each
// frame) come within it.
const quiet = 500 * time.Millisecond

// longQuiet is how long a process goes without another ask before
// WhenQuiet also lets go of the pages of its binary it has mapped
// (unmapProgramPages). The next turn maps back what it runs, at a cost of
// about 2 ms of CPU in each process on x86-64 (BENCHMARKS.md); the turns
// of one exchange, which come closer together than this, do not pay it,
// and the panel, which redraws every minute, lets go again after each.
const longQuiet = 20 * time.Second

var pending struct {
	mu             sync.Mutex
	collect, pages *time.Timer
}

// WhenQuiet returns the memory the garbage collector holds to the
// kernel (debug.FreeOSMemory, a whole collection) once no ask came for
// quiet, and the process's hold on its binary's pages once none came for
// longQuiet. A part of the pet asks when it goes idle; under `shelldon
// up`, where core, the broker and the panel share one heap, their asks of
// one turn make one collection rather than one each.
func WhenQuiet() {
	pending.mu.Lock()
	defer pending.mu.Unlock()
	if pending.collect == nil {
		pending.collect = time.AfterFunc(quiet, debug.FreeOSMemory)
		pending.pages = time.AfterFunc(longQuiet, releaseProgramPages)
		return
	}
	pending.collect.Reset(quiet)
	pending.pages.Reset(longQuiet)
}

// releaseProgramPages is unmapProgramPages for a timer: a process that
// cannot read its own mappings keeps them, and says why.
func releaseProgramPages() {
	if err := unmapProgramPages(); err != nil {
		slog.Warn("giveback: keeping this program's pages mapped", "err", err)
	}
}
