// Package approved carries out what the owner approved: a RISKY call —
// a write, an edit, a fetch, a command in the sandbox over a captured
// view — and a change set the owner let through after a second look.
//
// Nothing runs on the strength of the approval alone: the call is checked
// again as the tools check it, and what the check makes must have the
// digest the owner approved ([approval.Request.Verify]); a change set is
// scanned again and must hash as it did. Every write goes beneath the
// workspace without following a link ([beneath]). An approved command's
// change set is applied at once only when policy finds nothing in it
// that needs the owner's own look ([policy.ChangeSetRisks]); otherwise it
// is kept aside for a request of its own. Around every change, the tests
// that were there must stay as they were (the read-only-tests rule): a
// file whose existing tests changed is put back.
package approved
