// Package hub is core's side of the bus: it owns the Unix socket, checks
// who every caller is (their claimed role against the kernel's SO_PEERCRED
// credentials), and routes each envelope by kind through
// [contracts.Routes].
//
// The hub never blocks on a reader: every connection has a bounded send
// queue, and a reader that lets its queue fill is dropped and logged, so a
// wedged panel or a dead transport cannot stall a turn.
package hub
