// Package hub is core's side of the bus: it owns the Unix socket, checks
// who every caller is (the role its hello claims against the kernel's
// SO_PEERCRED credentials, by the [Access] policy: which users may
// connect, and which of them may be the broker or a transport; a worker
// must also prove its turn to core), admits one broker at a time, and
// routes each envelope by kind through [contracts.Routes].
//
// What a caller can make core hold is bounded before the hub knows who it
// is: connections are counted (in all, and per user) as they are
// accepted, a caller is read no further than a hello until it has said
// one, and only for [Config.HelloTimeout]; after it, a role that may send
// nothing stays at that size, and the frames of the others share one
// budget of bytes being read.
//
// The hub never blocks on a reader: every connection has a bounded send
// queue, and a reader that lets its queue fill is dropped and logged, so a
// wedged panel or a dead transport cannot stall a turn.
package hub
