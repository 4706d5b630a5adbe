package schedule

import (
	"errors"
	"fmt"
	"shelldon/daemon/state"
	"shelldon/testhost"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // Europe/Berlin even where the system has no tz database
)

// berlin is a location with daylight-saving time: in 2026 its clocks go
// forward on 29 March at 02:00 and back on 25 October at 03:00.
func berlin(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		testhost.Missing(t, fmt.Sprintf("the time zone Europe/Berlin (%v)", err), "apt-get install tzdata")
	}
	return loc
}

func TestParseEvery(t *testing.T) {
	tests := []struct {
		in      string
		want    Every
		wantErr error
	}{
		{"", Every{Kind: Once}, nil},
		{"  ", Every{Kind: Once}, nil},
		{"day", Every{Kind: Daily}, nil},
		{"Daily", Every{Kind: Daily}, nil},
		{"week", Every{Kind: Weekly}, nil},
		{" weekly ", Every{Kind: Weekly}, nil},
		{"2h", Every{Kind: Interval, Interval: 2 * time.Hour}, nil},
		{"90m", Every{Kind: Interval, Interval: 90 * time.Minute}, nil},
		{"15m", Every{Kind: Interval, Interval: 15 * time.Minute}, nil},
		{"720h", Every{Kind: Interval, Interval: 30 * 24 * time.Hour}, nil},
		{"24h", Every{Kind: Interval, Interval: 24 * time.Hour}, nil},
		{"14m59s", Every{}, ErrInterval},
		{"721h", Every{}, ErrInterval},
		{"-2h", Every{}, ErrInterval},
		{"0s", Every{}, ErrInterval},
		{"fortnight", Every{}, ErrUnreadable},
		{"1d", Every{}, ErrUnreadable},
		{"2", Every{}, ErrUnreadable},
		{"99999999999999999h", Every{}, ErrUnreadable},
		{"\xff", Every{}, ErrUnreadable},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseEvery(tt.in)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("ParseEvery(%q) error = %v, want %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseEvery(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			if err != nil {
				return
			}
			back, err := ParseEvery(got.String())
			if err != nil || back != got {
				t.Errorf("ParseEvery(%q.String() = %q) = %+v, %v, want it back", tt.in, got.String(), back, err)
			}
		})
	}
}

func TestParseEveryErrorsSayWhatIsAccepted(t *testing.T) {
	_, err := ParseEvery("fortnight")
	for _, want := range []string{`"day"`, `"week"`, `"2h"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseEvery(fortnight) = %v, want it to mention %s", err, want)
		}
	}
	_, err = ParseEvery("5m")
	if err == nil || !strings.Contains(err.Error(), "15m0s") {
		t.Errorf("ParseEvery(5m) = %v, want it to name the least interval", err)
	}
}

func TestEveryString(t *testing.T) {
	tests := []struct {
		every Every
		want  string
	}{
		{Every{}, ""},
		{Every{Kind: Daily}, "day"},
		{Every{Kind: Weekly}, "week"},
		{Every{Kind: Interval, Interval: 2 * time.Hour}, "2h0m0s"},
		{Every{Kind: EveryKind(9)}, "EveryKind(9)"},
	}
	for _, tt := range tests {
		if got := tt.every.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.every, got, tt.want)
		}
	}
	if _, err := ParseEvery(Every{Kind: EveryKind(9)}.String()); err == nil {
		t.Error("ParseEvery of an unknown kind's String = nil error, want one")
	}
}

func TestNext(t *testing.T) {
	loc := berlin(t)
	at := func(y int, m time.Month, d, h, min int) time.Time { return time.Date(y, m, d, h, min, 0, 0, loc) }
	tests := []struct {
		name       string
		every      Every
		due, after time.Time
		want       time.Time
	}{
		{"once has no next", Every{}, at(2026, 3, 1, 9, 0), at(2026, 3, 1, 9, 1), time.Time{}},
		{"unknown kind has no next", Every{Kind: EveryKind(9)}, at(2026, 3, 1, 9, 0), at(2026, 3, 1, 9, 1), time.Time{}},
		{"zero interval has no next", Every{Kind: Interval}, at(2026, 3, 1, 9, 0), at(2026, 3, 1, 9, 1), time.Time{}},
		{"negative interval has no next", Every{Kind: Interval, Interval: -time.Hour}, at(2026, 3, 1, 9, 0), at(2026, 3, 1, 9, 1), time.Time{}},
		{"daily, run on time", Every{Kind: Daily}, at(2026, 3, 1, 9, 0), at(2026, 3, 1, 9, 0), at(2026, 3, 2, 9, 0)},
		{"daily, run late", Every{Kind: Daily}, at(2026, 3, 1, 9, 0), at(2026, 3, 1, 9, 5), at(2026, 3, 2, 9, 0)},
		{"daily, clock behind due", Every{Kind: Daily}, at(2026, 3, 1, 9, 0), at(2026, 2, 27, 9, 0), at(2026, 3, 2, 9, 0)},
		{"daily over spring forward keeps 09:00", Every{Kind: Daily}, at(2026, 3, 28, 9, 0), at(2026, 3, 28, 9, 1), at(2026, 3, 29, 9, 0)},
		{"daily over fall back keeps 09:00", Every{Kind: Daily}, at(2026, 10, 24, 9, 0), at(2026, 10, 24, 9, 1), at(2026, 10, 25, 9, 0)},
		{"daily into the spring gap runs an hour later", Every{Kind: Daily}, at(2026, 3, 28, 2, 30), at(2026, 3, 28, 2, 31), at(2026, 3, 29, 3, 30)},
		{"daily over the spring gap is back at 02:30", Every{Kind: Daily}, at(2026, 3, 28, 2, 30), at(2026, 3, 29, 12, 0), at(2026, 3, 30, 2, 30)},
		{"daily after a week off runs once, then tomorrow", Every{Kind: Daily}, at(2026, 3, 20, 9, 0), at(2026, 3, 27, 12, 0), at(2026, 3, 28, 9, 0)},
		{"daily after months off across DST", Every{Kind: Daily}, at(2026, 1, 10, 9, 0), at(2026, 7, 4, 8, 59), at(2026, 7, 4, 9, 0)},
		{"daily exactly at a due time skips it", Every{Kind: Daily}, at(2026, 1, 10, 9, 0), at(2026, 7, 4, 9, 0), at(2026, 7, 5, 9, 0)},
		{"weekly", Every{Kind: Weekly}, at(2026, 3, 23, 9, 0), at(2026, 3, 23, 9, 0), at(2026, 3, 30, 9, 0)},
		{"weekly after three weeks off", Every{Kind: Weekly}, at(2026, 3, 2, 9, 0), at(2026, 3, 24, 10, 0), at(2026, 3, 30, 9, 0)},
		{"interval", Every{Kind: Interval, Interval: 2 * time.Hour}, at(2026, 3, 1, 9, 0), at(2026, 3, 1, 9, 0), at(2026, 3, 1, 11, 0)},
		{"interval is not wall-clock across DST", Every{Kind: Interval, Interval: 24 * time.Hour}, at(2026, 3, 28, 9, 0), at(2026, 3, 28, 9, 0), at(2026, 3, 29, 10, 0)},
		{"interval after downtime over three due times", Every{Kind: Interval, Interval: time.Hour}, at(2026, 3, 1, 9, 0), at(2026, 3, 1, 12, 30), at(2026, 3, 1, 13, 0)},
		{"interval, centuries late", Every{Kind: Interval, Interval: 15 * time.Minute}, at(2026, 3, 1, 9, 0), at(2700, 3, 1, 9, 7), at(2700, 3, 1, 9, 15)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.every.Next(tt.due, tt.after)
			if !got.Equal(tt.want) {
				t.Errorf("%+v.Next(%v, %v) = %v, want %v", tt.every, tt.due, tt.after, got, tt.want)
			}
		})
	}
}

// TestNextAfterDowntimeRunsOnce plays the scheduler: a daily schedule due
// at 09:00 on three days the pet was off runs once when it comes back,
// and then not again until the next 09:00.
func TestNextAfterDowntimeRunsOnce(t *testing.T) {
	loc := berlin(t)
	due := time.Date(2026, 3, 27, 9, 0, 0, 0, loc)
	back := time.Date(2026, 3, 29, 18, 0, 0, 0, loc) // due times missed: 27th, 28th, 29th
	runs := 0
	for due.Before(back) || due.Equal(back) {
		runs++
		due = Every{Kind: Daily}.Next(due, back)
	}
	if want := time.Date(2026, 3, 30, 9, 0, 0, 0, loc); runs != 1 || !due.Equal(want) {
		t.Errorf("after downtime: %d runs, next %v; want 1 run, next %v", runs, due, want)
	}
}

// TestTheLongestRepetitionFitsTheStore: the store keeps a repetition as
// given, up to state.MaxEvery bytes; the longest form String writes fits.
func TestTheLongestRepetitionFitsTheStore(t *testing.T) {
	for _, e := range []Every{{Kind: Once}, {Kind: Daily}, {Kind: Weekly}, {Kind: Interval, Interval: MaxInterval}, {Kind: Interval, Interval: MaxInterval - time.Nanosecond}} {
		if n := len(e.String()); n > state.MaxEvery {
			t.Errorf("%+v writes %q, %d bytes, over state.MaxEvery %d", e, e.String(), n, state.MaxEvery)
		}
	}
}
