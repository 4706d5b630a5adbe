// Package mood is the pet's feeling between turns: a small, pure state
// machine that core drives with what happens (the owner wrote, a turn
// failed, a request was approved…) and with the reflex tick, which lets the
// feeling fade and notices the time of day and a long silence.
//
// The mood is always the name of a built-in face, so the face the panel
// shows at rest follows the mood by name once a reaction's dwell is over.
// No model is asked: the mood is derived from two small numbers, how things
// went lately (valence) and how much is going on (energy), plus the clock.
//
// Everything here is a value: On, Tick and Initial take the current time
// and return a new State, so the model is tested with a fake clock and
// persisted as JSON. A damaged persisted State is clamped and re-derived,
// never trusted and never a panic.
package mood
