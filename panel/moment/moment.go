package moment

import (
	"strings"

	"shelldon/faces"
)

// Moment is what the panel shows: a face, the word for it in the status
// strip, and the caption under it.
type Moment struct {
	Face    string // the face's name in the registry
	Glyphs  string // the face drawn, e.g. "(^‿^)"
	Word    string // the status strip's word for the face
	Caption string // the pet's thought, or its words to the owner
}

// Captions of the moments that have no thought of the model's.
const (
	thinkingCaption = "let me think…"
	failedCaption   = "can't think right now"
	awayCaption     = "waiting for my core…"
	wakingCaption   = "waking up…"
)

// wordFor is the strip's word for a face whose name does not read as one.
var wordFor = map[string]string{
	faces.CantThink: "dizzy",
}

// idleCaptions are the pet's words to the owner while it rests in a mood,
// one line per mood (daemon/mood checks that each of its moods has one).
// They say how the pet feels, not why: the reasons are the journal's and
// /status's.
var idleCaptions = map[string]string{
	"neutral":      "all quiet here",
	"curious":      "what's going on?",
	"happy":        "that went well",
	"excited":      "what a day!",
	"sad":          "feeling a bit down",
	"grumpy":       "not my day…",
	"bored":        "anyone there?",
	faces.Sleeping: "asleep; write to wake me",
}

// Thinking is a turn under way.
func Thinking() Moment {
	return of(faces.Builtin(), faces.Thinking, thinkingCaption)
}

// Reply is a turn's answer: the face the model picked (the default reply
// face when the registry does not know it) and its thought as the caption.
func Reply(reg faces.Registry, pick, thought string) Moment {
	return of(reg, pick, thought)
}

// Failed is a turn that could not answer.
func Failed() Moment {
	return of(faces.Builtin(), faces.CantThink, failedCaption)
}

// Idle is the pet at rest in mood, which names a built-in face.
func Idle(mood string) Moment {
	m := of(faces.Builtin(), mood, "")
	m.Caption = idleCaptions[m.Face]
	return m
}

// Away is the pet while core is out of reach: asleep, and the strip says
// away rather than a mood core can no longer vouch for.
func Away() Moment {
	m := of(faces.Builtin(), faces.Sleeping, awayCaption)
	m.Word = "away"
	return m
}

// Waking is the panel's first moments, before core is heard from.
func Waking() Moment {
	m := of(faces.Builtin(), faces.Sleeping, wakingCaption)
	m.Word = "waking"
	return m
}

// of is the face pick resolves to in reg, with its word and caption.
func of(reg faces.Registry, pick, caption string) Moment {
	name, glyphs, _ := reg.Resolve(pick)
	word, ok := wordFor[name]
	if !ok {
		word = strings.ReplaceAll(name, "-", " ")
	}
	return Moment{Face: name, Glyphs: glyphs, Word: word, Caption: caption}
}
