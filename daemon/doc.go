// Package daemon is shelldon's core: it routes, and it is the only writer
// of the pet's state.
//
// Core hosts the bus (package hub, which decides who may take which role)
// and owns one loop goroutine through which everything passes: an
// envelope from the bus, a timer, the end of a worker, the result of work
// done off the loop. Core itself keeps only the loop, the routing, joins
// and leaves on the bus, the expiry checks and the stop; each envelope
// goes to the part that owns it, which gets what it needs as small
// interfaces and function fields, never core itself:
//
//   - the intake (package intake) keeps each of the owner's messages
//     before anything is done with it and offers it to the turn machine
//     (package turns: one turn at a time, what arrives meanwhile folded
//     into one catch-up turn); a restarted core takes up what was left;
//   - the owner's commands (package commands) are answered at once;
//   - the driver (package driver) starts each turn's worker through a
//     [launch.Launcher], takes its result through the fence, answers
//     first, shows the reaction, has the ops applied (package ops: one
//     bad op is logged and skipped) and records the turn; progress
//     (package progress) shows the owner its steps;
//   - before a turn of the owner's messages starts, the daily token cap
//     (package tokencap) may ask the owner first, through the approval
//     authority;
//   - the approval authority (package approval) owns every request the
//     owner decides on; core carries a decision out through the executor
//     (package approved) and resumes the parked turn;
//   - the keeper looks after the self-coded tools in the tool store
//     (packages toolstore and selfcode);
//   - the brain keeps the mood and the scheduled turns and their budget,
//     in turns and in tokens;
//   - presence decides what the panels show, and the messenger reaches the
//     owner's transports.
//
// A turn that fails or times out still answers, with the cant-think face.
package daemon
