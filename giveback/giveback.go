package giveback

import (
	"runtime/debug"
	"sync"
	"time"
)

// quiet is how long a process goes without another ask before WhenQuiet
// gives its memory back: the asks of one turn (the
// broker's at its answer, core's at the turn's end, the panel's at each
// frame) come within it.
const quiet = 500 * time.Millisecond

var pending struct {
	mu    sync.Mutex
	timer *time.Timer
}

// WhenQuiet returns the memory the garbage collector holds to the
// kernel (debug.FreeOSMemory, a whole collection) once no ask came for
// quiet. A part of the pet asks when it goes idle; under `shelldon
// up`, where core, the broker and the panel share one heap, their asks of
// one turn make one collection rather than one each.
func WhenQuiet() {
	pending.mu.Lock()
	defer pending.mu.Unlock()
	if pending.timer == nil {
		pending.timer = time.AfterFunc(quiet, debug.FreeOSMemory)
		return
	}
	pending.timer.Reset(quiet)
}
