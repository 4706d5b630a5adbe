// Package transporttest is the conformance suite of the transport seam:
// one set of behaviour tests that every transport (the Telegram bot, the
// terminal chat) must pass, through the real hub and the real bus, with
// the test playing core on one side and the owner, through the
// transport's own test peer (the Bot API test server, a pseudo-terminal),
// on the other, in the spirit of containerd's snapshots/testsuite.
//
// It checks what the owner sees and what core receives, never a
// transport's own tables: a message reaches core once and is let go once
// core keeps it; a reply reaches the owner once, however often core sends
// it; a request is shown with what it asks, one answer is one decision
// for that request, and a second answer, or one after the request is
// settled, is none; a settled request shows its outcome; input past the
// transport's bound is cut or refused, saying so, and core stays up; a
// turn's progress shows; the transport comes back after a restart, and
// after core's. A transport's package runs [Run] over a table of its
// targets, so a new transport is one line there; a behaviour only some
// transports promise is a case behind a flag of [Target], and what only
// one transport does stays in that transport's own tests.
package transporttest
