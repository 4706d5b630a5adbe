package mood

import (
	"fmt"
	"time"

	"shelldon/clock"
)

// Event is something that happened which the pet has feelings about.
type Event int

// The events core reports to the mood.
const (
	OwnerMessage Event = iota + 1 // the owner wrote (chat, a command does not count)
	TurnOK                        // a turn answered
	TurnFailed                    // a turn degraded: "can't think right now"
	Approved                      // the owner approved a request
	Denied                        // the owner denied a request
	Expired                       // a request expired unanswered
	Quarantined                   // a self-coded tool failed too often and was put away
	Promoted                      // the owner kept a tool the pet wrote
)

// effect is what one event does to the pet's feelings.
type effect struct {
	name    string
	valence int // how much better (or worse) things went
	energy  int // how much more is going on
	// chat marks the owner writing: it wakes the pet at night and ends a silence.
	chat bool
	// why is the event given as the reason for a mood it brought on.
	why string
}

// effects is how events move the pet's feelings. Good news raises valence
// and bad news lowers it, a failure twice as much as a refusal; the owner's
// attention (a message, a kept tool) also makes the pet livelier.
var effects = map[Event]effect{
	OwnerMessage: {"owner-message", +1, +2, true, "the owner wrote"},
	TurnOK:       {"turn-ok", +1, 0, false, "a turn answered"},
	TurnFailed:   {"turn-failed", -2, 0, false, "a turn failed"},
	Approved:     {"approved", +1, +1, false, "the owner approved"},
	Denied:       {"denied", -1, 0, false, "the owner denied a request"},
	Expired:      {"expired", -1, 0, false, "a request expired unanswered"},
	Quarantined:  {"quarantined", -2, 0, false, "a tool of mine was put away"},
	Promoted:     {"promoted", +2, +2, false, "the owner kept a tool I wrote"},
}

// String names the event for logs.
func (e Event) String() string {
	if eff, ok := effects[e]; ok {
		return eff.name
	}
	return fmt.Sprintf("Event(%d)", int(e))
}

// The ranges of the two feelings. Valence is how things went lately, from
// miserable to delighted; energy is how much is going on, from idle to busy.
const (
	minValence = -5
	maxValence = 5
	minEnergy  = 0
	maxEnergy  = 5
)

// Config is what the owner decides about the pet's days.
type Config struct {
	Night  clock.Window  // the pet sleeps (mood "sleeping") in this window
	Lonely time.Duration // no chat for this long → bored; three times as long → sad. 0 = never lonely
}

// State is the persisted mood. Its JSON field names are stable.
type State struct {
	Valence  int       `json:"valence"` // -5..5: how things went lately
	Energy   int       `json:"energy"`  // 0..5: how much is going on
	LastChat time.Time `json:"last_chat"`
	Mood     string    `json:"mood"`  // a built-in face name
	Why      string    `json:"why"`   // a short human reason for the current mood
	Since    time.Time `json:"since"` // when Mood last changed
}

// Initial is a fresh pet at now: calm, or asleep at night, and not lonely
// yet.
func Initial(now time.Time, cfg Config) State {
	return State{LastChat: now, Since: now}.derive(now, cfg, false, nil)
}

// On applies what happened at now and derives the mood again. At night a
// sleeping pet stays asleep unless the owner writes; once awake it stays
// awake until the next Tick, so a reply at night never gets a sleeping face.
// An unknown event is the zero effect: it changes no feeling and is no
// reason for any mood.
func (s State) On(e Event, now time.Time, cfg Config) State {
	eff := effects[e]
	awake := eff.chat || isWaking(s.Mood)
	s = s.repaired(now)
	s.Valence += eff.valence
	s.Energy += eff.energy
	if eff.chat {
		s.LastChat = now
	}
	s = s.repaired(now) // back into range after the effect
	return s.derive(now, cfg, awake, &eff)
}

// Tick is the reflex between turns: energy fades by one, valence takes one
// step back toward zero, and the mood is derived again, so the night
// window and a long silence take effect here even when nothing happens.
func (s State) Tick(now time.Time, cfg Config) State {
	s = s.repaired(now)
	s.Energy = max(s.Energy-1, minEnergy)
	switch {
	case s.Valence > 0:
		s.Valence--
	case s.Valence < 0:
		s.Valence++
	}
	return s.derive(now, cfg, false, nil)
}

// Changed reports whether the mood differs from prev's, which is when the
// at-rest face should change.
func (s State) Changed(prev State) bool { return s.Mood != prev.Mood }

// repaired brings a state read from a damaged or hand-edited file back into
// range. A missing or future time becomes now: an unknown last chat is
// taken as a fresh start rather than as endless silence.
func (s State) repaired(now time.Time) State {
	s.Valence = min(max(s.Valence, minValence), maxValence)
	s.Energy = min(max(s.Energy, minEnergy), maxEnergy)
	if s.LastChat.IsZero() || s.LastChat.After(now) {
		s.LastChat = now
	}
	if s.Since.IsZero() || s.Since.After(now) {
		s.Since = now
	}
	return s
}
