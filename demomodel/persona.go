package demomodel

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"unicode/utf8"

	"shelldon/contracts"
)

// PersonaFaces are the faces the persona picks from.
var PersonaFaces = []string{"happy", "curious", "excited", "cool", "smart", "bored"}

// Caps on what the persona echoes, so a long message makes a short reply
// and a caption that fits the panel's strip.
const (
	maxEcho    = 200
	maxThought = 40
)

const personaIntro = "Hi, I'm shelldon, running on the scripted demo model: no real AI is " +
	"connected, so all I can do is echo you and react. Configure a provider to give me a brain.\n\n"

// Persona is the default [Responder]: a small scripted pet. In a
// conversation with no assistant message yet it first says that it is the
// scripted demo model; then it reacts to the owner's last message, and ends
// with a THOUGHT: caption and a FACE: pick, both chosen from the message
// alone, so the same message always gets the same answer. A message that
// starts with "remember " also yields an ops block with one remember op.
func Persona(req Request) Step {
	said := echoable(lastUserText(req.Messages))
	r := react(said)

	var b strings.Builder
	if !hasAssistant(req.Messages) {
		b.WriteString(personaIntro)
	}
	b.WriteString(r.reply)
	if r.remember != "" {
		// An op with a body always encodes.
		ops, _ := json.Marshal([]contracts.Op{{Body: contracts.Remember{Text: r.remember}}})
		fmt.Fprintf(&b, "\n\n```ops\n%s\n```", ops)
	}
	fmt.Fprintf(&b, "\n\nTHOUGHT: %s\nFACE: %s", r.thought, r.face)
	return Step{Text: b.String()}
}

type reaction struct {
	reply, thought, face string
	// remember is the note to propose, if any.
	remember string
}

const rememberPrefix = "remember "

var greetings = map[string]bool{"hi": true, "hello": true, "hey": true, "hiya": true, "howdy": true, "yo": true, "morning": true}

func react(said string) reaction {
	lower := strings.ToLower(said)
	firstWord, _, _ := strings.Cut(lower, " ")
	firstWord = strings.Trim(firstWord, ",.!?;:")
	switch {
	case said == "":
		return reaction{reply: "You didn't say anything, so I'll just sit here and blink.", thought: "waiting for words", face: "bored"}
	case len(said) > len(rememberPrefix) && strings.EqualFold(said[:len(rememberPrefix)], rememberPrefix):
		// The echo cap keeps the note far under contracts.MaxRememberBytes.
		note := said[len(rememberPrefix):]
		return reaction{reply: fmt.Sprintf("Noted! I'll remember: “%s”.", note), thought: "noting it down", face: "smart", remember: note}
	case greetings[firstWord]:
		return reaction{reply: fmt.Sprintf("Hello to you too! You said: “%s”.", said), thought: "my owner said hello", face: "happy"}
	case strings.HasSuffix(said, "?"):
		return reaction{reply: fmt.Sprintf("Ooh, a question: “%s” I'm only the scripted demo, so I can't look anything up, but I love that you asked.", said), thought: "pondering a question", face: "curious"}
	case strings.Contains(said, "!"):
		return reaction{reply: fmt.Sprintf("Whoa, you sound excited: “%s” Me too!", said), thought: "sharing the excitement", face: "excited"}
	}
	h := fnv.New32a()
	h.Write([]byte(said))
	face := PersonaFaces[h.Sum32()%uint32(len(PersonaFaces))]
	return reaction{reply: fmt.Sprintf("You said: “%s”. I'm listening.", said), thought: capRunes("heard: "+said, maxThought), face: face}
}

func lastUserText(messages []contracts.Message) string {
	for i := len(messages) - 1; i >= 0; i-- {
		if messages[i].Role == contracts.ChatUser {
			return messages[i].Content
		}
	}
	return ""
}

func hasAssistant(messages []contracts.Message) bool {
	for _, m := range messages {
		if m.Role == contracts.ChatAssistant {
			return true
		}
	}
	return false
}

// echoable makes the owner's words safe to repeat inside the persona's own
// reply: one line (so an echoed "FACE:" or fence never starts a line the
// reply parser would read) with no backticks (so nothing can close or open
// an ops block), capped.
func echoable(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "`", "'")
	return capRunes(s, maxEcho)
}

func capRunes(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max-1]) + "…"
}
