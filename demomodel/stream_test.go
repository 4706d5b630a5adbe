package demomodel

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"shelldon/contracts"
)

// TestStreamedAnswer: a request with stream=true gets the step's answer
// as server-sent events — the text in chunks of a word or so, each tool
// call in two deltas, the finish, the usage when asked, [DONE] — waiting
// Delay before the first and ChunkDelay before each one after.
func TestStreamedAnswer(t *testing.T) {
	const text = "It is sunny in Istanbul today, and warm."
	srv := New(Step{Text: text, ToolCalls: []contracts.ToolCall{{ID: "call_1", Name: "get_time", Args: `{"zone":"UTC"}`}},
		Delay: time.Second, ChunkDelay: 40 * time.Millisecond})
	var mu sync.Mutex
	var waits []time.Duration
	srv.after = func(d time.Duration) <-chan time.Time {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		ch := make(chan time.Time, 1)
		ch <- time.Time{}
		return ch
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	status, body := post(t, ts.URL, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"weather?"}]}`)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var content, args, finish string
	var events, usages int
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(body), "\n\n") {
		lines = append(lines, line)
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("event %q is no data: line", line)
		}
		if data == "[DONE]" {
			continue
		}
		events++
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Function struct {
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		if chunk.Usage != nil {
			usages++
		}
		for _, c := range chunk.Choices {
			content += c.Delta.Content
			for _, call := range c.Delta.ToolCalls {
				args += call.Function.Arguments
			}
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
	}
	if content != text || args != `{"zone":"UTC"}` || finish != "tool_calls" || usages != 1 || lines[len(lines)-1] != "data: [DONE]" {
		t.Errorf("streamed content %q, arguments %q, finish %q, %d usage events, last %q; want the step's answer, one usage, [DONE]", content, args, finish, usages, lines[len(lines)-1])
	}
	// The text's chunks, two for the call, the finish, the usage.
	textChunks := events - 4
	if textChunks < 4 || len(waits) != events || waits[0] != time.Second || slices.ContainsFunc(waits[1:], func(d time.Duration) bool { return d != 40*time.Millisecond }) {
		t.Errorf("%d events (%d of text) after waits %v, want the text in several chunks, Delay first, then ChunkDelay before each", events, textChunks, waits)
	}
	if reqs := srv.Requests(); len(reqs) != 1 || !reqs[0].Stream {
		t.Errorf("requests = %+v, want one, recorded as streamed", reqs)
	}
}

// TestALongAnswerStreamsInBoundedChunks: a scripted answer of any length
// comes in at most maxStreamChunks pieces that join into it whole; a
// short one a word or so a piece.
func TestALongAnswerStreamsInBoundedChunks(t *testing.T) {
	for _, text := range []string{"It is sunny in Istanbul today.", strings.Repeat("a long answer, line after line of it\n", 60<<10/37), strings.Repeat("ü", 100_000)} {
		pieces := Chunks(text)
		if got := strings.Join(pieces, ""); got != text {
			t.Errorf("chunks of a %d-byte text join into %d bytes, want the text", len(text), len(got))
		}
		if len(pieces) > maxStreamChunks {
			t.Errorf("a %d-byte text streams in %d chunks, want at most %d", len(text), len(pieces), maxStreamChunks)
		}
	}
	if pieces := Chunks("It is sunny in Istanbul today."); len(pieces) < 4 {
		t.Errorf("a short answer streams in %q, want a word or so a piece", pieces)
	}
}
