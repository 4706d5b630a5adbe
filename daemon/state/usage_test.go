package state

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/statedir"
)

func tokens(prompt, completion int) contracts.Usage {
	return contracts.Usage{PromptTokens: prompt, CompletionTokens: completion}
}

// finishedTurn records a turn that started at start and used usage.
func finishedTurn(t *testing.T, s *Store, id string, start time.Time, usage contracts.UsageByProvider) {
	t.Helper()
	ctx := context.Background()
	if err := s.Turns().Start(ctx, TurnStart{ID: id, Kind: "chat", Started: start}); err != nil {
		t.Fatal(err)
	}
	if err := s.Turns().Finish(ctx, TurnEnd{ID: id, Ended: start.Add(time.Second), Outcome: "ok", Usage: usage}); err != nil {
		t.Fatal(err)
	}
}

// TestTokensArePerProviderAndSummedSinceAnInstant: a turn the fallback
// chain answered from two providers keeps each one's tokens, listed in
// the order they answered and summed into the row's totals; the sums
// since an instant count each turn by its start, per provider.
func TestTokensArePerProviderAndSummedSinceAnInstant(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	day := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
	finishedTurn(t, s, "yesterday", day.Add(-time.Minute), contracts.UsageByProvider{{Provider: "openrouter", Usage: tokens(1000, 100)}})
	finishedTurn(t, s, "morning", day.Add(9*time.Hour), contracts.UsageByProvider{
		{Provider: "openrouter", Usage: tokens(300, 20)}, {Provider: "local", Usage: tokens(50, 5)}})
	finishedTurn(t, s, "evening", day.Add(20*time.Hour), contracts.UsageByProvider{{Provider: "local", Usage: tokens(7, -3)}})

	turns, err := s.Turns().Recent(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	morning := turns[1]
	if wantUsage := (contracts.UsageByProvider{{Provider: "openrouter", Usage: tokens(300, 20)}, {Provider: "local", Usage: tokens(50, 5)}}); morning.ID != "morning" ||
		!slices.Equal(morning.Usage, wantUsage) || morning.PromptTokens != 350 || morning.CompletionTokens != 25 {
		t.Errorf("the morning's turn = %+v, want %+v and the totals 350+25", morning, wantUsage)
	}
	if evening := turns[0]; !slices.Equal(evening.Usage, contracts.UsageByProvider{{Provider: "local", Usage: tokens(7, 0)}}) {
		t.Errorf("the evening's turn kept %+v, want a negative count kept as 0", evening.Usage)
	}

	for _, tc := range []struct {
		since time.Time
		want  contracts.UsageByProvider
	}{
		{day, contracts.UsageByProvider{{Provider: "local", Usage: tokens(57, 5)}, {Provider: "openrouter", Usage: tokens(300, 20)}}},
		{day.Add(-time.Minute), contracts.UsageByProvider{{Provider: "local", Usage: tokens(57, 5)}, {Provider: "openrouter", Usage: tokens(1300, 120)}}},
		{day.Add(9*time.Hour + time.Millisecond), contracts.UsageByProvider{{Provider: "local", Usage: tokens(7, 0)}}},
		{day.Add(24 * time.Hour), nil},
	} {
		got, err := s.Turns().UsageSince(ctx, tc.since)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("UsageSince(%v) = %+v, %v, want %+v", tc.since, got, err, tc.want)
		}
	}
}

// TestATurnKeepsABoundedUsage: a worker's word is bounded like any
// input: at most MaxTurnProviders providers, each name cut to
// MaxProviderRunes; the row's totals still count every provider.
func TestATurnKeepsABoundedUsage(t *testing.T) {
	s := newStore(t)
	var usage contracts.UsageByProvider
	for i := range MaxTurnProviders + 4 {
		usage = append(usage, contracts.ProviderUsage{Provider: fmt.Sprintf("%02d", i) + strings.Repeat("p", MaxProviderRunes), Usage: tokens(1, 1)})
	}
	finishedTurn(t, s, "t", time.UnixMilli(1_700_000_000_000), usage)
	turns, err := s.Turns().Recent(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	got := turns[0]
	if len(got.Usage) != MaxTurnProviders || got.PromptTokens != MaxTurnProviders+4 {
		t.Fatalf("kept %d providers and %d prompt tokens, want %d and %d", len(got.Usage), got.PromptTokens, MaxTurnProviders, MaxTurnProviders+4)
	}
	for _, p := range got.Usage {
		if len(p.Provider) != MaxProviderRunes {
			t.Errorf("kept a provider's name of %d characters, want %d", len(p.Provider), MaxProviderRunes)
		}
	}
}

// TestTheDaysSumReadsOnlyItsIndex: the sum of a day's tokens per
// provider, asked for every /status and every turn the cap or the budget
// weighs, reads the covering index over the days it asks for, never the
// whole table.
func TestTheDaysSumReadsOnlyItsIndex(t *testing.T) {
	plan := queryPlan(t, newStore(t), usageSinceQuery, 0)
	if !strings.Contains(plan, "SEARCH turn_usage USING COVERING INDEX turn_usage_by_start (started_at>?)") {
		t.Errorf("the plan of the day's sum is %q, want a search of the covering index by the start", plan)
	}
}

// queryPlan is SQLite's plan for query with args, its steps joined by "; ".
func queryPlan(t *testing.T, s *Store, query string, args ...any) string {
	t.Helper()
	rows, err := s.db.Query("EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}

// TestUpgradeKeepsTheTokensOfEarlierTurns: the tokens a turn counted
// before providers were recorded stay in the day's and the month's sums,
// under UnknownProvider.
func TestUpgradeKeepsTheTokensOfEarlierTurns(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	ctx := context.Background()
	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = migrations[:11]
	start := time.UnixMilli(1_700_000_000_000)
	before := openStore(t, l)
	if _, err := before.db.Exec(`INSERT INTO turns (id, kind, started_at, ended_at, outcome, prompt_tokens, completion_tokens) VALUES ('old', 'chat', ?, ?, 'ok', 640, 32)`,
		start.UnixMilli(), start.Add(time.Second).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	before.Close()
	migrations = saved

	s := openStore(t, l)
	defer s.Close()
	got, err := s.Turns().UsageSince(ctx, start)
	if want := (contracts.UsageByProvider{{Provider: UnknownProvider, Usage: tokens(640, 32)}}); err != nil || !slices.Equal(got, want) {
		t.Errorf("UsageSince after the upgrade = %+v, %v, want %+v", got, err, want)
	}
}
