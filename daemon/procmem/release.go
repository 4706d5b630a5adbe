package procmem

import (
	"runtime/debug"
	"sync"
	"time"
)

// releaseQuiet is how long a process goes without another ask before
// ReleaseWhenQuiet gives its memory back: the asks of one turn (the
// broker's at its answer, core's at the turn's end, the panel's at each
// frame) come within it.
const releaseQuiet = 500 * time.Millisecond

var release struct {
	mu    sync.Mutex
	timer *time.Timer
}

// ReleaseWhenQuiet returns the memory the garbage collector holds to the
// kernel (debug.FreeOSMemory, a whole collection) once no ask came for
// releaseQuiet. A part of the pet asks when it goes idle; under `shelldon
// up`, where core, the broker and the panel share one heap, their asks of
// one turn make one collection rather than one each.
func ReleaseWhenQuiet() {
	release.mu.Lock()
	defer release.mu.Unlock()
	if release.timer == nil {
		release.timer = time.AfterFunc(releaseQuiet, debug.FreeOSMemory)
		return
	}
	release.timer.Reset(releaseQuiet)
}
