package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/state"
)

// costing makes every turn's worker say its model calls cost usage.
func (b *brainRig) costing(provider string, prompt, completion int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.usage = contracts.UsageByProvider{{Provider: provider, Usage: contracts.Usage{PromptTokens: prompt, CompletionTokens: completion}}}
}

// next is the next envelope of kind core sends the transport.
func (b *brainRig) next(kind contracts.Kind, what string) contracts.Envelope {
	b.t.Helper()
	for {
		env := receive(b.t, b.told, what)
		if env.Kind == kind {
			return env
		}
	}
}

// nextReply is the next message core sends the owner.
func (b *brainRig) nextReply(what string) contracts.Outbound {
	b.t.Helper()
	var out contracts.Outbound
	if err := b.next(contracts.KindOutbound, what).Decode(&out); err != nil {
		b.t.Fatal(err)
	}
	return out
}

// decide answers a request as the owner, from where it was shown.
func (b *brainRig) decide(key string, approve bool) {
	b.t.Helper()
	env, _ := contracts.NewEnvelope(contracts.KindDecision, "", contracts.Decision{Turn: key, Approve: approve, Chat: "owner"})
	if err := b.conn.Send(env); err != nil {
		b.t.Fatal(err)
	}
}

// status is what /status says now.
func (b *brainRig) status() string {
	b.t.Helper()
	b.send("/status")
	for {
		if out := b.nextReply("the answer to /status"); strings.HasPrefix(out.Text, "Up ") {
			return out.Text
		}
	}
}

// TestTheTokenBudgetStopsSelfDrivenTurnsForTheDay: with a daily token
// budget of 1000, the hourly check-in runs while today's turns used
// less, is skipped (saying so in /status) once they used 1000 or more —
// the owner's own turn counting too, and never held back by it — and
// runs again after local midnight.
func TestTheTokenBudgetStopsSelfDrivenTurnsForTheDay(t *testing.T) {
	b := newBrain(t, func(c *config.Config) { c.Schedule.DailyTokenBudget = 1000 }, func(s *state.Store) {
		if _, err := s.Schedules().Add(context.Background(), state.Scheduled{Text: "check the plants", Next: brainStart.Add(time.Hour),
			Every: "1h0m0s", Transport: "test", Chat: "owner", Created: brainStart}); err != nil {
			t.Fatal(err)
		}
	})
	b.costing("demo", 500, 100)
	b.advanceTo(brainStart.Add(time.Hour))
	b.turn("the first check-in, with no tokens used today")
	b.eventually("it ended", func() bool { return b.turnsOf(KindScheduled) == 1 })
	b.send("how are the plants?")
	b.turn("the owner's turn: the token budget bounds only the pet's own")
	b.eventually("it ended", func() bool { return b.turnsOf("chat") == 1 })

	b.advanceTo(brainStart.Add(2 * time.Hour))
	b.eventually("the second check-in is skipped and the schedule moves on", func() bool {
		return b.schedules()[0].Next.Equal(brainStart.Add(3 * time.Hour))
	})
	b.noTurn("a check-in with 1200 tokens used today, of a budget of 1000")
	report := b.status()
	for _, want := range []string{"none once today's turns used 1000 tokens",
		"skipped \"check the plants\": today's turns used 1200 tokens, the daily token budget of self-driven turns is 1000; it resets at midnight",
		"Today: 1000+200 — demo 1000+200."} {
		if !strings.Contains(report, want) {
			t.Errorf("/status =\n%s\nwant it to say %q", report, want)
		}
	}

	b.advanceTo(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	if in := b.turn("the check-in after midnight"); !in.Scheduled {
		t.Errorf("after midnight: %+v", in)
	}
}

// TestTheDailyCapAsksTheOwnerFirst: with a cap of 1000 tokens, the turn
// that crosses it finishes; the next message starts no turn but asks,
// with today's figure and the cap; Approve starts its turn on exactly
// the message; Deny lets the next one go, politely; and a request
// settles like any other.
func TestTheDailyCapAsksTheOwnerFirst(t *testing.T) {
	b := newBrain(t, func(c *config.Config) { c.Budget.DailyTokenCap = 1000 }, nil)
	b.costing("demo", 1400, 100)
	b.send("write me a long poem")
	b.turn("the first turn, under the cap")
	if out := b.nextReply("the first turn's reply"); out.Text != "did: write me a long poem" {
		t.Fatalf("the turn that crossed the cap answered %+v, want it finished", out)
	}
	b.eventually("it ended", func() bool { return b.turnsOf("chat") == 1 })

	b.send("and another one")
	var ask contracts.ApprovalRequest
	if err := b.next(contracts.KindApprovalRequest, "the request past the cap").Decode(&ask); err != nil {
		t.Fatal(err)
	}
	if ask.Tool != "more tokens today" || !strings.Contains(ask.Note, "today's turns used 1500 tokens, at or over your daily cap of 1000") || ask.Detail != "and another one" {
		t.Errorf("the owner was asked %+v, want today's 1500 tokens, the cap of 1000 and the message", ask)
	}
	b.noTurn("a message past the cap, before the owner decided")
	if report := b.status(); !strings.Contains(report, "Daily token cap: 1500 of 1000 used today") || !strings.Contains(report, "Requests waiting for you: 1") {
		t.Errorf("/status =\n%s\nwant the cap's figures and the waiting request", report)
	}

	b.decide(ask.Turn, true)
	if in := b.turn("the approved message's turn"); in.Text != "and another one" || in.Scheduled {
		t.Errorf("the approved turn got %+v, want the message", in)
	}
	if out := b.nextReply("the approved turn's reply"); out.Text != "did: and another one" {
		t.Errorf("the approved turn answered %+v", out)
	}
	b.eventually("it ended", func() bool { return b.turnsOf("chat") == 2 })
	b.decide(ask.Turn, true)
	if out := b.nextReply("a second tap"); !strings.Contains(out.Text, "settled already (approved)") {
		t.Errorf("a second Approve was answered %q, want that it is settled already", out.Text)
	}

	b.send("one more?")
	var again contracts.ApprovalRequest
	if err := b.next(contracts.KindApprovalRequest, "the next request past the cap").Decode(&again); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(again.Note, "today's turns used 3000 tokens") {
		t.Errorf("the second request says %q, want today's 3000 tokens", again.Note)
	}
	b.decide(again.Turn, false)
	if out := b.nextReply("the answer to Deny"); !strings.Contains(out.Text, "I'll leave “one more?” for now") {
		t.Errorf("Deny was answered %q, want a polite let-go", out.Text)
	}
	b.noTurn("a denied message past the cap")
	if unanswered, err := b.store.Intake().Unanswered(context.Background()); err != nil || len(unanswered) != 0 {
		t.Errorf("messages left unanswered = %+v, %v, want none: the requests held them", unanswered, err)
	}
}

// TestTheCapDoesNotAskWithoutACap: with no cap, a day of many tokens
// asks nothing.
func TestTheCapDoesNotAskWithoutACap(t *testing.T) {
	b := newBrain(t, nil, nil)
	b.costing("demo", 1_000_000, 100_000)
	for i := range 3 {
		b.send("hello")
		b.turn("an owner's turn with no cap")
		b.eventually("it ended", func() bool { return b.turnsOf("chat") == i+1 })
	}
}
