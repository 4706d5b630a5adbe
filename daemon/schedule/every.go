package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The bounds of a fixed-interval repetition: shorter would let a schedule
// drain the daily budget by itself; longer is better said as a date.
const (
	MinInterval = 15 * time.Minute
	MaxInterval = 30 * 24 * time.Hour
)

var (
	// ErrUnreadable is wrapped when a time or a repetition is in none of
	// the accepted forms; the message lists them.
	ErrUnreadable = errors.New("unreadable schedule")
	// ErrInterval is wrapped when a repetition's interval is outside
	// MinInterval to MaxInterval.
	ErrInterval = errors.New("repetition interval out of range")
)

// EveryKind is how a schedule repeats.
type EveryKind int

const (
	// Once does not repeat; it is the zero kind.
	Once EveryKind = iota
	// Daily repeats at the same wall-clock time every day.
	Daily
	// Weekly repeats at the same wall-clock time every seven days.
	Weekly
	// Interval repeats a fixed duration apart, whatever the clocks say.
	Interval
)

// Every is a repetition: none (once), daily, weekly, or a fixed interval.
// ParseEvery makes one; String writes it back.
type Every struct {
	Kind EveryKind
	// Interval is the gap of an Interval repetition; unused otherwise.
	Interval time.Duration
}

// ParseEvery reads a repetition: "" for once, "day" or "daily", "week"
// or "weekly", or a Go duration from MinInterval to MaxInterval such as
// "2h" or "90m". "24h" is a fixed interval, not a wall-clock daily time.
func ParseEvery(s string) (Every, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "":
		return Every{Kind: Once}, nil
	case "day", "daily":
		return Every{Kind: Daily}, nil
	case "week", "weekly":
		return Every{Kind: Weekly}, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return Every{}, fmt.Errorf(`%w: every %q is not a repetition; use "" (once), "day", "week", or a duration such as "2h" or "90m"`, ErrUnreadable, s)
	}
	if d < MinInterval || d > MaxInterval {
		return Every{}, fmt.Errorf("%w: every %q; an interval must be from %v to %v", ErrInterval, s, MinInterval, MaxInterval)
	}
	return Every{Kind: Interval, Interval: d}, nil
}

// String is the form ParseEvery reads back: "", "day", "week", or the
// interval ("2h0m0s").
func (e Every) String() string {
	switch e.Kind {
	case Once:
		return ""
	case Daily:
		return "day"
	case Weekly:
		return "week"
	case Interval:
		return e.Interval.String()
	}
	return fmt.Sprintf("EveryKind(%d)", int(e.Kind))
}

// Next is the first occurrence strictly after after, for a schedule that
// was due at due: always later than due, or the zero time when there is
// none (Once, or an Every that ParseEvery would not have made).
//
// Daily and Weekly keep due's wall-clock time in due's location across
// daylight-saving changes, so the caller passes due in the owner's
// location (a time read back from the store is in time.Local). A
// wall-clock time that a spring-forward change skips comes an hour later
// that day, at the instant it would have been; stepped from there, the
// schedule keeps the later time, as due is all Next knows of it. Interval
// steps due by whole intervals. Occurrences missed while the pet was off
// collapse: the answer is the first one after after, never one per
// missed slot.
func (e Every) Next(due, after time.Time) time.Time {
	switch e.Kind {
	case Daily:
		return nextByDays(due, after, 1)
	case Weekly:
		return nextByDays(due, after, 7)
	case Interval:
		if e.Interval > 0 {
			return nextByInterval(due, after, e.Interval)
		}
	}
	return time.Time{}
}

// nextByDays is the first of due plus n*days calendar days, n >= 1, that
// is after after. Each candidate is counted from due itself, so a time
// that a daylight-saving gap moved one day is back in place the next.
func nextByDays(due, after time.Time, days int) time.Time {
	n := 1
	// Start from the whole steps between the two by the Unix clock (Sub
	// would saturate); a day of 23 or 25 hours puts it at most one off.
	if gap := after.Unix() - due.Unix(); gap > 0 {
		n = max(1, int(gap/int64(days*24*60*60)))
	}
	next := due.AddDate(0, 0, n*days)
	for !next.After(after) {
		n++
		next = due.AddDate(0, 0, n*days)
	}
	for n > 1 {
		earlier := due.AddDate(0, 0, (n-1)*days)
		if !earlier.After(after) {
			break
		}
		n--
		next = earlier
	}
	return next
}

// nextByInterval is the first of due plus n*interval, n >= 1, that is
// after after.
func nextByInterval(due, after time.Time, interval time.Duration) time.Time {
	next := due.Add(interval)
	for !next.After(after) {
		// Skip the whole intervals at once. skip*interval is at most the
		// gap, so it cannot overflow; the gap saturates only centuries
		// ahead, which takes a few more rounds.
		skip := after.Sub(next) / interval
		next = next.Add(skip * interval).Add(interval)
	}
	return next
}
