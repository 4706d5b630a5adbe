// Package moment decides what the panel tells at each moment of the pet's
// day: thinking during a turn, a reaction after a reply (or the dizzy face
// when a turn could not answer), the mood's face when idle, and asleep and
// away when core is gone. Each moment is one face, and the status strip's
// word and the caption are decided with it, here and only here, so the
// strip and the face always tell the same story: the word is the face's
// name (the mood's, when idle), and away says "away".
//
// Core uses it for the moments it knows of; the panel for the ones only it
// can see (core away, or not heard from yet). The package is pure: no
// clock, no I/O.
package moment
