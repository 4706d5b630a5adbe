package turns

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/policy"
)

// Origin is where a message came from, so the reply goes back there.
type Origin struct {
	Transport string
	Chat      string
}

// Admission is what one turn is to work on.
type Admission struct {
	Text   string
	Origin Origin
	// CatchUp marks the follow-up turn made of messages that arrived
	// while the previous turn ran.
	CatchUp bool
	// Resume, for a turn started by the owner's decision, is the parked
	// conversation and the answer to its call; Text is then empty and
	// Preview says what was decided.
	Resume  *contracts.Resume
	Preview string
	// Outside is the turn's mark of untrusted content (package
	// policy/mark.go): where text it works on came from outside (a fetched
	// page, a git remote's words), "" for none. Every request the turn
	// makes, and every schedule it sets, carries it on.
	Outside string
	// RuleRuns counts the calls granted rules let through in a row in a
	// resumed turn's conversation; the owner's own decision resets it.
	RuleRuns int
	// Scheduled marks a turn the pet starts itself, from a schedule.
	Scheduled bool
	// Overflow is what arrived during the last turn beyond what one turn
	// takes (MaxCatchUpBytes): core keeps it as a file and tells the
	// model where.
	Overflow string
	// Messages are the ids of the owner's admitted messages the turn
	// answers (none for a resumed or scheduled turn).
	Messages []int64
}

// Bounds of what one turn takes from the owner, so that no message and no
// burst can fail more than its own turn: the turn's input stays far below
// the bus's frame limit.
const (
	// MaxMessageBytes caps one message; core cuts a longer one and says
	// so.
	MaxMessageBytes = 64 << 10
	// MaxCatchUpBytes caps the joined text of a catch-up turn.
	MaxCatchUpBytes = 256 << 10
)

// The kinds of turn, as the turns table records them.
const (
	KindChat      = "chat"
	KindCatchUp   = "catch-up"
	KindResume    = "resume"
	KindScheduled = "scheduled"
)

// Kind says what kind of turn the admission starts.
func (a Admission) Kind() string {
	switch {
	case a.CatchUp:
		return KindCatchUp
	case a.Resume != nil:
		return KindResume
	case a.Scheduled:
		return KindScheduled
	}
	return KindChat
}

// Turn is the turn in flight, as the machine knows it.
type Turn struct {
	ID        string
	Admission Admission
	Started   time.Time
	// Outcome and Err say how the turn ended, once its result is settled.
	Outcome, Err string
	exited       bool // the worker's processes are gone
	left         bool // the worker's bus connection is gone (or never was)
	keeping      bool // what its result keeps is being written off the loop
	timer        clock.Timer
}

// Exited reports whether the turn's worker is gone.
func (t *Turn) Exited() bool { return t.exited }

// EventKind is what happened to a turn.
type EventKind int

const (
	// Timeout: the turn timeout T passed.
	Timeout EventKind = iota
	// Exited: the worker's processes are gone.
	Exited
	// Left: the worker's bus connection is gone, behind every frame it
	// sent.
	Left
	// Abandon: the worker outlived T and a kill by another reap deadline.
	Abandon
)

// Event is something that happened to the turn ID.
type Event struct {
	Kind EventKind
	Turn string
}

// Step is what core must do after an event.
type Step struct {
	// Degrade, when set, is the outcome of a turn that ended without a
	// result: core answers the owner with the degrade reply.
	Degrade, Why string
	// Kill asks core to kill the worker (again).
	Kill bool
	// Finished is the turn that is over: its result settled and its
	// worker gone. Core records it and calls Release.
	Finished *Turn
}

// Turn outcomes the machine decides.
const (
	OutcomeTimeout = "timeout" // no result within T
	OutcomeCrashed = "crashed" // the worker ended without a result
)

// ErrFenced is wrapped by Accept for a result that may not be acted on.
var ErrFenced = errors.New("result fenced out")

// Machine admits one turn at a time. Messages that arrive during a turn
// fold into one pending slot, which becomes exactly one follow-up turn:
// nothing is dropped and there is never a backlog of turns.
//
// It is not safe for concurrent use: core's single loop owns it. Its
// timers hand their events to Post, which must bring them back to that
// loop.
type Machine struct {
	clock clock.Clock
	// turnTimeout is T; reap is R, the launcher's kill deadline, waited
	// once more after a kill at T before the slot is let go.
	turnTimeout, reap time.Duration
	post              func(Event)

	busy          bool
	pending       []string
	pendingIDs    []int64
	pendingOrigin Origin
	// pendingMark is the mark of a pending text set by a marked turn.
	pendingMark string
	fence       fence
	cur         *Turn
}

// New makes a machine whose turns time out after turnTimeout, and whose
// workers are given up reap after a kill at that time.
func New(clk clock.Clock, turnTimeout, reap time.Duration, post func(Event)) *Machine {
	return &Machine{clock: clk, turnTimeout: turnTimeout, reap: reap, post: post}
}

// Submit offers a message, with the ids of the owner's admitted messages
// it holds (none for a message not kept, or a scheduled turn's text). It
// returns the admission to start now, or false when the slot is taken and
// the text joined the pending slot.
func (m *Machine) Submit(text string, from Origin, ids ...int64) (Admission, bool) {
	return m.SubmitMarked(text, from, "", ids...)
}

// SubmitMarked is Submit of a text marked by outside content (a due
// schedule's, set by a marked turn): the turn it starts is marked, and
// so is the catch-up turn it joins.
func (m *Machine) SubmitMarked(text string, from Origin, outside string, ids ...int64) (Admission, bool) {
	if m.busy {
		m.pending = append(m.pending, text)
		m.pendingIDs = append(m.pendingIDs, ids...)
		m.pendingOrigin = from
		m.pendingMark = policy.MarkJoined(m.pendingMark, outside)
		return Admission{}, false
	}
	m.busy = true
	return Admission{Text: text, Origin: from, Messages: slices.Clone(ids), Outside: outside}, true
}

// Claim takes the slot for something that is not a message (an owner's
// decision), if it is free; Release gives it back.
func (m *Machine) Claim() bool {
	if m.busy {
		return false
	}
	m.busy = true
	return true
}

// Busy reports whether the slot is taken.
func (m *Machine) Busy() bool { return m.busy }

// Pending is how many messages wait in the slot.
func (m *Machine) Pending() int { return len(m.pending) }

// Begin opens a turn for adm in the slot the caller holds: a fresh id, the
// fence opened on it, T armed.
func (m *Machine) Begin(adm Admission) *Turn {
	t := &Turn{ID: newID(), Admission: adm, Started: m.clock.Now()}
	m.cur = t
	m.busy = true
	m.fence.open(t.ID)
	id := t.ID
	t.timer = m.clock.AfterFunc(m.turnTimeout, func() { m.post(Event{Kind: Timeout, Turn: id}) })
	return t
}

// Current is the turn in flight, or nil.
func (m *Machine) Current() *Turn { return m.cur }

// Accept takes a result for turn id through the fence: only the open
// turn's first result passes, and passing closes the fence. A refusal
// wraps ErrFenced and says whether the id was late or unknown.
func (m *Machine) Accept(id string) (*Turn, error) {
	if m.cur == nil || m.cur.ID != id || !m.fence.close(id) {
		why := "unknown turn"
		if m.fence.wasClosed(id) {
			why = "turn already closed"
		}
		return nil, fmt.Errorf("%w: %s (%q)", ErrFenced, why, id)
	}
	return m.cur, nil
}

// Settle closes the fence on t with how it ended, if no result settled it
// first; it reports whether it did.
func (m *Machine) Settle(t *Turn, outcome, why string) bool {
	if !m.fence.close(t.ID) {
		return false
	}
	t.Outcome, t.Err = outcome, why
	return true
}

// Settled reports whether t's result is settled.
func (m *Machine) Settled(t *Turn) bool { return !m.fence.isOpen(t.ID) }

// Gone records that t's worker never started or is gone, connection and
// all.
func (m *Machine) Gone(t *Turn) {
	t.exited, t.left = true, true
}

// On takes an event of the turn in flight and says what core must do;
// events of turns already over change nothing.
func (m *Machine) On(ev Event) Step {
	t := m.cur
	if t == nil || t.ID != ev.Turn {
		return Step{}
	}
	var step Step
	switch ev.Kind {
	case Timeout:
		if m.Settle(t, OutcomeTimeout, fmt.Sprintf("no result within %v", m.turnTimeout)) {
			step.Degrade, step.Why = t.Outcome, t.Err
		}
		if !t.exited {
			// The launcher should have killed it at R < T. Kill it
			// again, and if even that does not end it, let the slot go
			// rather than wedge the pet behind a process that will not
			// die.
			step.Kill = true
			id := t.ID
			m.clock.AfterFunc(m.reap, func() { m.post(Event{Kind: Abandon, Turn: id}) })
		}
	case Abandon:
		t.exited, t.left = true, true
	case Exited:
		t.exited = true
	case Left:
		t.left = true
	}
	// The process's end and its connection's end are both needed before
	// a turn without a result counts as crashed: the process may be
	// reaped before the hub has read the result it sent just before
	// exiting, and that result must win.
	if t.exited && t.left && m.Settle(t, OutcomeCrashed, "the worker ended without a result") {
		step.Degrade, step.Why = t.Outcome, t.Err
	}
	step.Finished = m.finished()
	return step
}

// Finished ends the turn in flight if it is over — its result settled,
// what it keeps written, and its worker gone — and returns it; core then
// records it and calls Release. It returns nil while the turn is still
// on.
func (m *Machine) Finished() *Turn { return m.finished() }

// Keeping records that what t's result keeps is being written off the
// loop: t is not over, and the slot not handed on, until [Machine.Kept],
// so that the next turn reads what it kept.
func (m *Machine) Keeping(t *Turn) { t.keeping = true }

// Kept records that what t keeps is written, and ends t, as Finished
// does, if that was all it waited for.
func (m *Machine) Kept(t *Turn) *Turn {
	t.keeping = false
	if m.cur != t {
		return nil
	}
	return m.finished()
}

func (m *Machine) finished() *Turn {
	t := m.cur
	if t == nil || m.fence.isOpen(t.ID) || !t.exited || t.keeping {
		return nil
	}
	t.timer.Stop()
	m.cur = nil
	return t
}

// Release gives up the slot after a turn or a claim. When messages are
// pending it keeps the slot and returns them, joined by newlines, as the
// catch-up turn to Begin.
func (m *Machine) Release() (Admission, bool) {
	if len(m.pending) == 0 {
		m.busy = false
		return Admission{}, false
	}
	next := Admission{Text: strings.Join(m.pending, "\n"), Origin: m.pendingOrigin, CatchUp: true, Messages: m.pendingIDs, Outside: m.pendingMark}
	if len(next.Text) > MaxCatchUpBytes {
		cut := cutAt(next.Text, MaxCatchUpBytes)
		next.Text, next.Overflow = next.Text[:cut], next.Text[cut:]
	}
	m.pending, m.pendingIDs, m.pendingOrigin, m.pendingMark = nil, nil, Origin{}, ""
	return next, true
}

// cutAt is the largest index no greater than n at which s can be cut
// without splitting a character.
func cutAt(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// CutMessage bounds one message to MaxMessageBytes, at a character
// boundary, and reports whether it had to.
func CutMessage(text string) (string, bool) {
	cut := cutAt(text, MaxMessageBytes)
	return text[:cut], cut < len(text)
}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
