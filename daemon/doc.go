// Package daemon is shelldon's core: the turn lifecycle and the only
// writer of the pet's state.
//
// Core hosts the bus (see package hub), admits one turn at a time through
// the arbiter, opens the fence on a fresh turn id, shows the thinking face
// and asks a [launch.Launcher] for the turn's worker. The worker answers
// with a RESULT; core accepts it only through the fence, replies first,
// shows the reaction face for its dwell, then applies the proposed ops
// (one bad op is logged and skipped), records the turn, waits for the
// worker to be gone, and starts the catch-up turn if messages arrived in
// the meantime.
//
// Three timeouts keep a turn from ever hanging: the worker's own budget W,
// the launcher's reap deadline R, and core's turn timeout T, in the order
// W < R < T. A turn that fails or times out still answers, with the
// cant-think face.
package daemon
