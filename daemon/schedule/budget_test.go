package schedule

import (
	"fmt"
	"shelldon/testhost"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // America/Sao_Paulo even where the system has no tz database
)

func TestBudgetAllows(t *testing.T) {
	now := time.Date(2026, 3, 10, 14, 0, 0, 0, time.UTC)
	budget := Budget{Daily: 3, Cooldown: 30 * time.Minute}
	tests := []struct {
		name    string
		budget  Budget
		spent   Spent
		last    time.Time
		wantOK  bool
		wantWhy string
	}{
		{"none spent, none ever", budget, Spent{Turns: 0}, time.Time{}, true, ""},
		{"some spent, long ago", budget, Spent{Turns: 2}, now.Add(-2 * time.Hour), true, ""},
		{"cooldown just over", budget, Spent{Turns: 1}, now.Add(-30 * time.Minute), true, ""},
		{"all spent", budget, Spent{Turns: 3}, now.Add(-2 * time.Hour), false, "the daily budget of 3 self-driven turns is spent; it resets at midnight"},
		{"more than all spent", budget, Spent{Turns: 7}, time.Time{}, false, "the daily budget of 3 self-driven turns is spent; it resets at midnight"},
		{"one turn a day, spent", Budget{Daily: 1}, Spent{Turns: 1}, time.Time{}, false, "the daily budget of 1 self-driven turn is spent; it resets at midnight"},
		{"cooling down", budget, Spent{Turns: 1}, now.Add(-25 * time.Minute), false, "cooling down until 14:05"},
		{"cooling down to a part minute", budget, Spent{Turns: 1}, now.Add(-25*time.Minute + 10*time.Second), false, "cooling down until 14:06"},
		{"no cooldown", Budget{Daily: 3}, Spent{Turns: 2}, now, true, ""},
		{"budget off", Budget{}, Spent{Turns: 0}, time.Time{}, false, "self-driven turns are off: the daily budget is 0"},
		{"negative budget", Budget{Daily: -1}, Spent{Turns: 0}, time.Time{}, false, "self-driven turns are off: the daily budget is 0"},
		{"tokens below the token budget", Budget{Daily: 3, DailyTokens: 5000}, Spent{Turns: 1, Tokens: 4999}, time.Time{}, true, ""},
		{"tokens at the token budget", Budget{Daily: 3, DailyTokens: 5000}, Spent{Turns: 1, Tokens: 5000}, time.Time{}, false,
			"today's turns used 5000 tokens, the daily token budget of self-driven turns is 5000; it resets at midnight"},
		{"tokens over the token budget, cooling down too", Budget{Daily: 3, DailyTokens: 5000, Cooldown: time.Hour}, Spent{Turns: 1, Tokens: 9000}, now.Add(-time.Minute), false,
			"today's turns used 9000 tokens, the daily token budget of self-driven turns is 5000; it resets at midnight"},
		{"no token budget", Budget{Daily: 3}, Spent{Turns: 1, Tokens: 1_000_000_000}, time.Time{}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, wait, why := tt.budget.Allows(tt.spent, tt.last, now)
			if ok != tt.wantOK || why != tt.wantWhy {
				t.Errorf("%+v.Allows(%+v, %v, %v) = %v, %q, want %v, %q", tt.budget, tt.spent, tt.last, now, ok, why, tt.wantOK, tt.wantWhy)
			}
			// Only a cooldown has an end to wait for: the last start plus the cooldown.
			wantWait := time.Time{}
			if strings.HasPrefix(tt.wantWhy, "cooling down") {
				wantWait = tt.last.Add(tt.budget.Cooldown)
			}
			if !wait.Equal(wantWait) {
				t.Errorf("%+v.Allows(%+v, %v, %v) waits until %v, want %v", tt.budget, tt.spent, tt.last, now, wait, wantWait)
			}
		})
	}
}

func TestBudgetCooldownIsToldInNowsLocation(t *testing.T) {
	loc := berlin(t)
	now := time.Date(2026, 3, 10, 14, 0, 0, 0, loc)
	last := now.Add(-25 * time.Minute).UTC()
	if ok, _, why := (Budget{Daily: 3, Cooldown: 30 * time.Minute}).Allows(Spent{}, last, now); ok || !strings.HasSuffix(why, "14:05") {
		t.Errorf("Allows with last in UTC, now in Berlin = %v, %q, want cooling down until 14:05", ok, why)
	}
}

func TestMidnight(t *testing.T) {
	loc := berlin(t)
	saoPaulo, err := time.LoadLocation("America/Sao_Paulo")
	if err != nil {
		testhost.Missing(t, fmt.Sprintf("the time zone America/Sao_Paulo (%v)", err), "apt-get install tzdata")
	}
	tests := []struct {
		name        string
		now         time.Time
		want        time.Time
		wantElapsed time.Duration
	}{
		{"UTC", time.Date(2026, 3, 10, 14, 0, 0, 0, time.UTC), time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC), 14 * time.Hour},
		{"at midnight", time.Date(2026, 3, 10, 0, 0, 0, 0, loc), time.Date(2026, 3, 10, 0, 0, 0, 0, loc), 0},
		{"a moment before midnight", time.Date(2026, 3, 10, 23, 59, 59, 0, loc), time.Date(2026, 3, 10, 0, 0, 0, 0, loc), 24*time.Hour - time.Second},
		{"spring forward day is 23 hours", time.Date(2026, 3, 29, 23, 30, 0, 0, loc), time.Date(2026, 3, 29, 0, 0, 0, 0, loc), 22*time.Hour + 30*time.Minute},
		{"fall back day is 25 hours", time.Date(2026, 10, 25, 23, 30, 0, 0, loc), time.Date(2026, 10, 25, 0, 0, 0, 0, loc), 24*time.Hour + 30*time.Minute},
		// São Paulo's clocks went from 00:00 straight to 01:00 on 4 November 2018.
		{"no midnight that day", time.Date(2018, 11, 4, 10, 0, 0, 0, saoPaulo), time.Date(2018, 11, 4, 1, 0, 0, 0, saoPaulo), 9 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Midnight(tt.now)
			if !got.Equal(tt.want) || tt.now.Sub(got) != tt.wantElapsed {
				t.Errorf("Midnight(%v) = %v (%v before), want %v (%v before)", tt.now, got, tt.now.Sub(got), tt.want, tt.wantElapsed)
			}
			if got.Location() != tt.now.Location() {
				t.Errorf("Midnight(%v) is in %v, want %v", tt.now, got.Location(), tt.now.Location())
			}
		})
	}
}
