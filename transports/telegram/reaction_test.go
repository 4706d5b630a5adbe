package telegram

import (
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"testing"

	"shelldon/contracts"
	"shelldon/transports/telegram/telegramtest"
)

// TestTheOwnersMessageGetsEyes: once core confirms it kept the owner's
// message, and not before, the bot sets 👀 on that message.
func TestTheOwnersMessageGetsEyes(t *testing.T) {
	r := newRig(t, func(r *rig) { r.react = true })
	start := r.api.WaitCall(t, "setMessageReaction", nil) // the rig's /start, which it confirmed
	r.unconfirmed = true
	in := r.say(t, owner, "what is in my notes?")
	r.barrierOwner(t)
	if calls := r.api.Calls("setMessageReaction"); len(calls) != 1 {
		t.Fatalf("reactions before core kept the message: %+v", calls[1:])
	}
	r.confirm(t, in)
	call := r.api.WaitCall(t, "setMessageReaction", func(c telegramtest.Call) bool { return c.Seq != start.Seq })
	id, _ := strconv.ParseInt(call.Params["message_id"], 10, 64)
	if first, _ := strconv.ParseInt(start.Params["message_id"], 10, 64); id <= first {
		t.Errorf("the reaction went to message %d, want the owner's newer message, after /start's %d", id, first)
	}
	if got := r.api.Reactions(owner, id); !slices.Equal(got, []string{"👀"}) {
		t.Errorf("the message reacted to has %q, want 👀", got)
	}
	for _, m := range r.api.Messages(owner) {
		if m.ID == id {
			t.Errorf("the reaction went to the bot's own message %d, want the owner's", id)
		}
	}
}

// barrierOwner waits until the transport has handled what core sent so
// far, with a reply to the owner.
func (r *rig) barrierOwner(t *testing.T) {
	t.Helper()
	r.reply(t, owner, "noted")
	r.api.WaitMessage(t, owner, hasText("noted"))
}

// TestRefusedReactionsAreNotTriedAgain: where Telegram refuses reactions
// (a chat that takes none, a Bot API server without the method), the
// bot tries once, says so once in the log, and asks no more; every
// message still reaches core.
func TestRefusedReactionsAreNotTriedAgain(t *testing.T) {
	tests := []struct {
		name   string
		refuse func(*telegramtest.Server)
		log    string
	}{
		{"REACTION_INVALID", func(s *telegramtest.Server) { s.SetReactionsAllowed(false) }, "refused a reaction in this chat"},
		{"no such method", func(s *telegramtest.Server) {
			s.Fail(telegramtest.Fault{Method: "setMessageReaction", Status: http.StatusNotFound})
		}, "sets no reactions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			book := newLogBook()
			r := newRig(t, func(r *rig) { r.react, r.log = true, slog.New(book); tt.refuse(r.api) })
			for _, text := range []string{"one", "two", "three"} {
				if in := r.say(t, owner, text); in.Text != text {
					t.Errorf("core got %q, want %q", in.Text, text)
				}
			}
			book.wait(t, tt.log)
			r.barrierOwner(t)
			if n := len(r.api.Calls("setMessageReaction")); n != 1 {
				t.Errorf("setMessageReaction was called %d times, want once", n)
			}
			if n := len(book.matching(tt.log)); n != 1 {
				t.Errorf("the refusal was logged %d times, want once", n)
			}
		})
	}
}

// TestReactionsOff: with telegram.react off no reaction is set.
func TestReactionsOff(t *testing.T) {
	r := newRig(t)
	r.say(t, owner, "hello")
	r.route(t, contracts.KindOutbound, contracts.Outbound{Chat: strconv.Itoa(owner), Text: "hi"})
	r.api.WaitMessage(t, owner, hasText("hi"))
	if calls := r.api.Calls("setMessageReaction"); len(calls) != 0 {
		t.Errorf("reactions with telegram.react off: %+v", calls)
	}
}
