// Package clock lets time-driven code (turn timeouts, the reaction dwell,
// the panel's refresh policy) run on the real clock in production and on a
// fake one in tests, so tests step time instead of sleeping.
package clock
