// Package mcp is core's MCP client: each MCP server the owner configured
// ([[mcp]] in the configuration) runs in a sandbox container of its own
// and is spoken to over the container's stdin and stdout with the
// official Go SDK's client.
//
// The client lives in core, not in the worker: core is what may start
// containers (it holds the sandbox), a server's stdio is a pipe only its
// starter holds, and a server outlives the turns that use it. The worker
// stays as small as it is (no SDK linked, deps.txt holds it): it asks
// core for a call as it asks for a command.
//
// A [Server] starts on first use ([Server.Tools], [Server.Call]) in a
// container whose root is the read-only image, with a scratch of its own,
// the workspace hidden unless the owner granted it (read-only; or
// read-write, when each call runs in a container of its own and its
// writes come back as the call's change set, [Result.Changes]), every
// credential-shaped name masked, its own memory, CPU and task caps, and
// no network unless the owner granted egress (then only public addresses,
// through the sandbox's proxy, by http_get's rules). It stops after
// idle_stop without a call. One that dies is started again on its next
// use after a back-off that doubles with each death in a row (1 s to
// 5 min), and the owner is told once; one that has not answered a call
// by call_timeout is killed, and the call fails saying so.
//
// What a server says is untrusted: the tools it lists are offered only
// when the owner named them, their descriptions and schemas bounded; its
// annotations (readOnlyHint, destructiveHint) are reported, never
// believed; a call's result is bounded text ([Result]) the caller fences
// and marks as it does a fetched page.
package mcp
