package daemon

import (
	"sync"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/panel/faces"
)

// presence decides what face and caption core pushes to the panels. A
// reaction holds the screen for the dwell against ambient drift, since on
// a slow e-ink panel a face that is replaced at once only flashes; a turn's
// own faces (thinking, cant-think) always show. An identical push is not
// sent again, so the panel does not re-flash.
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

// show pushes a turn's face now, whatever is held. A face the registry
// does not know shows as the default reply face, here and below.
func (p *presence) show(face, caption string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdUntil = time.Time{}
	p.pushLocked(face, caption, false)
}

// react pushes a reaction and holds it for the dwell.
func (p *presence) react(face, caption string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdUntil = p.clock.Now().Add(p.dwell)
	p.pushLocked(face, caption, false)
}

// ambient pushes an at-rest face unless a reaction still holds the
// screen; it reports whether the face was shown (or already was).
func (p *presence) ambient(face, caption string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.clock.Now().Before(p.holdUntil) {
		return false
	}
	p.pushLocked(face, caption, true)
	return true
}

func (p *presence) pushLocked(pick, caption string, ambient bool) {
	face, glyphs, _ := p.faces.Resolve(pick)
	s := contracts.Snapshot{Face: face, Glyphs: glyphs, Caption: caption, HoldUntil: p.holdUntil, Ambient: ambient}
	if p.status != nil {
		s.Status = p.status()
	}
	if s.Face == p.last.Face && s.Caption == p.last.Caption && s.Glyphs == p.last.Glyphs && s.Status == p.last.Status {
		p.last.HoldUntil = s.HoldUntil
		return
	}
	p.last = s
	p.push(s)
}

// refresh pushes the current face again if the status changed (a turn
// ended, memory moved), so the panel's strip stays true between faces.
func (p *presence) refresh() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last.Face == "" {
		return
	}
	last := p.last
	p.pushLocked(last.Face, last.Caption, last.Ambient)
}

// current is the latest snapshot, for a panel that has just joined.
func (p *presence) current() contracts.Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}
