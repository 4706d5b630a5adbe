// Package hub is core's side of the bus: it owns the Unix socket, checks
// who every caller is (the role its hello claims against the kernel's
// SO_PEERCRED credentials, by the [Access] policy: which users may
// connect, and which of them may be the broker or a transport; a worker
// must also prove its turn to core), admits one broker at a time, and
// routes each envelope by kind through [contracts.Routes].
//
// The hub never blocks on a reader: every connection has a bounded send
// queue, and a reader that lets its queue fill is dropped and logged, so a
// wedged panel or a dead transport cannot stall a turn.
package hub
