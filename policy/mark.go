package policy

import (
	"cmp"

	"shelldon/contracts"
)

// The untrusted-content mark: what it covers.
//
// A turn is marked when its conversation has read text from outside — a
// page an approved http_get fetched, what a git remote said — since from
// then on whatever the model proposes may be that text's. The mark is
// where the text came from (a URL, "the remote of git fetch origin"),
// "" for none. Core sets it from what it carried out itself, never from
// the worker's words, and it is carried by data, not by core's memory of
// the turn in flight: a kept request holds its mark, a schedule row
// holds the mark of the turn that set it, a request to keep a marked
// turn's memory holds it, and a restart loses none of them.
//
// What a marked turn causes is marked:
//   - the turn that takes up its request once the owner decided
//     ([MarkResumed]);
//   - the turns its schedules start, and a catch-up turn any of whose
//     texts is marked ([MarkJoined]);
//   - a tool it proposes, whose card says so;
//   - what it would keep of the owner — notes, about.md, learnings,
//     faces — and the schedules it would cancel: none of that is applied,
//     it becomes one request the owner decides, with the exact text
//     ([MarkAsks]). Kept with its provenance instead, about.md would mark
//     every later turn, since every prompt carries it, until the owner
//     reviewed it: a request asks that review at once, and nothing the
//     page wrote reaches a prompt before it.
//
// No granted rule lets a call of a marked turn through, and none is
// offered on its cards ([RulesApply]). The owner speaking ends it: a new
// message of theirs starts unmarked — not a scheduled turn, nor a request
// taken up again — since nothing the pet keeps can be marked.

// MarkResumed is the mark of the turn that takes up a parked conversation:
// the request's own, asked, or, when the approved call read text from
// outside, where from. A mark is never lifted, whatever the worker says
// of the conversation.
func MarkResumed(asked, read string) string { return cmp.Or(asked, read) }

// MarkJoined is the mark of one turn made of several texts (the messages and
// a due schedule's text that waited behind a turn): the first marked
// one's.
func MarkJoined(marks ...string) string { return cmp.Or(marks...) }

// RulesApply reports whether granted rules apply to a turn marked m: they
// let none of its calls through and none is offered on its cards, unless
// it is unmarked.
func RulesApply(m string) bool { return m == "" }

// MarkAsks reports whether op, proposed by a turn marked m, waits for the
// owner's decision instead of being applied: what a marked turn would
// keep of the owner, or cancel of what the owner set. A schedule it sets
// is applied, carrying the mark; a tool it proposes goes to its gate and
// to the owner, marked.
func MarkAsks(m string, op contracts.OpBody) bool {
	if m == "" {
		return false
	}
	switch op.(type) {
	case contracts.Schedule, contracts.ProposeTool:
		return false
	}
	return true
}
