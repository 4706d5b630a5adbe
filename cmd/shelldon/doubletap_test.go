package main

import (
	"strings"
	"testing"

	"shelldon/demomodel"
	"shelldon/transports/telegram/telegramtest"
)

// TestADoubleTapCarriesTheCallOutOnce: the owner taps Approve and then
// Deny on the same card before either is answered, as a shaky thumb or a
// slow network does. The call runs once, on the first tap; the second
// decides nothing, and says so.
func TestADoubleTapCarriesTheCallOutOnce(t *testing.T) {
	t.Parallel()
	model := demomodel.New(writeCall("w1", "once.txt", "eggs"), demomodel.Step{Text: "Saved the eggs."})
	api := telegramtest.New(t, botToken)
	p := newPet(t, model, withTelegram(api))
	api.SendText(ownerID, "eggs, once")
	ask := api.WaitMessage(t, ownerID, func(m telegramtest.Message) bool { return len(m.Keyboard) > 0 })
	p.waitTurns(1)
	tap(api, ask, "Approve")
	second := tap(api, ask, "Deny")
	answer := api.WaitCall(t, "answerCallbackQuery", func(c telegramtest.Call) bool { return c.Params["callback_query_id"] == second })
	if text := answer.Params["text"]; !strings.Contains(text, "already answered") && !strings.Contains(text, "settled: approved") {
		t.Errorf("the second tap was answered %q, want it told the first one counts", text)
	}
	api.WaitMessage(t, ownerID, textHas("Saved the eggs."))
	api.WaitMessage(t, ownerID, func(m telegramtest.Message) bool {
		return m.ID == ask.ID && m.Keyboard == nil && strings.Contains(m.Text, "Approved at")
	})
	api.SendText(ownerID, "/pending")
	api.WaitMessage(t, ownerID, textHas("Nothing is waiting for your answer."))
	saved, denied := 0, 0
	for _, m := range api.Messages(ownerID) {
		saved += strings.Count(m.Text, "Saved the eggs.")
		denied += strings.Count(m.Text, "Denied")
	}
	if saved != 1 || denied != 0 {
		t.Errorf("the owner was told %d time(s) it was saved and %d time(s) it was denied, want once and never", saved, denied)
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("the model was asked %d times, want 2 (the call, then its one result)", n)
	}
}
