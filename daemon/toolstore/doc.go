// Package toolstore is where the tools the pet wrote for itself live: a
// directory of core's own in the state directory — beside the workspace,
// never inside it — with the live tools, the proposals under their gate,
// and the tools put away after failing.
//
// No path the model can drive writes there: write_file, edit_file, a
// change set and git all work in the workspace, and the sandbox sees the
// workspace alone. Core opens every path of the store beneath its root
// without following a link ([beneath]). A live tool is its module, its
// test and its manifest, which holds the hashes of both as they were
// kept; every load checks them, and a tool whose files changed behind
// the store is refused with [ErrTampered].
package toolstore
