// Package demomodel is a scripted, OpenAI-compatible chat-completions
// server. Tests point the real go-openai client at it to drive the broker
// and the worker through exact sequences of answers, failures, delays and
// malformed bodies; `make run` uses it as the scripted demo model when no
// real provider is configured, so the whole pet can be tried offline.
//
// A Server answers each request with the next queued [Step]; once the
// script runs out, its Fallback [Responder] decides, by default [Persona],
// a small deterministic pet that answers the phrases of package phrases
// with the real tool calls and ops a model would make (so a first run
// shows approvals, the sandbox and self-coded tools) and echoes the rest.
// Beside the API it serves one page, [DemoPagePath], for the persona to
// fetch. It keeps the latest [RequestsKept] requests for tests to read.
//
// It deliberately uses its own wire structs rather than an LLM client
// library, so that tests anywhere in the tree (core's included, which must
// stay LLM-free) may import it.
package demomodel
