package state

import (
	"context"
	"errors"
	"fmt"
	"shelldon/contracts"
	"strings"
	"testing"
	"time"
)

func TestTurnLifecycle(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	start := time.UnixMilli(1_700_000_000_000)
	long := "please   tell me\nabout " + strings.Repeat("é", 100)
	if err := s.Turns().Start(ctx, TurnStart{ID: "t1", Kind: "chat", Started: start, Preview: long, WorkerPID: 0}); err != nil {
		t.Fatal(err)
	}
	if err := s.Turns().SetWorker(ctx, "t1", 4242); err != nil {
		t.Fatal(err)
	}

	turns, err := s.Turns().Recent(ctx, 5)
	if err != nil || len(turns) != 1 {
		t.Fatalf("Turns().Recent = %v, %v, want one", turns, err)
	}
	running := turns[0]
	wantPreview := "please tell me about " + strings.Repeat("é", MaxPreviewRunes-len("please tell me about "))
	if running.Preview != wantPreview {
		t.Errorf("Preview = %q, want %q", running.Preview, wantPreview)
	}
	if !running.Ended.IsZero() || running.Outcome != "" || running.Total != 0 {
		t.Errorf("a running turn reads as ended %v, outcome %q, total %v", running.Ended, running.Outcome, running.Total)
	}
	if running.WorkerPID != 4242 || running.Kind != "chat" || !running.Started.Equal(start) {
		t.Errorf("running turn = %+v", running)
	}

	end := TurnEnd{ID: "t1", Ended: start.Add(3500 * time.Millisecond), Outcome: "ok", Error: "", ModelTime: 2100 * time.Millisecond,
		WorkerPeak: 9 << 20, WorkerCPU: 340 * time.Millisecond, WorkerExit: "success", WorkerJoin: 12 * time.Millisecond,
		Usage: contracts.UsageByProvider{{Provider: "openrouter", Usage: contracts.Usage{PromptTokens: 4321, CompletionTokens: 87}}}}
	if err := s.Turns().Finish(ctx, end); err != nil {
		t.Fatal(err)
	}
	// A second finish, as from a late timeout, changes nothing.
	if err := s.Turns().Finish(ctx, TurnEnd{ID: "t1", Ended: start.Add(time.Hour), Outcome: "timeout", Error: "late"}); err != nil {
		t.Errorf("finishing a finished turn = %v, want nil", err)
	}
	turns, _ = s.Turns().Recent(ctx, 5)
	got := turns[0]
	if got.Outcome != "ok" || got.Error != "" || !got.Ended.Equal(end.Ended) || got.Total != 3500*time.Millisecond || got.ModelTime != 2100*time.Millisecond ||
		got.WorkerPeak != 9<<20 || got.WorkerCPU != 340*time.Millisecond || got.WorkerExit != "success" || got.WorkerJoin != 12*time.Millisecond ||
		got.PromptTokens != 4321 || got.CompletionTokens != 87 {
		t.Errorf("finished turn = %+v, want the first finish kept", got)
	}
}

func TestTurnErrors(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	now := time.Now()
	if err := s.Turns().Start(ctx, TurnStart{ID: "t1", Kind: "chat", Started: now}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		err    error
		wantIs error
	}{
		{"start without id", s.Turns().Start(ctx, TurnStart{Kind: "chat", Started: now}), nil},
		{"start without kind", s.Turns().Start(ctx, TurnStart{ID: "t2", Started: now}), nil},
		{"start a duplicate id", s.Turns().Start(ctx, TurnStart{ID: "t1", Kind: "chat", Started: now}), nil},
		{"worker of an unknown turn", s.Turns().SetWorker(ctx, "nope", 1), ErrNoTurn},
		{"finish an unknown turn", s.Turns().Finish(ctx, TurnEnd{ID: "nope", Ended: now, Outcome: "ok"}), ErrNoTurn},
		{"finish without outcome", s.Turns().Finish(ctx, TurnEnd{ID: "t1", Ended: now}), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil {
				t.Fatalf("%s = nil, want an error", tt.name)
			}
			if tt.wantIs != nil && !errors.Is(tt.err, tt.wantIs) {
				t.Errorf("%s = %v, want it to wrap %v", tt.name, tt.err, tt.wantIs)
			}
		})
	}
	turns, err := s.Turns().Recent(ctx, 10)
	if err != nil || len(turns) != 1 || !turns[0].Ended.IsZero() {
		t.Errorf("after the refused calls, turns = %+v, %v, want t1 alone and running", turns, err)
	}
}

func TestFinishTurnClipsTheErrorAndNeverGoesNegative(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	start := time.UnixMilli(5000)
	if err := s.Turns().Start(ctx, TurnStart{ID: "t1", Kind: "chat", Started: start}); err != nil {
		t.Fatal(err)
	}
	// An end before the start (a clock step) and an oversize, broken error.
	if err := s.Turns().Finish(ctx, TurnEnd{ID: "t1", Ended: start.Add(-time.Second), Outcome: "failed", Error: strings.Repeat("x", 5000) + "\xff"}); err != nil {
		t.Fatal(err)
	}
	turns, _ := s.Turns().Recent(ctx, 1)
	if turns[0].Total != 0 {
		t.Errorf("Total of a turn that ended before it started = %v, want 0", turns[0].Total)
	}
	if len([]rune(turns[0].Error)) != MaxErrorRunes {
		t.Errorf("Error kept %d characters, want %d", len([]rune(turns[0].Error)), MaxErrorRunes)
	}
}

func TestRecentTurnsOrderAndLimit(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	base := time.UnixMilli(1_000_000)
	// Inserted out of order, and two with the same start.
	for _, tc := range []struct {
		id  string
		off time.Duration
	}{{"b", 2 * time.Second}, {"a", time.Second}, {"d", 4 * time.Second}, {"c", 4 * time.Second}} {
		if err := s.Turns().Start(ctx, TurnStart{ID: tc.id, Kind: "chat", Started: base.Add(tc.off)}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		n    int
		want []string
	}{
		{0, nil}, {-1, nil}, {1, []string{"c"}}, {3, []string{"c", "d", "b"}}, {10, []string{"c", "d", "b", "a"}},
	}
	for _, tt := range tests {
		turns, err := s.Turns().Recent(ctx, tt.n)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, turn := range turns {
			ids = append(ids, turn.ID)
		}
		if strings.Join(ids, ",") != strings.Join(tt.want, ",") {
			t.Errorf("Turns().Recent(%d) = %v, want %v", tt.n, ids, tt.want)
		}
	}
}

func TestTurnsSince(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	base := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for i, at := range []time.Time{base.Add(-time.Hour), base, base.Add(5 * time.Hour)} {
		if err := s.Turns().Start(ctx, TurnStart{ID: fmt.Sprintf("t%d", i), Kind: "chat", Started: at}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		since time.Time
		want  int
	}{{base.Add(-2 * time.Hour), 3}, {base, 2}, {base.Add(time.Hour), 1}, {base.Add(6 * time.Hour), 0}} {
		if got, err := s.Turns().CountSince(ctx, tc.since); err != nil || got != tc.want {
			t.Errorf("Turns().CountSince(%v) = %d, %v; want %d", tc.since, got, err, tc.want)
		}
	}
}

// TestTodaysTurnsAreCountedOncePerStart: the panel's strip asks for the
// turns since midnight at every refresh; an idle pet's ask runs no SQL
// (the database is closed under the second ask here), and a turn that
// starts, or another midnight, counts again.
func TestTodaysTurnsAreCountedOncePerStart(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	midnight := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	start := func(id string, at time.Time) {
		t.Helper()
		if err := s.Turns().Start(ctx, TurnStart{ID: id, Kind: "chat", Started: at}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(since time.Time, want int) {
		t.Helper()
		if got, err := s.Turns().CountSince(ctx, since); err != nil || got != want {
			t.Fatalf("Turns().CountSince(%v) = %d, %v; want %d", since, got, err, want)
		}
	}
	start("t0", midnight.Add(-time.Hour))
	start("t1", midnight.Add(time.Hour))
	count(midnight, 1)
	start("t2", midnight.Add(2*time.Hour))
	count(midnight, 2)
	count(midnight.Add(-2*time.Hour), 3)
	count(midnight, 2)

	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
	count(midnight, 2)
}

// TestFinishingInterruptedTurnsReadsOnlyTheRunningOnes: at every start
// core ends the turns a crash left running; on a board with months of
// turns that must find them through an index of the running turns, not by
// reading every turn there ever was.
func TestFinishingInterruptedTurnsReadsOnlyTheRunningOnes(t *testing.T) {
	plan := queryPlan(t, newStore(t), finishInterruptedQuery, 0, OutcomeInterrupted, 0)
	if strings.Contains(plan, "SCAN") || !strings.Contains(plan, "USING INDEX turns_running") {
		t.Errorf("the plan of ending the interrupted turns is %q, want a search of turns_running and no scan", plan)
	}
}

func TestTurnsOfKindSince(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	midnight := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	starts := []struct {
		id, kind string
		at       time.Duration
	}{
		{"s1", "scheduled", -2 * time.Hour},
		{"c1", "chat", time.Hour},
		{"s2", "scheduled", 0},
		{"s3", "scheduled", 9 * time.Hour},
		{"c2", "chat", 10 * time.Hour},
	}
	for _, st := range starts {
		if err := s.Turns().Start(ctx, TurnStart{ID: st.id, Kind: st.kind, Started: midnight.Add(st.at)}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		kind      string
		since     time.Time
		wantCount int
		wantLast  time.Time
	}{
		{"scheduled", midnight, 2, midnight.Add(9 * time.Hour)},
		{"scheduled", midnight.Add(-24 * time.Hour), 3, midnight.Add(9 * time.Hour)},
		{"scheduled", midnight.Add(9*time.Hour + time.Millisecond), 0, midnight.Add(9 * time.Hour)},
		{"chat", midnight, 2, midnight.Add(10 * time.Hour)},
		{"resumed", midnight, 0, time.Time{}},
		{"", midnight, 0, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s since %s", tt.kind, tt.since.Format(time.TimeOnly)), func(t *testing.T) {
			count, last, err := s.Turns().OfKindSince(ctx, tt.kind, tt.since)
			if err != nil || count != tt.wantCount || !last.Equal(tt.wantLast) {
				t.Errorf("Turns().OfKindSince(%q, %v) = %d, %v, %v, want %d, %v", tt.kind, tt.since, count, last, err, tt.wantCount, tt.wantLast)
			}
		})
	}
}
