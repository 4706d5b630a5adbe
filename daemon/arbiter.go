package daemon

import (
	"strings"

	"shelldon/contracts"
)

// Origin is where a message came from, so the reply goes back there.
type Origin struct {
	Transport string
	Chat      string
}

// Admission is the text of one turn to start.
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
	// Scheduled marks a turn the pet starts itself, from a schedule.
	Scheduled bool
}

// arbiter admits one turn at a time. Messages that arrive during a turn
// fold into one pending slot, which becomes exactly one follow-up turn:
// nothing is dropped and there is never a backlog of turns.
//
// It is not safe for concurrent use; core's single loop owns it.
type arbiter struct {
	busy    bool
	pending []string
	origin  Origin
}

// submit offers a message. It returns the admission to start now, or
// false when a turn is running and the text joined the pending slot.
func (a *arbiter) submit(text string, from Origin) (Admission, bool) {
	if a.busy {
		a.pending = append(a.pending, text)
		a.origin = from
		return Admission{}, false
	}
	a.busy = true
	return Admission{Text: text, Origin: from}, true
}

// complete frees the slot after a turn. When messages are pending it keeps
// the slot and returns them, joined by newlines, as the next turn.
// claim takes the turn slot for something other than a message (the
// owner's decision), if it is free; complete gives it back.
func (a *arbiter) claim() bool {
	if a.busy {
		return false
	}
	a.busy = true
	return true
}

func (a *arbiter) complete() (Admission, bool) {
	if len(a.pending) == 0 {
		a.busy = false
		return Admission{}, false
	}
	next := Admission{Text: strings.Join(a.pending, "\n"), Origin: a.origin, CatchUp: true}
	a.pending, a.origin = nil, Origin{}
	return next, true
}

// pendingCount is how many messages wait in the slot.
func (a *arbiter) pendingCount() int { return len(a.pending) }
