// Package shelldon is a personal AI pet for small Linux boards. This root
// package holds no code; it documents the layout and carries the tests
// that keep the architecture honest (the import rules and package docs).
//
// The actors and where they live:
//
//	contracts/       the vocabulary every actor shares: envelopes, kinds, routes, ops
//	bus/             the wire: length-prefixed frames and the client actors join with
//	daemon/          core: the turn lifecycle (arbiter, fence, timeouts, degrade, catch-up)
//	daemon/hub       core's side of the bus: credentials and routing
//	daemon/launch    how a turn's worker is started, bounded and reaped
//	daemon/state     the only writer of state: SQLite and the memory tree
//	daemon/worker    one turn's brain adapter: prompt, model, reply parsing
//	broker/          the providers behind CompleteWithTools; executes nothing
//	panel/           faces and the e-ink display
//	config/          the TOML file and its environment overrides
//	demomodel/       the scripted OpenAI-compatible model for tests and demos
//	cmd/shelldon     the one binary with every subcommand
//
// Import rules (see arch_test.go): core stays LLM-free, the broker
// executes nothing, the worker writes no state, and policy depends on
// nothing of the project but the contracts.
package shelldon
