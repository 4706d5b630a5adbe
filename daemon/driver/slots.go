package driver

import (
	"fmt"
	"sync"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/hub"
	"shelldon/daemon/launch"
)

// workerSlot is what the hub needs to admit one turn's worker.
type workerSlot struct {
	ready  chan struct{} // closed once handle is set (or the start failed)
	handle launch.Handle
	input  contracts.TurnInput
	sent   bool
	// launched is when core asked the launcher; joinedAfter is how long
	// the worker then took to join the bus (a unit's start job included).
	launched    time.Time
	joinedAfter time.Duration
}

// Slots are the turns being started, shared between core's loop, which
// opens and closes them through the driver, and the hub's goroutines,
// which admit a turn's worker and hand it its input.
type Slots struct {
	Clock clock.Clock
	mu    sync.Mutex
	slots map[string]*workerSlot
}

// open makes the slot of a turn about to be launched.
func (w *Slots) open(turn string, input contracts.TurnInput) *workerSlot {
	slot := &workerSlot{ready: make(chan struct{}), input: input}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.slots == nil {
		w.slots = map[string]*workerSlot{}
	}
	slot.launched = w.Clock.Now()
	w.slots[turn] = slot
	return slot
}

// launched records what the launcher said of the turn's worker; a failed
// start closes the slot.
func (w *Slots) launched(turn string, slot *workerSlot, handle launch.Handle, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	slot.handle = handle
	close(slot.ready)
	if err != nil {
		delete(w.slots, turn)
	}
}

// close closes the slot of a turn whose worker is gone, and says whether
// its worker ever joined and how long it took.
func (w *Slots) close(turn string) (joined bool, after time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	slot := w.slots[turn]
	delete(w.slots, turn)
	if slot == nil {
		return true, 0
	}
	return slot.sent, slot.joinedAfter
}

// Input is the turn input of the worker that just joined for turn.
func (w *Slots) Input(turn string) (contracts.TurnInput, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	slot := w.slots[turn]
	if slot == nil {
		return contracts.TurnInput{}, false
	}
	return slot.input, true
}

// Verify admits a worker the hub's Access let in only if it is a process
// of the turn it names, that turn is the one being started, and no other
// worker joined for it.
func (w *Slots) Verify(hello contracts.Hello, cred hub.Cred) error {
	w.mu.Lock()
	slot := w.slots[hello.Turn]
	w.mu.Unlock()
	if slot == nil {
		return fmt.Errorf("turn %q is not running", hello.Turn)
	}
	select {
	case <-slot.ready:
	case <-time.After(5 * time.Second):
		return fmt.Errorf("turn %q did not finish starting", hello.Turn)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case slot.handle == nil:
		return fmt.Errorf("turn %q failed to start", hello.Turn)
	case !slot.handle.Owns(cred.PID):
		return fmt.Errorf("pid %d is not the worker of turn %q", cred.PID, hello.Turn)
	case slot.sent:
		return fmt.Errorf("turn %q already has its worker", hello.Turn)
	}
	slot.sent = true
	slot.joinedAfter = w.Clock.Now().Sub(slot.launched)
	return nil
}
