package contracts

import "time"

// OnThisClock returns deadline as this process's now plus the time left
// until it. A deadline crosses the bus as a wall-clock time, and Go
// compares times that carry no monotonic reading by the wall clock, which
// NTP steps: a Raspberry Pi has no real-time clock and is set forward,
// often by hours, after it boots. So a deadline is put on this process's
// monotonic clock as soon as it arrives, and made again from the time left
// just before it is sent on; a step of the wall clock in between then
// neither ends a turn early nor stretches it. The zero time, no deadline,
// stays zero.
func OnThisClock(deadline time.Time) time.Time {
	if deadline.IsZero() {
		return deadline
	}
	now := time.Now()
	return now.Add(deadline.Sub(now))
}
