package daemon

import (
	"sync"
	"time"

	"shelldon/daemon/owner"
)

// failedWrites keeps account of core's writes to its state that failed —
// a turn's record, the history, an admitted message, the mood, a memory —
// so that /status says so: a write that fails never pretends, even where
// the turn goes on without it. The backup writes off the loop, hence the
// lock.
type failedWrites struct {
	mu    sync.Mutex
	clock interface{ Now() time.Time }
	facts owner.WriteFailures
}

// note counts err, when there is one, as a failed write of what, and
// returns it.
func (f *failedWrites) note(what string, err error) error {
	if err == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	if f.facts.Count == 0 {
		f.facts.First = now
	}
	f.facts.Count++
	f.facts.Last, f.facts.LastWhat, f.facts.LastErr = now, what, err.Error()
	return err
}

// report is what /status says of them.
func (f *failedWrites) report() owner.WriteFailures {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.facts
}
