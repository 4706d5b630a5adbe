// Package clock lets time-driven code (turn timeouts, the reaction dwell,
// the panel's refresh policy) run on the real clock in production and on a
// fake one in tests, so tests step time instead of sleeping. It also
// holds Window, a daily span of hours (the pet's night), read from the
// configuration and used by the mood.
package clock
