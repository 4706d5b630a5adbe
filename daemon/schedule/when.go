package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"shelldon/contracts"
)

// pastGrace is how far in the past an absolute time may be and still be
// taken as "now": the owner's "at 09:00" written at 09:00:30.
const pastGrace = time.Minute

var (
	// ErrPast is wrapped by ParseWhen when the time has passed.
	ErrPast = errors.New("time is in the past")
	// ErrTooFar is wrapped by ParseWhen when the time is more than a year
	// ahead.
	ErrTooFar = errors.New("time is more than a year ahead")
)

// The layouts of a local date and time, read in the owner's location.
var localLayouts = []string{"2006-01-02 15:04", "2006-01-02T15:04"}

const acceptedWhen = `use "YYYY-MM-DD HH:MM" or "YYYY-MM-DDTHH:MM" (local time), RFC 3339 such as "2026-12-01T09:00:00+01:00", "HH:MM" (the next such local time) or "in <duration>" such as "in 20m"`

// ParseWhen reads a first time in loc at now, and returns it in loc. It
// accepts RFC 3339 ("2026-12-01T09:00:00+01:00"), a local date and time
// ("2026-12-01 09:00" or "2026-12-01T09:00"), a local clock time ("09:00"
// or "9:05": today if still ahead, else tomorrow), or "in " and a Go
// duration ("in 20m", "in 2h").
//
// An unreadable s wraps ErrUnreadable, an absolute time more than a
// minute ago or a non-positive "in" wraps ErrPast, and a time more than a
// year after now wraps ErrTooFar.
func ParseWhen(s string, now time.Time, loc *time.Location) (time.Time, error) {
	if loc == nil {
		return time.Time{}, fmt.Errorf("read when %q: no location given", s)
	}
	now = now.In(loc)
	t, err := readWhen(strings.TrimSpace(s), now, loc)
	if err != nil {
		return time.Time{}, err
	}
	t = t.In(loc)
	switch {
	case t.Before(now.Add(-pastGrace)):
		return time.Time{}, fmt.Errorf("%w: when %q is %s, and it is now %s", ErrPast, s, t.Format(time.DateTime), now.Format(time.DateTime))
	case t.After(now.AddDate(1, 0, 0)):
		return time.Time{}, fmt.Errorf("%w: when %q is %s", ErrTooFar, s, t.Format(time.DateTime))
	}
	return t, nil
}

// readWhen reads s in any of the accepted forms, without judging the time.
func readWhen(s string, now time.Time, loc *time.Location) (time.Time, error) {
	if rest, ok := cutPrefixFold(s, "in "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return time.Time{}, fmt.Errorf(`%w: when %q: %q is not a duration such as "20m" or "2h"`, ErrUnreadable, s, rest)
		}
		if d <= 0 {
			return time.Time{}, fmt.Errorf("%w: when %q is not ahead", ErrPast, s)
		}
		return now.Add(d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range localLayouts {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	if clock, err := time.Parse("15:04", s); err == nil {
		y, m, d := now.Date()
		today := time.Date(y, m, d, clock.Hour(), clock.Minute(), 0, 0, loc)
		if today.After(now) {
			return today, nil
		}
		return time.Date(y, m, d+1, clock.Hour(), clock.Minute(), 0, 0, loc), nil
	}
	return time.Time{}, fmt.Errorf("%w: when %q; %s", ErrUnreadable, s, acceptedWhen)
}

// cutPrefixFold is strings.CutPrefix, ignoring case.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

// Plan checks a Schedule op at now, in the owner's location loc: its
// sizes (contracts.Schedule.Validate), its first time (ParseWhen) and
// its repetition (ParseEvery). The first time is the one the owner gave;
// an interval starts from it, aligned to nothing else.
func Plan(op contracts.Schedule, now time.Time, loc *time.Location) (first time.Time, every Every, err error) {
	if err := op.Validate(); err != nil {
		return time.Time{}, Every{}, err
	}
	if every, err = ParseEvery(op.Every); err != nil {
		return time.Time{}, Every{}, err
	}
	if first, err = ParseWhen(op.When, now, loc); err != nil {
		return time.Time{}, Every{}, err
	}
	return first, every, nil
}
