// Package broker turns a conversation into one completion: it holds the
// model providers behind one seam ([Provider]), converts shelldon's
// messages and tool definitions into each provider's wire format and the
// answers back into shelldon's own [contracts.Completion] and
// [contracts.ToolCall], and runs the provider [Chain] with its single
// retry, so every failure reaches the worker as a value.
//
// The OpenAI-compatible servers owners use differ in what their answers
// hold; the broker evens that out (wire.go before go-openai decodes an
// answer, answer.go after), so the worker sees one vocabulary whichever
// server answered. testdata/providers holds each server's recorded
// exchanges, one directory a server, and TestProviderConformance replays
// them through the real client.
//
// The broker executes nothing. It only shuttles tool calls between the
// model and the worker; it must not import os/exec, the sandbox, policy or
// core.
package broker
