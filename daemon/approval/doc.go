// Package approval is the approval authority: the one owner of every
// request parked for the owner's decision — a RISKY tool call of a parked
// turn, a self-coded tool to keep, an approved command's change set to
// apply.
//
// Every request is a typed record that holds the exact bytes the owner is
// shown (rendered here, once, for every transport, so that no control
// character, escape sequence or bidi override can make it read as
// something else) and the digest of exactly what will execute. What is
// carried out is checked against that digest ([Request.Verify]); anything
// else is refused. A promotion carries the code that was gated and shown,
// never what a directory holds later.
//
// The authority decides what a decision means: it is taken only from a
// place the request was shown, once; a request past its expiry does
// nothing; a decision that needs the turn slot while a turn runs is held
// and carried out when the turn ends; a newer proposal of a tool replaces
// the waiting one, whose buttons settle as "replaced". Requests persist
// in the state store and survive a restart.
package approval
