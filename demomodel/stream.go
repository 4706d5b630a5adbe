package demomodel

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode"
)

// DemoPace is the demo model's pause between the chunks of a streamed
// answer: about 30 tokens a second, as a small hosted model writes.
const DemoPace = 60 * time.Millisecond

// streamChunkRunes is about how much text one event of a streamed answer
// carries: a word or two, as a model's tokens come.
const streamChunkRunes = 8

// stream writes answer as server-sent events, the way OpenAI streams a
// chat completion: the text in chunks, each tool call in two deltas (its
// id and name, then its arguments), the finish, the usage when asked for
// (an event with no choices), then [DONE]. It pauses gap before every
// chunk after the first, and reports false when the client went away.
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, answer completionBody, gap time.Duration, usage bool) bool {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	first := true
	send := func(event any) bool {
		if !first && gap > 0 {
			select {
			case <-s.after(gap):
			case <-ctx.Done():
				return false
			}
		}
		first = false
		data, err := json.Marshal(event)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return ctx.Err() == nil
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": answer.ID, "object": "chat.completion.chunk", "created": answer.Created, "model": answer.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	reply := answer.Choices[0].Message
	text := ""
	if reply.Content != nil {
		text = *reply.Content
	}
	pieces := Chunks(text)
	if len(pieces) == 0 {
		pieces = []string{""}
	}
	for i, piece := range pieces {
		delta := map[string]any{"content": piece}
		if i == 0 {
			delta["role"] = "assistant"
		}
		if !send(chunk(delta, nil)) {
			return false
		}
	}
	for i, call := range reply.ToolCalls {
		head := map[string]any{"index": i, "id": call.ID, "type": "function", "function": map[string]any{"name": call.Function.Name, "arguments": ""}}
		args := map[string]any{"index": i, "function": map[string]any{"arguments": call.Function.Arguments}}
		if !send(chunk(map[string]any{"tool_calls": []any{head}}, nil)) || !send(chunk(map[string]any{"tool_calls": []any{args}}, nil)) {
			return false
		}
	}
	if !send(chunk(map[string]any{}, answer.Choices[0].FinishReason)) {
		return false
	}
	if usage && !send(map[string]any{"id": answer.ID, "object": "chat.completion.chunk", "created": answer.Created, "model": answer.Model,
		"choices": []any{}, "usage": answer.Usage}) {
		return false
	}
	_, err := fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
	return err == nil
}

// maxStreamChunks bounds the chunks of one streamed answer. A model
// writes a long answer over minutes, a token an event; the scripted
// one writes it at once, and 7,500 events for a 60 KiB reply would
// measure the machine's event loop, not the pet: the tests' long
// replies (and a turn's time budget under the race detector) need them
// in a moment. A long answer's chunks grow instead.
const maxStreamChunks = 256

// Chunks cuts text into pieces of about streamChunkRunes characters (more
// in a long text, at most maxStreamChunks pieces), each ending after a
// space or a line's end where one is near, as a model's tokens end.
func Chunks(text string) []string {
	var out []string
	runes := []rune(text)
	// A piece is cut back to a space only while it keeps half its size,
	// so every piece but the last holds size/2 at least.
	half := (maxStreamChunks - 1) / 2
	size := max(streamChunkRunes, (len(runes)+half-1)/half)
	for start := 0; start < len(runes); {
		end := min(start+size, len(runes))
		for cut := end; cut > start+max(1, size/2) && cut < len(runes); cut-- {
			if unicode.IsSpace(runes[cut-1]) {
				end = cut
				break
			}
		}
		out = append(out, string(runes[start:end]))
		start = end
	}
	return out
}
