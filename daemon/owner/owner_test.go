package owner

import (
	"errors"
	"strings"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/state"
	"shelldon/daemon/tokens"
	"shelldon/daemon/toolstore"
)

func TestRoughly(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{1500 * time.Microsecond, "2 ms"},
		{time.Second, "1 second"},
		{12340 * time.Millisecond, "12.3 seconds"},
		{90 * time.Second, "1 minute 30 seconds"},
		{2 * time.Minute, "2 minutes"},
		{time.Hour, "1 hour"},
		{3*time.Hour + 20*time.Minute, "3 hours 20 minutes"},
		{24 * time.Hour, "1 day"},
		{50 * time.Hour, "2 days 2 hours"},
	} {
		if got := Roughly(tc.d); got != tc.want {
			t.Errorf("Roughly(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestTools(t *testing.T) {
	got := Tools(ToolFacts{
		Builtin: []string{"get_time", "git"},
		Stored:  []toolstore.Listed{{Name: "greet", State: toolstore.Live}, {Name: "boom", State: toolstore.Quarantined}},
		Strikes: map[string]int{"greet": 2},
		Gating:  "shout", Queued: []string{"calc"}, Waiting: []string{"echo"},
	})
	for _, want := range []string{"Built in: get_time, git.", "live: greet (2 strike(s)).", "being tested: shout; next: calc.",
		"waiting for your answer: echo.", "Put away: boom. /restore NAME"} {
		if !strings.Contains(got, want) {
			t.Errorf("Tools(...) = %q, want it to say %q", got, want)
		}
	}
	if got := Tools(ToolFacts{}); !strings.Contains(got, "being tested: none.") || strings.Contains(got, "/restore") {
		t.Errorf("Tools of a pet without tools = %q", got)
	}
}

// TestSchedulesShowTheirMark: a schedule set by a turn that had read a
// page says so in the owner's list; the owner's own do not.
func TestSchedulesShowTheirMark(t *testing.T) {
	got := Schedules([]state.Scheduled{
		{ID: 1, Text: "water the plants", Next: time.Now()},
		{ID: 2, Text: "write what the page said", Next: time.Now(), Outside: "https://example.com/page"},
	}, "")
	lines := strings.Split(got, "\n")
	if len(lines) < 3 || strings.Contains(lines[1], "⚠") || !strings.HasSuffix(lines[2], "⚠ set after reading https://example.com/page") {
		t.Errorf("Schedules(...) = %q, want the second alone marked with where its turn read from", got)
	}
}

func TestCost(t *testing.T) {
	for _, tc := range []struct {
		amount   float64
		currency string
		want     string
	}{
		{0, "", "0.00"},
		{0, "USD", "0.00 USD"},
		{0.00036, "USD", "0.0004 USD"},
		{0.00004, "€", "0.0000 €"},
		{0.01, "", "0.01"},
		{0.488718, "USD", "0.49 USD"},
		{1234.5, "\x1b[31m", `1234.50 \x1b[31m`},
	} {
		if got := Cost(tc.amount, tc.currency); got != tc.want {
			t.Errorf("Cost(%v, %q) = %q, want %q", tc.amount, tc.currency, got, tc.want)
		}
	}
}

// TestTokenReport: the last turn's tokens, today's and this month's per
// provider, an estimate for each provider with a price, and the cap.
func TestTokenReport(t *testing.T) {
	prices := tokens.Prices{"openrouter": {PromptPerMillion: 0.15, CompletionPerMillion: 0.6}}
	today := contracts.UsageByProvider{{Provider: "local", Usage: contracts.Usage{PromptTokens: 1000, CompletionTokens: 50}},
		{Provider: "openrouter", Usage: contracts.Usage{PromptTokens: 4000, CompletionTokens: 250}}}
	month := contracts.UsageByProvider{{Provider: "openrouter", Usage: contracts.Usage{PromptTokens: 2_000_000, CompletionTokens: 100_000}}}
	for _, tc := range []struct {
		name  string
		facts TokenFacts
		want  string
	}{
		{"a fresh pet", TokenFacts{}, "Tokens (prompt+completion, as the providers counted them): no turn has ended yet.\nToday: none.\nThis month: none."},
		{"priced and unpriced providers, a cap", TokenFacts{Last: today[1:], LastKnown: true, Today: today, Month: month, Prices: prices, Currency: "USD", Cap: 5000},
			"Tokens (prompt+completion, as the providers counted them): the last turn 4000+250 — openrouter 4000+250 ≈ 0.0008 USD.\n" +
				"Today: 5000+300 — local 1000+50, openrouter 4000+250 ≈ 0.0008 USD.\n" +
				"This month: 2000000+100000 — openrouter 2000000+100000 ≈ 0.36 USD.\n" +
				"Daily token cap: 5300 of 5000 used today; at the cap, a message of yours asks you before I think about it."},
		{"no prices", TokenFacts{Last: nil, LastKnown: true, Today: today[:1], Month: today[:1]},
			"Tokens (prompt+completion, as the providers counted them): the last turn counted none.\nToday: 1000+50 — local 1000+50.\nThis month: 1000+50 — local 1000+50."},
		{"a provider that reports no usage", TokenFacts{Last: contracts.UsageByProvider{{Provider: "local"}}, LastKnown: true,
			Today: append(contracts.UsageByProvider{{Provider: "local"}}, today[1]), Month: month, Prices: prices, Currency: "USD"},
			"Tokens (prompt+completion, as the providers counted them): the last turn none counted — local not reported.\n" +
				"Today: 4000+250 counted — local not reported, openrouter 4000+250 ≈ 0.0008 USD.\n" +
				"This month: 2000000+100000 — openrouter 2000000+100000 ≈ 0.36 USD."},
		{"unknown", TokenFacts{Err: errors.New("disk I/O error")},
			"Tokens (prompt+completion, as the providers counted them): no turn has ended yet.\nToday and this month: unknown (disk I/O error)."},
	} {
		if got := TokenReport(tc.facts); got != tc.want {
			t.Errorf("%s: TokenReport(%+v) =\n%s\nwant\n%s", tc.name, tc.facts, got, tc.want)
		}
	}
}

// TestStatusReportShowsWhatItIsGiven: every fact core gathers reaches the
// report, and the owner's and the model's words in it are made visible.
func TestStatusReportShowsWhatItIsGiven(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	got := StatusReport(Status{
		Now: now, Started: now.Add(-2 * time.Hour), Turn: "abc", TurnStarted: now.Add(-3 * time.Second), TurnAbout: "hi\x1b[2J",
		Pending: 2, Held: 1, Mood: "happy", MoodWhy: "a turn answered", MoodSince: now,
		Memory: "Memory: core 9.0 MiB resident.", Budget: "Self-driven turns today: 0 of 12.", Waiting: 3,
		StrangerUpdates: 4, StrangerSenders: 1, LatestStranger: &state.Stranger{Transport: "telegram", Sender: "666", Last: now},
		Turns:  []state.TurnRecord{{Started: now, Ended: now.Add(time.Second), Total: time.Second, Outcome: "ok", Preview: "hello"}},
		Tokens: TokenFacts{Today: contracts.UsageByProvider{{Provider: "demo", Usage: contracts.Usage{PromptTokens: 12, CompletionTokens: 3}}}},
	})
	for _, want := range []string{"Up 2 hours", "Working on turn abc for 3 seconds", `hi\x1b[2J`, "2 message(s) wait", "1 decision(s) wait",
		"Mood: happy", "Memory: core 9.0 MiB", "0 of 12", "Requests waiting for you: 3", "Ignored 4 message(s) from 1 stranger(s)",
		"ok in 1 second — hello", "Today: 12+3 — demo 12+3."} {
		if !strings.Contains(got, want) {
			t.Errorf("StatusReport = %q, want it to say %q", got, want)
		}
	}
	if strings.Contains(got, "\x1b") {
		t.Errorf("StatusReport holds a raw escape: %q", got)
	}
}
