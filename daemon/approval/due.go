package approval

import "time"

// nextDue is a lower bound on when the first of a table's rows (parked
// requests, or rules) expires, so that the once-a-minute check reaches
// the store only when something may be due. An idle pet's check then runs
// no SQL, and SQLite's code, paged out by the last release, stays out.
// It holds because this authority is the only writer of new expiries:
// every row it keeps lowers the bound; rows that go early leave it low,
// which costs one store pass that learns the bound again.
type nextDue struct {
	known bool      // false: ask the store
	at    time.Time // with known, zero when nothing is kept
}

// lower takes a row kept to expire at t into account.
func (d *nextDue) lower(t time.Time) {
	if d.known && (d.at.IsZero() || t.Before(d.at)) {
		d.at = t
	}
}

// notYet reports whether nothing can have expired by now, without asking
// the store.
func (d *nextDue) notYet(now time.Time) bool {
	return d.known && (d.at.IsZero() || now.Before(d.at))
}

// learn takes what the store said of its first expiry; after an error
// the store is asked again at the next check.
func (d *nextDue) learn(at time.Time, ok bool, err error) {
	switch {
	case err != nil:
		*d = nextDue{}
	case ok:
		*d = nextDue{known: true, at: at}
	default:
		*d = nextDue{known: true}
	}
}
