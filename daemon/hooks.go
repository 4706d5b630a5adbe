package daemon

// WedgeMessage blocks core's turn loop, for the tests of a service's
// watchdog only. Only a binary built with the shelldon_testhooks tag acts
// on it; in any other the constant is unused and not even its text is in
// the binary.
const WedgeMessage = "/test-wedge-the-loop"
