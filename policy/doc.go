// Package policy holds shelldon's safety decisions, as pure functions that
// the tools, the sandbox and core call: which shell commands run without
// asking (and, for the rest, a one-line risk note for the owner), the path
// jail and the credential deny list, the git allowlist, the address rules
// under http_get, the tool-source import rule and the read-only-tests
// rule of self-coded tools, and which change sets of an approved command
// go back to the owner before they are applied.
//
// Policy does no I/O beyond stat and readlink (the jail must see the
// file system as it is), and depends on nothing of the project but the
// contracts, so a decision can never be bent by the actor it judges.
package policy
