// Package contracts is the vocabulary every shelldon actor shares: the
// envelope that crosses the bus, the kinds it carries and the one table that
// routes them, and the bodies those kinds hold — chat messages, tool calls
// and results, jobs and completions, a turn's input and its result, the ops
// a model proposes, and the face snapshots a panel draws.
//
// It imports nothing of the project, so that every actor, including the
// broker, the worker and policy, may import it without pulling in another
// actor's code.
package contracts
