// Package policy holds shelldon's safety decisions, as pure functions that
// the tools, the sandbox and core call: which shell commands run without
// asking (and, for the rest, a one-line risk note for the owner), each
// tool's tier and the verdict on each call ([Tool]), the credential deny
// list that the path jail (shelldon/beneath.Jail) applies, the git
// allowlist, the address rules under http_get, the tool-source import
// rule and the read-only-tests rule of self-coded tools, which change
// sets of an approved command go back to the owner before they are
// applied, the rules the owner may grant, what the untrusted-content mark
// covers, the caps of a turn and the daily token cap.
//
// Policy touches nothing: no file, no socket, no process (an architecture
// test at the module's root holds it). What a decision needs to know of
// the world — whether a file exists, what a name resolves to — its caller
// looks up and hands in; the caller then does what the verdict says. And
// it depends on nothing of the project but the contracts, so a decision
// can never be bent by the actor it judges.
package policy
