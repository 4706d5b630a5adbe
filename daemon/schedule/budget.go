package schedule

import (
	"fmt"
	"time"
)

// Budget bounds the turns the pet starts itself, so a runaway schedule
// cannot spend the owner's model quota or wake the board all day.
type Budget struct {
	// Daily is how many self-driven turns may start in one local day;
	// zero or less allows none.
	Daily int
	// Cooldown is the least time between the starts of two of them.
	Cooldown time.Duration
	// DailyTokens stops them for the day once today's turns, the owner's
	// and the pet's own alike, used this many tokens; 0 or less is no
	// such bound.
	DailyTokens int
}

// Spent is what today's turns took since local midnight (see Midnight):
// how many self-driven turns started, and how many tokens every turn
// used.
type Spent struct {
	Turns, Tokens int
}

// Allows says whether a self-driven turn may start at now, given what
// today spent and when the last one started (zero if none ever did).
// When it may not, why says so in words for the owner, with times in
// now's location, and wait is when it may after all if only the cooldown
// stands in the way (zero when the day's budget does: the turn is not to
// run today).
func (b Budget) Allows(today Spent, last, now time.Time) (ok bool, wait time.Time, why string) {
	switch {
	case b.Daily <= 0:
		return false, time.Time{}, "self-driven turns are off: the daily budget is 0"
	case today.Turns >= b.Daily:
		return false, time.Time{}, fmt.Sprintf("the daily budget of %d self-driven %s is spent; it resets at midnight", b.Daily, plural(b.Daily, "turn", "turns"))
	case b.DailyTokens > 0 && today.Tokens >= b.DailyTokens:
		return false, time.Time{}, fmt.Sprintf("today's turns used %d tokens, the daily token budget of self-driven turns is %d; it resets at midnight", today.Tokens, b.DailyTokens)
	}
	if until := last.Add(b.Cooldown); !last.IsZero() && now.Before(until) {
		return false, until, "cooling down until " + ceilMinute(until).In(now.Location()).Format("15:04")
	}
	return true, time.Time{}, ""
}

// Midnight is the start of now's local day, in now's location: the
// instant from which a day's self-driven turns are counted. Where the
// clocks jump over midnight, the day starts when the jump lands.
func Midnight(now time.Time) time.Time {
	y, m, d := now.Date()
	start := time.Date(y, m, d, 0, 0, 0, 0, now.Location())
	// time.Date takes a midnight that does not exist back to the evening
	// before; the day then begins where that evening's zone ends.
	if start.Day() != d {
		_, start = start.ZoneBounds()
	}
	return start
}

// ceilMinute rounds t up to the whole minute, so a "until 14:05" is never
// a moment too early.
func ceilMinute(t time.Time) time.Time {
	if down := t.Truncate(time.Minute); down.Before(t) {
		return down.Add(time.Minute)
	}
	return t
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
