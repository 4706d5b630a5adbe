package mood

import (
	"time"

	"shelldon/clock"
	"shelldon/faces"
)

// The moods, each the name of a built-in face.
const (
	sleeping = faces.Sleeping
	excited  = "excited"
	happy    = "happy"
	sad      = "sad"
	grumpy   = "grumpy"
	bored    = "bored"
	curious  = "curious"
	neutral  = "neutral"
)

// Where the feelings tip into a mood.
const (
	// excitedAt is how good and how busy things must be for excitement.
	excitedAt = 3
	// happyAt and sadAt are how good or bad things must have gone.
	happyAt = 2
	sadAt   = -3
	// grumpyAt is the valence at which being busy turns grumpy.
	grumpyAt = -1
	// busyAt is the energy of a pet with something going on.
	busyAt = 2
	// lonelyFactor times Config.Lonely of silence makes a bored pet sad.
	lonelyFactor = 3
)

// situation is everything the mood rules look at.
type situation struct {
	valence, energy int
	// asleep: inside the night window and not woken by the owner.
	asleep bool
	night  clock.Window
	// quietSince is when the silence began: the owner's last message, or
	// the end of the last night if that came later, as the owner sleeps too.
	quietSince time.Time
	// woke tells that quietSince is the end of the night, not a message.
	woke bool
	// silence is how long it has been quiet at now.
	silence time.Duration
	now     time.Time
	// lonely is Config.Lonely; 0 or less: never lonely.
	lonely time.Duration
}

// rule is one line of the mood precedence.
type rule struct {
	mood  string
	holds func(situation) bool
	// why is the rule's own reason for the mood.
	why func(situation) string
	// explainedBy reports whether an event with this effect brought the
	// mood on, so the event itself is the better reason; nil: never.
	explainedBy func(effect) bool
}

// rules is the precedence of moods: the first rule that holds is the mood.
//
//  1. sleeping: inside the night window, unless the owner woke the pet.
//  2. excited:  valence >= 3 and energy >= 3.
//  3. happy:    valence >= 2.
//  4. sad:      valence <= -3.
//  5. grumpy:   valence <= -1 and energy >= 2.
//  6. sad:      lonely, no chat for 3×Config.Lonely.
//  7. bored:    no chat for Config.Lonely.
//  8. curious:  energy >= 2.
//  9. neutral:  otherwise.
//
// Sleep wins over everything: a sleeping pet feels nothing. What just
// happened comes next, strongest first, because it fades within a few
// ticks while loneliness builds over hours and would otherwise hide every
// reaction. Mild interest and calm are what is left.
var rules = []rule{
	{sleeping, func(s situation) bool { return s.asleep },
		func(s situation) string { return "night " + s.night.String() }, nil},
	{excited, func(s situation) bool { return s.valence >= excitedAt && s.energy >= excitedAt },
		says("busy, and it is going well"), func(e effect) bool { return e.valence > 0 || e.energy > 0 }},
	{happy, func(s situation) bool { return s.valence >= happyAt },
		says("things went well lately"), func(e effect) bool { return e.valence > 0 }},
	{sad, func(s situation) bool { return s.valence <= sadAt },
		says("things went badly lately"), func(e effect) bool { return e.valence < 0 }},
	{grumpy, func(s situation) bool { return s.valence <= grumpyAt && s.energy >= busyAt },
		says("busy, and it is going badly"), func(e effect) bool { return e.valence < 0 }},
	{sad, func(s situation) bool { return s.lonely > 0 && s.silence/lonelyFactor >= s.lonely },
		func(s situation) string { return "lonely: " + s.quiet() }, nil},
	{bored, func(s situation) bool { return s.lonely > 0 && s.silence >= s.lonely },
		situation.quiet, nil},
	{curious, func(s situation) bool { return s.energy >= busyAt },
		says("something is going on"), func(e effect) bool { return e.energy > 0 }},
	{neutral, func(situation) bool { return true },
		says("nothing much going on"), nil},
}

func says(reason string) func(situation) string {
	return func(situation) string { return reason }
}

// isWaking reports whether mood is one the pet has while awake.
func isWaking(mood string) bool {
	for _, r := range rules {
		if r.mood == mood {
			return mood != sleeping
		}
	}
	return false
}

// derive sets the mood from the first rule that holds. awake lets the pet
// stay up in the night window; cause is the event being applied, if any.
// Since moves only when the mood changes.
func (s State) derive(now time.Time, cfg Config, awake bool, cause *effect) State {
	at := situation{
		valence:    s.Valence,
		energy:     s.Energy,
		asleep:     !awake && cfg.Night.Contains(now),
		night:      cfg.Night,
		quietSince: s.LastChat,
		lonely:     cfg.Lonely,
	}
	if nightEnded := cfg.Night.LastEnd(now); nightEnded.After(s.LastChat) {
		at.quietSince, at.woke = nightEnded, true
	}
	at.silence, at.now = now.Sub(at.quietSince), now
	won := rules[len(rules)-1]
	for _, r := range rules {
		if r.holds(at) {
			won = r
			break
		}
	}
	if won.mood != s.Mood {
		s.Since = now
	}
	s.Mood = won.mood
	s.Why = won.why(at)
	if cause != nil && won.explainedBy != nil && won.explainedBy(*cause) {
		s.Why = cause.why
	}
	return s
}

// quiet says since when no one wrote. It names a moment rather than a
// length, so the reason stays the same from tick to tick and a slow e-ink
// panel showing it need not redraw.
func (s situation) quiet() string {
	if s.woke {
		return "no one wrote since I woke"
	}
	since := s.quietSince.In(s.now.Location())
	layout := "15:04"
	if !sameDay(since, s.now) {
		layout = "Jan 2 15:04"
	}
	return "no one wrote since " + since.Format(layout)
}

func sameDay(a, b time.Time) bool {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	return ay == by && am == bm && ad == bd
}
