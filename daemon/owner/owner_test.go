package owner

import (
	"strings"
	"testing"
	"time"

	"shelldon/daemon/state"
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

// TestStatusReportShowsWhatItIsGiven: every fact core gathers reaches the
// report, and the owner's and the model's words in it are made visible.
func TestStatusReportShowsWhatItIsGiven(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	got := StatusReport(Status{
		Now: now, Started: now.Add(-2 * time.Hour), Turn: "abc", TurnStarted: now.Add(-3 * time.Second), TurnAbout: "hi\x1b[2J",
		Pending: 2, Held: 1, Mood: "happy", MoodWhy: "a turn answered", MoodSince: now,
		Memory: "Memory: core 9.0 MiB resident.", Budget: "Self-driven turns today: 0 of 12.", Waiting: 3,
		StrangerUpdates: 4, StrangerSenders: 1, LatestStranger: &state.Stranger{Transport: "telegram", Sender: "666", Last: now},
		Turns: []state.TurnRecord{{Started: now, Ended: now.Add(time.Second), Total: time.Second, Outcome: "ok", Preview: "hello"}},
	})
	for _, want := range []string{"Up 2 hours", "Working on turn abc for 3 seconds", `hi\x1b[2J`, "2 message(s) wait", "1 decision(s) wait",
		"Mood: happy", "Memory: core 9.0 MiB", "0 of 12", "Requests waiting for you: 3", "Ignored 4 message(s) from 1 stranger(s)",
		"ok in 1 second — hello"} {
		if !strings.Contains(got, want) {
			t.Errorf("StatusReport = %q, want it to say %q", got, want)
		}
	}
	if strings.Contains(got, "\x1b") {
		t.Errorf("StatusReport holds a raw escape: %q", got)
	}
}
