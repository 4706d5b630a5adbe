package clock

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

const day = 24 * time.Hour

// Window is a daily span of local time, such as the night 23:00–07:00,
// given as durations since local midnight; it wraps midnight when End is
// before Start. The zero Window, and any Window whose Start equals its End,
// is empty.
type Window struct{ Start, End time.Duration }

// ParseWindow reads a window written "HH:MM-HH:MM", e.g. "23:00-07:00".
// The empty string is the zero (empty) Window.
func ParseWindow(s string) (Window, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Window{}, nil
	}
	startText, endText, ok := strings.Cut(s, "-")
	if !ok {
		// People copy windows from prose, where the dash is an en dash.
		startText, endText, ok = strings.Cut(s, "–")
	}
	if !ok {
		return Window{}, fmt.Errorf("window %q: want start-end, e.g. 23:00-07:00", s)
	}
	start, err := parseTimeOfDay(startText)
	if err != nil {
		return Window{}, fmt.Errorf("window %q: start: %w", s, err)
	}
	end, err := parseTimeOfDay(endText)
	if err != nil {
		return Window{}, fmt.Errorf("window %q: end: %w", s, err)
	}
	if start == end {
		return Window{}, fmt.Errorf("window %q: starts and ends at the same time; leave it empty for no window", s)
	}
	return Window{Start: start, End: end}, nil
}

// parseTimeOfDay reads "H:MM" or "HH:MM" as the time since midnight.
func parseTimeOfDay(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	hoursText, minutesText, _ := strings.Cut(s, ":")
	if !isDigits(hoursText, 1, 2) || !isDigits(minutesText, 2, 2) {
		return 0, fmt.Errorf("%q is not a time of day (want HH:MM)", s)
	}
	hours, _ := strconv.Atoi(hoursText) // digits only: cannot fail
	minutes, _ := strconv.Atoi(minutesText)
	if hours > 23 || minutes > 59 {
		return 0, fmt.Errorf("%s is not a time of day (00:00 to 23:59)", s)
	}
	return time.Duration(hours)*time.Hour + time.Duration(minutes)*time.Minute, nil
}

// isDigits reports whether s is between least and most ASCII digits long.
func isDigits(s string, least, most int) bool {
	if len(s) < least || len(s) > most {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// empty reports whether the window holds no time at all.
func (w Window) empty() bool { return w.Start == w.End }

// Contains reports whether t falls in the window, reading t's wall clock in
// t's own location, so a window keeps to the clock on the wall across DST.
func (w Window) Contains(t time.Time) bool {
	if w.empty() {
		return false
	}
	at := sinceMidnight(t)
	if w.Start < w.End {
		return w.Start <= at && at < w.End
	}
	return at >= w.Start || at < w.End
}

// LastEnd is the latest moment not after t at which the window ended, or
// the zero time for an empty window.
func (w Window) LastEnd(t time.Time) time.Time {
	if w.empty() {
		return time.Time{}
	}
	end := ((w.End % day) + day) % day // a damaged End still names a time of day
	year, month, date := t.Date()
	at := func(date int) time.Time {
		return time.Date(year, month, date, int(end/time.Hour), int(end%time.Hour/time.Minute),
			int(end%time.Minute/time.Second), int(end%time.Second), t.Location())
	}
	if last := at(date); !last.After(t) {
		return last
	}
	return at(date - 1)
}

// String writes the window as ParseWindow reads it; the empty window is "".
func (w Window) String() string {
	if w.empty() {
		return ""
	}
	return formatTimeOfDay(w.Start) + "-" + formatTimeOfDay(w.End)
}

func formatTimeOfDay(d time.Duration) string {
	return fmt.Sprintf("%02d:%02d", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

func sinceMidnight(t time.Time) time.Duration {
	hour, minute, second := t.Clock()
	return time.Duration(hour)*time.Hour + time.Duration(minute)*time.Minute +
		time.Duration(second)*time.Second + time.Duration(t.Nanosecond())
}
