// Package bus is the wire between shelldon's actors: length-prefixed JSON
// frames over the Unix socket that core hosts, and the client every actor
// (broker, worker, transports, panel) uses to join it.
//
// A frame is a 4-byte big-endian length followed by that many bytes of one
// JSON-encoded [contracts.Envelope]. The first frame on a connection is the
// caller's [contracts.Hello]; core answers with a [contracts.Welcome] and
// from then on routes frames by kind (see [contracts.Routes]).
//
// Long-lived actors use [Client.Run], which redials with backoff when core
// restarts; a worker uses [Dial] once, since a turn does not outlive the
// core that started it.
package bus
