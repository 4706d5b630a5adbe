// Package worker is the brain adapter of one turn: `shelldon-worker
// --turn ID` (cmd/shelldon-worker), started fresh for every turn and gone
// after it.
//
// The worker joins the bus as the turn it was started for, takes its input
// from core, reads DIRECTIVE.md and about.md (read-only: the worker writes
// no state and never opens the database), builds the prompt, asks the
// broker for a completion, and parses the reply into a [contracts.Result]
// — the payload for the owner, the proposed ops, the THOUGHT: caption and
// the FACE: pick — which it sends to core stamped with its turn id. Then it
// exits, and everything it held goes with it.
//
// The tools that run in the worker run in its process, but for
// python_eval: each expression is evaluated in a child of its own,
// `shelldon-worker eval`, under bounds of its own and killed at its 2 s, since
// the work done inside a Starlark builtin escapes every bound the worker
// could set from inside.
package worker
