package main

import (
	"strings"
	"testing"
	"time"

	"shelldon/demomodel"
	"shelldon/transports/telegram/telegramtest"
)

// TestTheOwnerSeesTheReplyGrow: through the whole pet — the scripted
// model streaming a word or so every 30 ms, the broker's real go-openai
// client, the worker, core, the terminal chat in a pseudo-terminal — the
// owner sees the reply's draft grow above the prompt, then the reply in
// its place; no draft ever shows the reply's THOUGHT: or FACE: line or
// anything of its ops block.
func TestTheOwnerSeesTheReplyGrow(t *testing.T) {
	const payload = "It is sunny in Istanbul today, with a light wind from the sea and a few clouds over the hills by the evening."
	model := demomodel.New(demomodel.Step{ChunkDelay: 30 * time.Millisecond, Text: payload + "\n" +
		"```ops\n" + `[{"op":"remember","topic":"weather","text":"the owner asks after Istanbul"}]` + "\n```\n" +
		"THOUGHT: weather talk again\nFACE: happy"})
	p := newPet(t, model)
	term := p.terminalChat(t)
	term.Line(t, "weather in Istanbul?")

	// Every screen the terminal shows on the way, its draft as it stood.
	var drafts []string
	term.WaitUntil(t, "the reply", func(screen string) bool {
		if draft := draftOn(screen); draft != "" && (len(drafts) == 0 || drafts[len(drafts)-1] != draft) {
			drafts = append(drafts, draft)
		}
		return strings.Contains(screen, "shelldon: "+payload[:60])
	})
	if len(drafts) < 2 {
		t.Errorf("the owner saw %d drafts (%q), want the reply growing in several", len(drafts), drafts)
	}
	for i, d := range drafts {
		for _, hidden := range []string{"THOUGHT", "weather talk", "FACE", "happy", "```", "ops", "remember", "the owner asks"} {
			if strings.Contains(d, hidden) {
				t.Errorf("draft %d shows %q:\n%s", i, hidden, d)
			}
		}
		if i > 0 && len(d) < len(drafts[i-1]) {
			t.Errorf("draft %d is shorter than the one before:\n%s\nthen\n%s", i, drafts[i-1], d)
		}
	}
	screen := term.Screen()
	if strings.Contains(screen, "shelldon…") {
		t.Errorf("a draft stays beside the reply:\n%s", screen)
	}
	if reqs := model.Requests(); len(reqs) == 0 || !reqs[0].Stream {
		t.Errorf("the model was asked %+v, want a streamed request", reqs)
	}
}

// draftOn is the draft a chat screen shows above its prompt: the rows
// from "shelldon… " to the prompt's; "" when it shows none.
func draftOn(screen string) string {
	rows := strings.Split(screen, "\n")
	for i := len(rows) - 1; i >= 0; i-- {
		if strings.HasPrefix(rows[i], "shelldon… ") {
			return strings.Join(rows[i:len(rows)-1], "\n")
		}
	}
	return ""
}

// TestTheOwnerSeesTheReplyGrowOnTelegram: over Telegram the reply grows
// as a draft in the owner's chat, never showing the reply format's hidden
// lines, and then comes as a message of its own.
func TestTheOwnerSeesTheReplyGrowOnTelegram(t *testing.T) {
	const payload = "It is sunny in Istanbul today, with a light wind from the sea and a few clouds over the hills by the evening, and a clear night to follow."
	model := demomodel.New(demomodel.Step{ChunkDelay: 60 * time.Millisecond, Text: payload + "\n" +
		"```ops\n" + `[{"op":"remember","topic":"weather","text":"the owner asks after Istanbul"}]` + "\n```\n" +
		"THOUGHT: weather talk again\nFACE: happy"})
	api := telegramtest.New(t, botToken)
	newPet(t, model, withTelegram(api))
	api.SendText(ownerID, "weather in Istanbul?")
	api.WaitMessage(t, ownerID, func(m telegramtest.Message) bool { return strings.HasPrefix(m.Text, payload[:60]) })
	drafts := api.Drafts(ownerID)
	if len(drafts) == 0 {
		t.Fatal("the owner saw no draft while the reply was written")
	}
	for i, d := range drafts {
		if !strings.HasPrefix(payload, d.Text) || d.ID != drafts[0].ID {
			t.Errorf("draft %d = %+v, want a start of the reply under the first draft's id %d", i, d, drafts[0].ID)
		}
	}
}
