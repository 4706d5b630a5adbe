package daemon

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/procmem"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/faces"
	"shelldon/panel/moment"
)

// presence decides which moment core pushes to the panels; panel/moment
// decides how each looks (face, the strip's word, caption). A reaction
// holds the screen for the dwell against ambient drift, since on a slow
// e-ink panel a face that is replaced at once only flashes; a turn's own
// faces (thinking, cant-think) always show. An identical push is not sent
// again, so the panel does not re-flash.
type presence struct {
	clock clock.Clock
	dwell time.Duration
	push  func(contracts.Snapshot)
	// status fills the status strip of each push.
	status func() contracts.PanelStatus

	mu        sync.Mutex
	faces     faces.Registry
	last      contracts.Snapshot
	holdUntil time.Time
}

// setFaces takes the face registry: at start, and after core itself has
// added a face.
func (p *presence) setFaces(reg faces.Registry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faces = reg
}

// thinking shows that a turn is under way, now, whatever is held.
func (p *presence) thinking() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdUntil = time.Time{}
	p.pushLocked(moment.Thinking(), false)
}

// replied shows a turn's answer, the face the model picked (the default
// reply face when the registry does not know it) and its thought, and
// holds it for the dwell.
func (p *presence) replied(pick, thought string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reactLocked(moment.Reply(p.faces, pick, thought))
}

// failed shows that a turn could not answer, held for the dwell.
func (p *presence) failed() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reactLocked(moment.Failed())
}

func (p *presence) reactLocked(m moment.Moment) {
	p.holdUntil = p.clock.Now().Add(p.dwell)
	p.pushLocked(m, false)
}

// idle shows the pet at rest in mood unless a reaction still holds the
// screen; it reports whether the face was shown (or already was).
func (p *presence) idle(mood string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.clock.Now().Before(p.holdUntil) {
		return false
	}
	p.pushLocked(moment.Idle(mood), true)
	return true
}

func (p *presence) pushLocked(m moment.Moment, ambient bool) {
	s := contracts.Snapshot{Face: m.Face, Glyphs: m.Glyphs, Word: m.Word, Caption: m.Caption, HoldUntil: p.holdUntil, Ambient: ambient}
	if p.status != nil {
		s.Status = p.status()
	}
	// A moment on show already is not sent again; a hold that moved is
	// core's to keep, as core pushes no idle face before it ends.
	same := s
	same.HoldUntil = p.last.HoldUntil
	if same == p.last {
		p.last.HoldUntil = s.HoldUntil
		return
	}
	p.last = s
	p.push(s)
}

// refresh pushes the current moment again if the status changed (a turn
// ended, memory moved), so the panel's strip stays true between faces.
func (p *presence) refresh() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last.Face == "" {
		return
	}
	last := p.last
	p.pushLocked(moment.Moment{Face: last.Face, Glyphs: last.Glyphs, Word: last.Word, Caption: last.Caption}, last.Ambient)
}

// current is the latest snapshot, for a panel that has just joined.
func (p *presence) current() contracts.Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// load reads the face registry for the panels: at start, and after core
// itself has added a face.
func (p *presence) load(layout statedir.Layout, log *slog.Logger) {
	reg, err := layout.LoadFaces()
	if err != nil {
		log.Warn("face registry has bad entries; using the good ones", "err", err)
	}
	p.setFaces(reg)
}

// panelStatus is the status strip of the panel: the pet's name, when core
// started, the turns since local midnight and the memory in use. The
// strip's word is the moment's, which presence adds.
func panelStatus(store *state.Store, now, started time.Time) contracts.PanelStatus {
	now = now.Local()
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	st := contracts.PanelStatus{Name: "shelldon", Since: started}
	if n, err := store.Turns().CountSince(context.Background(), midnight); err == nil {
		st.TurnsToday = n
	}
	if current, _, ok := procmem.Cgroup(); ok {
		st.Memory = current
	} else if rss, ok := procmem.Resident(); ok {
		st.Memory = rss
	}
	return st
}
