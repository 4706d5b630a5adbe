package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"

	"shelldon/contracts"
)

func TestParseWhen(t *testing.T) {
	loc := berlin(t)
	now := time.Date(2026, 3, 10, 14, 30, 0, 0, loc) // a Tuesday, CET
	springEve := time.Date(2026, 3, 28, 21, 0, 0, 0, loc)
	at := func(y int, m time.Month, d, h, min int) time.Time { return time.Date(y, m, d, h, min, 0, 0, loc) }
	tests := []struct {
		name    string
		in      string
		now     time.Time
		want    time.Time
		wantErr error
	}{
		{"clock time still ahead today", "15:00", now, at(2026, 3, 10, 15, 0), nil},
		{"clock time passed, so tomorrow", "09:00", now, at(2026, 3, 11, 9, 0), nil},
		{"clock time without a leading zero", "9:05", now, at(2026, 3, 11, 9, 5), nil},
		{"clock time now is tomorrow", "14:30", now, at(2026, 3, 11, 14, 30), nil},
		{"clock time at midnight", "00:00", now, at(2026, 3, 11, 0, 0), nil},
		{"clock time read in loc, not in now's zone", "09:00", time.Date(2026, 3, 10, 23, 30, 0, 0, time.UTC), at(2026, 3, 11, 9, 0), nil},
		{"clock time across spring forward", "09:00", springEve, at(2026, 3, 29, 9, 0), nil},
		{"clock time in the spring gap", "02:30", springEve, at(2026, 3, 29, 3, 30), nil},
		{"in minutes", "in 20m", now, now.Add(20 * time.Minute), nil},
		{"in hours, any case, spaced", "  IN  2h ", now, now.Add(2 * time.Hour), nil},
		{"in a day across spring forward", "in 24h", springEve, at(2026, 3, 29, 22, 0), nil},
		{"local date and time", "2026-12-01 09:00", now, at(2026, 12, 1, 9, 0), nil},
		{"local date and time with T", "2026-12-01T09:00", now, at(2026, 12, 1, 9, 0), nil},
		{"RFC 3339", "2026-12-01T09:00:00+01:00", now, at(2026, 12, 1, 9, 0), nil},
		{"RFC 3339 in UTC", "2026-06-01T07:00:00Z", now, at(2026, 6, 1, 9, 0), nil},
		{"a minute ago is now", "2026-03-10 14:29", now, at(2026, 3, 10, 14, 29), nil},
		{"a year ahead", "2027-03-10 14:30", now, at(2027, 3, 10, 14, 30), nil},
		{"two minutes ago", "2026-03-10 14:28", now, time.Time{}, ErrPast},
		{"last year", "2025-12-01T09:00:00+01:00", now, time.Time{}, ErrPast},
		{"in no time", "in 0s", now, time.Time{}, ErrPast},
		{"in the past", "in -5m", now, time.Time{}, ErrPast},
		{"just over a year ahead", "2027-03-10 14:31", now, time.Time{}, ErrTooFar},
		{"in too long", "in 9000h", now, time.Time{}, ErrTooFar},
		{"empty", "", now, time.Time{}, ErrUnreadable},
		{"a word", "tomorrow", now, time.Time{}, ErrUnreadable},
		{"in and nothing", "in ", now, time.Time{}, ErrUnreadable},
		{"in a word", "in a while", now, time.Time{}, ErrUnreadable},
		{"bare duration", "20m", now, time.Time{}, ErrUnreadable},
		{"hour out of range", "25:00", now, time.Time{}, ErrUnreadable},
		{"month out of range", "2026-13-01 09:00", now, time.Time{}, ErrUnreadable},
		{"seconds", "09:00:00", now, time.Time{}, ErrUnreadable},
		{"invalid UTF-8", "\xff\xfe", now, time.Time{}, ErrUnreadable},
		{"long garbage", strings.Repeat("9", 500), now, time.Time{}, ErrUnreadable},
		{"overflowing duration", "in 99999999999999999h", now, time.Time{}, ErrUnreadable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseWhen(tt.in, tt.now, loc)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("ParseWhen(%q, %v) error = %v, want %v", tt.in, tt.now, err, tt.wantErr)
			}
			if !got.Equal(tt.want) {
				t.Errorf("ParseWhen(%q, %v) = %v, want %v", tt.in, tt.now, got, tt.want)
			}
			if err == nil && got.Location() != loc {
				t.Errorf("ParseWhen(%q) is in %v, want %v", tt.in, got.Location(), loc)
			}
		})
	}
}

func TestParseWhenAfterSpringForwardIsSummerTime(t *testing.T) {
	loc := berlin(t)
	got, err := ParseWhen("09:00", time.Date(2026, 3, 28, 21, 0, 0, 0, loc), loc)
	if _, offset := got.Zone(); err != nil || offset != 2*60*60 {
		t.Errorf("ParseWhen(09:00) the evening before spring forward = %v, %v, want 09:00 at +02:00", got, err)
	}
}

func TestParseWhenErrorsSayWhatIsAccepted(t *testing.T) {
	_, err := ParseWhen("next tuesday", time.Now(), time.UTC)
	for _, want := range []string{"YYYY-MM-DD HH:MM", "RFC 3339", "HH:MM", "in 20m"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseWhen(next tuesday) = %v, want it to mention %q", err, want)
		}
	}
}

func TestParseWhenWithoutLocation(t *testing.T) {
	if _, err := ParseWhen("09:00", time.Now(), nil); err == nil {
		t.Error("ParseWhen with a nil location = nil error, want one")
	}
}

func TestPlan(t *testing.T) {
	loc := berlin(t)
	now := time.Date(2026, 3, 10, 14, 30, 0, 0, loc)
	tests := []struct {
		name      string
		op        contracts.Schedule
		wantFirst time.Time
		wantEvery Every
		wantErr   error
	}{
		{"a reminder", contracts.Schedule{When: "in 20m", Text: "stretch"}, now.Add(20 * time.Minute), Every{}, nil},
		{"a morning check-in", contracts.Schedule{When: "09:00", Every: "day", Text: "how did you sleep?"},
			time.Date(2026, 3, 11, 9, 0, 0, 0, loc), Every{Kind: Daily}, nil},
		{"an interval from an odd minute", contracts.Schedule{When: "in 7m", Every: "90m", Text: "drink water"},
			now.Add(7 * time.Minute), Every{Kind: Interval, Interval: 90 * time.Minute}, nil},
		{"no text", contracts.Schedule{When: "09:00"}, time.Time{}, Every{}, contracts.ErrInvalidOp},
		{"text too long", contracts.Schedule{When: "09:00", Text: strings.Repeat("x", contracts.MaxScheduleText+1)}, time.Time{}, Every{}, contracts.ErrInvalidOp},
		{"no when", contracts.Schedule{Text: "hi"}, time.Time{}, Every{}, contracts.ErrInvalidOp},
		{"unreadable when", contracts.Schedule{When: "soon", Text: "hi"}, time.Time{}, Every{}, ErrUnreadable},
		{"past when", contracts.Schedule{When: "2026-01-01 09:00", Text: "hi"}, time.Time{}, Every{}, ErrPast},
		{"unreadable every", contracts.Schedule{When: "09:00", Every: "month", Text: "hi"}, time.Time{}, Every{}, ErrUnreadable},
		{"too short an interval", contracts.Schedule{When: "09:00", Every: "1m", Text: "hi"}, time.Time{}, Every{}, ErrInterval},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, every, err := Plan(tt.op, now, loc)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("Plan(%+v) error = %v, want %v", tt.op, err, tt.wantErr)
			}
			if !first.Equal(tt.wantFirst) || every != tt.wantEvery {
				t.Errorf("Plan(%+v) = %v, %+v, want %v, %+v", tt.op, first, every, tt.wantFirst, tt.wantEvery)
			}
		})
	}
}
