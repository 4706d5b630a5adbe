// Package schedule reads and steps the times of the turns the pet starts
// itself: reminders and recurring check-ins the owner asked for in chat.
// A model proposes them as a contracts.Schedule op; core checks the op
// with Plan, stores the result (package state), and starts a turn when one
// is due, Budget permitting.
//
// It does no I/O and keeps no clock: every function is given "now".
package schedule
