package telegram

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/state"
	"shelldon/transports/telegram/telegramtest"
)

// parkAs parks a request in the store as the approval authority does,
// created at created and expiring at expires, unless it is parked
// already.
func (r *rig) parkAs(t *testing.T, key string, created, expires time.Time) {
	t.Helper()
	err := r.store.Approvals().Park(context.Background(), state.PendingApproval{Turn: key, Kind: "memory", Title: "remember", Summary: "keeps a note",
		Detail: "note " + key, Digest: "d-" + key, Payload: []byte(`{}`), Transport: TransportName, Chat: "", Created: created, Expires: expires})
	if err != nil && !errors.Is(err, state.ErrApprovalExists) {
		t.Fatal(err)
	}
}

// TestATapIsAnsweredFromTheAuthoritysStatus: what a tap is answered with
// is where the approval authority says the request stands, whatever the
// transport saw of it: a request the authority settled while its word
// never reached the transport (core stopped before it was sent, the bus
// dropped it), or one whose time ran out before the authority's sweep,
// decides nothing, and the owner is told its outcome.
func TestATapIsAnsweredFromTheAuthoritysStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		// settle does to the parked request what the authority did, or
		// what time did, unseen by the transport; want is what the tap's
		// answer says.
		settle func(t *testing.T, r *rig, clk *clock.Fake)
		want   string
	}{
		{"settled by the authority", func(t *testing.T, r *rig, _ *clock.Fake) {
			if _, err := r.store.Approvals().Take(context.Background(), "t1", time.Now(), contracts.ApprovalApproved); err != nil {
				t.Fatal(err)
			}
		}, "settled: approved"},
		{"past its expiry", func(t *testing.T, r *rig, clk *clock.Fake) { clk.Advance(2 * time.Hour) }, "settled: expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Now())
			r := newRig(t, func(r *rig) { r.clock = clk })
			expires := time.Now().Add(time.Hour)
			r.parkAs(t, "t1", time.Now(), expires)
			msg := r.ask(t, contracts.ApprovalRequest{Turn: "t1", Tool: "remember", Note: "keeps a note", Detail: "note t1", Expires: expires})
			tc.settle(t, r, clk)
			_, tap := r.api.Tap(owner, owner, msg.ID, "a:t1")
			answer := r.api.WaitCall(t, "answerCallbackQuery", func(c telegramtest.Call) bool { return c.Params["callback_query_id"] == tap })
			if !strings.Contains(answer.Params["text"], tc.want) {
				t.Errorf("the tap was answered %q, want it to say %q", answer.Params["text"], tc.want)
			}
			r.api.WaitMessage(t, owner, func(m telegramtest.Message) bool { return m.ID == msg.ID && m.Keyboard == nil })
			if in := r.say(t, owner, "next"); in.Text != "next" {
				t.Errorf("core got %+v, want no decision on a request the authority no longer waits on", in)
			}
		})
	}
}

// TestATapAfterARestartIsAnsweredFromTheAuthority: the transport keeps
// nothing of a tap across a restart; the second tap on a card, after the
// restart and after core took the first, is answered with what the
// authority made of it, and its card settled, though the word of it
// never reached this transport.
func TestATapAfterARestartIsAnsweredFromTheAuthority(t *testing.T) {
	r := newRig(t)
	msg := r.ask(t, contracts.ApprovalRequest{Turn: "t1", Tool: "remember", Note: "keeps a note", Detail: "note t1"})
	r.api.Tap(owner, owner, msg.ID, "d:t1")
	var d contracts.Decision
	r.nextCore(t, contracts.KindDecision, &d)
	r.stop()
	// Core takes the decision while the transport is away.
	if _, err := r.store.Approvals().Take(context.Background(), "t1", time.Now(), contracts.ApprovalDenied); err != nil {
		t.Fatal(err)
	}
	r.start(t)
	_, again := r.api.Tap(owner, owner, msg.ID, "a:t1")
	r.api.WaitCall(t, "answerCallbackQuery", func(c telegramtest.Call) bool {
		return c.Params["callback_query_id"] == again && strings.Contains(c.Params["text"], "settled: denied")
	})
	r.api.WaitMessage(t, owner, func(m telegramtest.Message) bool {
		return m.ID == msg.ID && m.Keyboard == nil && strings.Contains(m.Text, "Denied at")
	})
	if in := r.say(t, owner, "next"); in.Text != "next" {
		t.Errorf("core got %+v, want no second decision", in)
	}
}

// TestTheTapsInFlightAreBounded: the note of decisions on their way is
// memory only, and bounded in time and in number; past either bound a tap
// asks the authority again, which takes a decision once.
func TestTheTapsInFlightAreBounded(t *testing.T) {
	var tp taps
	now := time.Now()
	if !tp.begin("t1", now) || tp.begin("t1", now.Add(time.Minute)) {
		t.Fatal("a second tap on a decision in flight was let through")
	}
	tp.done("t1")
	if !tp.begin("t1", now) {
		t.Error("a tap after core settled the request (or never heard of it) was held back")
	}
	if !tp.begin("t1", now.Add(tapInFlight)) {
		t.Error("a decision in flight past its bound still holds taps back")
	}
	for i := range maxTapsInFlight {
		tp.begin(fmt.Sprintf("n%d", i), now.Add(tapInFlight+time.Duration(i+1)*time.Millisecond))
	}
	if len(tp.sent) != maxTapsInFlight {
		t.Errorf("%d taps in flight, want at most %d", len(tp.sent), maxTapsInFlight)
	}
	if _, kept := tp.sent["t1"]; kept {
		t.Error("the oldest tap in flight was kept past the bound")
	}
}

// TestAKeyAskedAgainSettlesOnlyItsNewCard: a resumed turn's next call is
// parked under the turn's key again; the card of the earlier request
// keeps what that one came to, and only the new card is settled with the
// new outcome.
func TestAKeyAskedAgainSettlesOnlyItsNewCard(t *testing.T) {
	r := newRig(t)
	first := r.ask(t, contracts.ApprovalRequest{Turn: "t1", Tool: "remember", Note: "keeps a note", Detail: "note one"})
	r.route(t, contracts.KindApprovalClosed, contracts.ApprovalClosed{Turn: "t1", Outcome: contracts.ApprovalDenied, At: time.Now()})
	r.api.WaitMessage(t, owner, func(m telegramtest.Message) bool {
		return m.ID == first.ID && m.Keyboard == nil && strings.Contains(m.Text, "Denied at")
	})
	second := r.ask(t, contracts.ApprovalRequest{Turn: "t1", Tool: "remember", Note: "keeps a note", Detail: "note two"})
	r.route(t, contracts.KindApprovalClosed, contracts.ApprovalClosed{Turn: "t1", Outcome: contracts.ApprovalApproved, At: time.Now()})
	r.api.WaitMessage(t, owner, func(m telegramtest.Message) bool {
		return m.ID == second.ID && m.Keyboard == nil && strings.Contains(m.Text, "Approved at")
	})
	r.say(t, owner, "sync") // the edits of the first card, if any, came before
	for _, m := range r.api.Messages(owner) {
		if m.ID == first.ID && !strings.Contains(m.Text, "Denied at") {
			t.Errorf("the earlier card now says %q, want it to keep its own outcome", m.Text)
		}
	}
}
