// Package tokens weighs what the pet's turns spend on their model: the
// day and the month the figures are summed over (in local time, as the
// pet counts every day: a day starts at local midnight, as for the
// budget of self-driven turns) and the cost the owner's prices give them.
// The daily cap past which a turn of the owner's messages asks first is
// policy's (policy.TokenCap).
//
// The figures are the providers' own (package state keeps them per turn
// and provider); this package does no I/O and keeps no clock: every
// function is given "now".
package tokens
