// Package approval is the approval authority: the one owner of every
// request parked for the owner's decision — a RISKY tool call of a parked
// turn, a self-coded tool to keep, an approved command's change set to
// apply.
//
// Every request is a typed payload, one type per kind (a call, a
// promotion, a change set, a message past the token cap, a marked turn's
// memory), from which the authority alone makes the exact bytes the
// owner is shown (rendered here, once, for every transport, so that no
// control character, escape sequence or bidi override can make it read
// as something else) and the digest of exactly what will execute. Before
// anything is carried out, [Verify] makes that digest again from what
// would be carried out now and compares: the one check, for every kind;
// its [Verified] is all the executor (package approved) runs. A promotion
// carries the code that was gated and shown, never what a directory
// holds later.
//
// [Authority.CarryOut] hands each verified decision to its executor, and
// calls back through [Host] for what only core can do (start a turn, set
// the mood). The state store keeps a request's kind as an opaque name and
// its payload as JSON; what they mean is this package's.
//
// The authority decides what a decision means: it is taken only from a
// place the request was shown, once; a request past its expiry does
// nothing; a decision that needs the turn slot while a turn runs is held
// and carried out when the turn ends; a newer proposal of a tool replaces
// the waiting one, whose buttons settle as "replaced". Requests persist
// in the state store and survive a restart.
package approval
