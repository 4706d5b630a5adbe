// Package daemon is shelldon's core: it routes, and it is the only writer
// of the pet's state.
//
// Core hosts the bus (package hub, which decides who may take which role)
// and owns one loop goroutine through which everything passes: an
// envelope from the bus, a timer, the end of a worker, the result of work
// done off the loop. Each goes to the part that owns it:
//
//   - the turn machine (package turns) admits one turn at a time, folds
//     what arrives meanwhile into one catch-up turn, fences results and
//     keeps the timeouts W < R < T; core starts each turn's worker through
//     a [launch.Launcher], answers first, shows the reaction, applies the
//     ops (one bad op is logged and skipped), and records the turn;
//   - the approval authority (package approval) owns every request the
//     owner decides on; core carries a decision out through the executor
//     (package approved) and resumes the parked turn;
//   - the keeper looks after the self-coded tools in the tool store
//     (packages toolstore and selfcode);
//   - the brain keeps the mood and the scheduled turns and their budget,
//     in turns and in tokens;
//   - before a turn of the owner's messages starts, the daily token cap
//     (package tokens) may have core ask the owner first, through the
//     approval authority;
//   - presence decides what the panels show, and the messenger reaches the
//     owner's transports.
//
// A turn that fails or times out still answers, with the cant-think face.
package daemon
