package main

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/owner"
	"shelldon/demomodel"
)

// TestTokensPerProviderAndTheDailyCapThroughTheWholePet: the real
// go-openai client reads the usage the scripted models report, and the
// figures cross the broker, the worker and core into state.db. The
// first turn is answered by the primary provider; then, with today's
// tokens over the owner's cap of 1, the next message asks first, with
// today's figure; approved, it is answered by the backup (the primary is
// down by then). /status shows the last turn's tokens and today's and
// this month's per provider, with a cost estimate for the provider that
// has a price, and `shelldon turns` names the provider of each turn.
func TestTokensPerProviderAndTheDailyCapThroughTheWholePet(t *testing.T) {
	const first, second = "Hello from the primary.", "Hello from the backup."
	primary := demomodel.New(demomodel.Step{Text: first})
	primary.Fallback = func(demomodel.Request) demomodel.Step { return demomodel.Step{Status: 503, Error: "overloaded"} }
	backup := demomodel.New(demomodel.Step{Text: second})
	backupServer := httptest.NewServer(backup)
	t.Cleanup(backupServer.Close)
	p := newPet(t, primary, func(c *config.Config) {
		c.Providers[0].PricePromptPerMillion, c.Providers[0].PriceCompletionPerMillion = 2, 10
		c.Providers = append(c.Providers, config.Provider{Name: "backup", BaseURL: backupServer.URL + "/v1", Model: demomodel.ModelName, Timeout: c.Timeouts.Worker})
		c.Budget.DailyTokenCap, c.Budget.Currency = 1, "USD"
	})

	p.say("hello?")
	if r := p.reply(15 * time.Second); r.Text != first {
		t.Fatalf("first reply = %+v", r)
	}
	p.waitTurns(1)
	used := demoTokens(primary.Requests()[0], len(first))

	p.say("are you still there?")
	ask := p.approval(15 * time.Second)
	if wantNote := fmt.Sprintf("today's turns used %d tokens, at or over your daily cap of 1", used.Total()); ask.Tool != "more tokens today" ||
		!strings.Contains(ask.Note, wantNote) || ask.Detail != "are you still there?" {
		t.Fatalf("the owner was asked %+v, want %q and the message", ask, wantNote)
	}
	if n := len(backup.Requests()); n != 0 {
		t.Fatalf("the backup was asked %d times before the owner approved", n)
	}
	p.decide(ask.Turn, true)
	p.settled(ask.Turn, contracts.ApprovalApproved)
	if r := p.reply(30 * time.Second); r.Text != second {
		t.Fatalf("the approved message's reply = %+v", r)
	}
	p.waitTurns(2)
	last := demoTokens(backup.Requests()[0], len(second))

	p.say("/status")
	report := p.reply(10 * time.Second).Text
	cost := owner.Cost((float64(used.PromptTokens)*2+float64(used.CompletionTokens)*10)/1e6, "USD")
	perProvider := fmt.Sprintf("%d+%d — backup %d+%d, scripted %d+%d ≈ %s", used.PromptTokens+last.PromptTokens, used.CompletionTokens+last.CompletionTokens,
		last.PromptTokens, last.CompletionTokens, used.PromptTokens, used.CompletionTokens, cost)
	for _, want := range []string{
		fmt.Sprintf("the last turn %d+%d — backup %d+%d.", last.PromptTokens, last.CompletionTokens, last.PromptTokens, last.CompletionTokens),
		"Today: " + perProvider + ".",
		"This month: " + perProvider + ".",
		fmt.Sprintf("Daily token cap: %d of 1 used today", used.Total()+last.Total()),
	} {
		if !strings.Contains(report, want) {
			t.Errorf("/status =\n%s\nwant it to say %q", report, want)
		}
	}

	out, _, err := runCLI(t, "turns", "--state-dir", p.cfg.StateDir)
	if err != nil {
		t.Fatalf("shelldon turns = %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], " backup ") || !strings.Contains(lines[2], " scripted ") {
		t.Errorf("shelldon turns printed\n%s\nwant the backup's turn over the primary's", out)
	}
}
