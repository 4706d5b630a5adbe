// Package turns is the turn state machine of core: one turn at a time,
// the messages that arrive meanwhile folded into one catch-up turn, a
// fence that lets exactly one result of exactly the open turn be acted
// on, and the timeouts that keep a turn from ever hanging.
//
// The machine does no I/O. Core's loop owns it, feeds it what happened (a
// message, a result, the worker's end, a timer) and does what it answers
// (start a worker, degrade, kill, finish). Its timers run on a
// [clock.Clock], so its tests run on a fake clock with no sleeps.
package turns
