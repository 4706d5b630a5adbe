// Package shelldon is a personal AI pet for small Linux boards. This root
// package holds no code; it documents the layout and carries the tests
// that keep the architecture honest (the import rules and package docs).
//
// The actors and where they live:
//
//	contracts/        the vocabulary every actor shares: envelopes, kinds, routes, ops
//	bus/              the wire: length-prefixed frames and the client actors join with
//	daemon/           core: routes envelopes, events and decisions to its parts
//	daemon/turns      the turn state machine: arbiter, fence, timeouts, catch-up
//	daemon/approval   the approval authority: every request the owner decides on
//	daemon/approved   carries out what the owner approved, checked against its digest
//	daemon/toolstore  the self-coded tools, out of the model's reach, verified at load
//	daemon/selfcode   the gate a proposed tool must pass
//	daemon/tools      the tools' definitions and checks, shared by core and worker
//	daemon/hub        core's side of the bus: who may take which role, and routing
//	daemon/launch     how a turn's worker is started, bounded and reaped
//	daemon/state      the only writer of state: SQLite and the memory tree
//	daemon/owner      what core tells its owner about itself
//	daemon/visible    text made visible: no escape or bidi override reaches a screen
//	daemon/worker     one turn's brain adapter: prompt, model, reply parsing
//	policy/           every safety decision, as pure functions
//	sandbox/          the nspawn container one command runs in, and its change set
//	beneath/          reading and writing beneath a root without following a link
//	broker/           the providers behind CompleteWithTools; executes nothing
//	panel/            faces and the e-ink display
//	config/           the TOML file and its environment overrides
//	demomodel/        the scripted OpenAI-compatible model for tests and demos
//	cmd/shelldon      the one binary with every subcommand
//
// Import rules (see arch_test.go): core stays LLM-free, the broker
// executes nothing, the worker writes no state, core does not reach into
// the worker, the shared tool checks belong to neither, and policy
// depends on nothing of the project but the contracts.
package shelldon
