package clock

import (
	"strings"
	"testing"
	"time"
)

func TestParseWindow(t *testing.T) {
	good := []struct {
		in     string
		want   Window
		String string
	}{
		{"", Window{}, ""},
		{"23:00-07:00", Window{23 * time.Hour, 7 * time.Hour}, "23:00-07:00"},
		{"9:30-17:00", Window{9*time.Hour + 30*time.Minute, 17 * time.Hour}, "09:30-17:00"},
		{" 22:15 - 06:45 ", Window{22*time.Hour + 15*time.Minute, 6*time.Hour + 45*time.Minute}, "22:15-06:45"},
		{"23:00–07:00", Window{23 * time.Hour, 7 * time.Hour}, "23:00-07:00"},
		{"00:00-23:59", Window{0, 23*time.Hour + 59*time.Minute}, "00:00-23:59"},
	}
	for _, tc := range good {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseWindow(tc.in)
			if err != nil || got != tc.want {
				t.Fatalf("ParseWindow(%q) = %v, %v, want %v, nil", tc.in, got, err, tc.want)
			}
			if got.String() != tc.String {
				t.Errorf("ParseWindow(%q).String() = %q, want %q", tc.in, got.String(), tc.String)
			}
			again, err := ParseWindow(got.String())
			if err != nil || again != got {
				t.Errorf("ParseWindow(%q) = %v, %v, want it to read back %v", got.String(), again, err, got)
			}
		})
	}

	bad := []struct{ in, wantErr string }{
		{"25:00-07:00", "25:00 is not a time of day"},
		{"23:00-24:00", "24:00 is not a time of day"},
		{"23:60-07:00", "23:60 is not a time of day"},
		{"23:00", "want start-end"},
		{"23:00-", `"" is not a time of day`},
		{"-07:00", `"" is not a time of day`},
		{"ab:cd-07:00", `"ab:cd" is not a time of day`},
		{"23-07", `"23" is not a time of day`},
		{"+1:00-07:00", `"+1:00" is not a time of day`},
		{"123:00-07:00", `"123:00" is not a time of day`},
		{"23:5-07:00", `"23:5" is not a time of day`},
		{"23:00-07:00-08:00", `"07:00-08:00" is not a time of day`},
		{"07:00-07:00", "starts and ends at the same time"},
	}
	for _, tc := range bad {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseWindow(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ParseWindow(%q) = %v, %v, want an error containing %q", tc.in, got, err, tc.wantErr)
			}
			if got != (Window{}) {
				t.Errorf("ParseWindow(%q) = %v with an error, want the zero Window", tc.in, got)
			}
		})
	}
}

func TestWindowContains(t *testing.T) {
	night := Window{23 * time.Hour, 7 * time.Hour}
	afternoon := Window{13 * time.Hour, 15 * time.Hour}
	// India has no DST: a fixed offset that is not a whole hour.
	india := time.FixedZone("IST", 5*3600+30*60)
	at := func(loc *time.Location, hour, minute, second int) time.Time {
		return time.Date(2025, time.March, 30, hour, minute, second, 0, loc)
	}
	tests := []struct {
		name string
		w    Window
		t    time.Time
		want bool
	}{
		{"night before start", night, at(time.UTC, 22, 59, 59), false},
		{"night at start", night, at(time.UTC, 23, 0, 0), true},
		{"night at midnight", night, at(time.UTC, 0, 0, 0), true},
		{"night small hours", night, at(time.UTC, 3, 0, 0), true},
		{"night just before end", night, at(time.UTC, 6, 59, 59), true},
		{"night at end", night, at(time.UTC, 7, 0, 0), false},
		{"night at noon", night, at(time.UTC, 12, 0, 0), false},
		{"afternoon before", afternoon, at(time.UTC, 12, 59, 0), false},
		{"afternoon at start", afternoon, at(time.UTC, 13, 0, 0), true},
		{"afternoon inside", afternoon, at(time.UTC, 14, 59, 59), true},
		{"afternoon at end", afternoon, at(time.UTC, 15, 0, 0), false},
		{"afternoon at night", afternoon, at(time.UTC, 2, 0, 0), false},
		{"zero window", Window{}, at(time.UTC, 3, 0, 0), false},
		{"night, local clock in IST", night, at(india, 23, 30, 0), true},
		{"night, IST morning", night, at(india, 7, 30, 0), false},
		// 18:00 UTC is 23:30 in India: the window reads t's own clock.
		{"UTC evening seen in IST", night, at(time.UTC, 18, 0, 0).In(india), true},
		{"UTC evening seen in UTC", night, at(time.UTC, 18, 0, 0), false},
		{"damaged window", Window{-5 * time.Hour, 100 * time.Hour}, at(time.UTC, 3, 0, 0), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.w.Contains(tc.t); got != tc.want {
				t.Errorf("Window(%v).Contains(%v) = %v, want %v", tc.w, tc.t, got, tc.want)
			}
		})
	}
}
