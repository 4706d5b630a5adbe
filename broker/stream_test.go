package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"shelldon/broker"
	"shelldon/contracts"
	"shelldon/daemon/hub"
	"shelldon/daemon/hub/hubtest"
)

// sseServer answers every chat completion request: a streamed one (a
// body with "stream": true) with events, written one by one with gap
// between them, then "[DONE]" unless cut (the connection then closes
// mid-stream); a whole one with whole. refuse answers a streamed one
// with a 400 instead. It records whether each request streamed.
type sseServer struct {
	events []string
	gap    time.Duration
	cut    bool
	refuse bool
	whole  string

	mu       sync.Mutex
	requests []bool // stream, per request
}

func (s *sseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Stream bool `json:"stream"`
	}
	json.Unmarshal(body, &req)
	s.mu.Lock()
	s.requests = append(s.requests, req.Stream)
	s.mu.Unlock()
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, s.whole)
		return
	}
	if s.refuse {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"streaming is not supported","type":"invalid_request_error"}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range s.events {
		fmt.Fprintf(w, "data: %s\n\n", e)
		w.(http.Flusher).Flush()
		select {
		case <-time.After(s.gap):
		case <-r.Context().Done():
			return
		}
	}
	if s.cut {
		// The connection goes without the stream's end.
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

func (s *sseServer) streamed() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bool(nil), s.requests...)
}

// contentEvents is text as a stream's content deltas, one per word,
// then a finish; usage, when not nil, comes in one more event.
func contentEvents(text string, usage *contracts.Usage) []string {
	var events []string
	for i, word := range strings.SplitAfter(text, " ") {
		delta := map[string]any{"content": word}
		if i == 0 {
			delta["role"] = "assistant"
		}
		events = append(events, mustJSON(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil}}}))
	}
	events = append(events, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
	if usage != nil {
		events = append(events, fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d}}`, usage.PromptTokens, usage.CompletionTokens))
	}
	return events
}

// wholeAnswer is text as a whole chat completion.
func wholeAnswer(text string, usage contracts.Usage) string {
	return mustJSON(map[string]any{"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
		"message": map[string]any{"role": "assistant", "content": text}}},
		"usage": map[string]any{"prompt_tokens": usage.PromptTokens, "completion_tokens": usage.CompletionTokens}})
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func streamingProvider(t *testing.T, s *sseServer) *broker.OpenAI {
	t.Helper()
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return broker.NewOpenAI(broker.OpenAIConfig{Name: "streaming", BaseURL: ts.URL + "/v1", Model: "m", Stream: true})
}

// draftsSeen collects what a streaming provider hands WithDrafts.
type draftsSeen struct {
	mu    sync.Mutex
	texts []string
}

func (d *draftsSeen) add(text string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.texts = append(d.texts, text)
}

func (d *draftsSeen) all() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.texts...)
}

// TestStreamedAnswerIsTheWholeOne: an answer streamed, with reasoning in
// its content and the usage in its last event, comes to the worker as the
// same completion its whole form makes; the text so far grows chunk by
// chunk on its way.
func TestStreamedAnswerIsTheWholeOne(t *testing.T) {
	const text = "<think>the owner wants weather</think>It is sunny in Istanbul today."
	usage := contracts.Usage{PromptTokens: 30, CompletionTokens: 8}
	s := &sseServer{events: contentEvents(text, &usage), whole: wholeAnswer(text, usage)}
	streaming := streamingProvider(t, s)
	seen := &draftsSeen{}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	got, err := streaming.CompleteWithTools(broker.WithDrafts(ctx, seen.add), greeting, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	want, err := broker.NewOpenAI(broker.OpenAIConfig{Name: "streaming", BaseURL: ts.URL + "/v1", Model: "m"}).CompleteWithTools(ctx, greeting, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || got.Text != "It is sunny in Istanbul today." || got.Usage != usage {
		t.Errorf("streamed = %+v\nwhole    = %+v\nwant both the text without reasoning, and the usage", got, want)
	}
	if requests := s.streamed(); !reflect.DeepEqual(requests, []bool{true, false}) {
		t.Errorf("requests streamed %v, want [true false]: one streamed, one whole", requests)
	}
	drafts := seen.all()
	if len(drafts) < 3 || drafts[len(drafts)-1] != text {
		t.Fatalf("drafts = %q, want the text growing word by word to the whole content", drafts)
	}
	for i := 1; i < len(drafts); i++ {
		if !strings.HasPrefix(drafts[i], drafts[i-1]) || len(drafts[i]) <= len(drafts[i-1]) {
			t.Errorf("draft %d %q does not grow from %q", i, drafts[i], drafts[i-1])
		}
	}
}

// TestStreamCutMidwayFallsBackToTheWholeAnswer: a stream whose
// connection goes after some of its text, before its finish, is asked for
// again whole, once; the next call streams again (the provider streams,
// this one stream broke).
func TestStreamCutMidwayFallsBackToTheWholeAnswer(t *testing.T) {
	const text = "The answer, in full."
	events := contentEvents(text, nil)
	s := &sseServer{events: events[:2], cut: true, whole: wholeAnswer(text, contracts.Usage{PromptTokens: 5, CompletionTokens: 4})}
	p := streamingProvider(t, s)
	seen := &draftsSeen{}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	got, err := p.CompleteWithTools(broker.WithDrafts(ctx, seen.add), greeting, nil)
	if err != nil || got.Text != text {
		t.Fatalf("CompleteWithTools = %+v, %v; want the whole answer", got, err)
	}
	if drafts := seen.all(); len(drafts) == 0 || drafts[len(drafts)-1] != "The answer, " {
		t.Errorf("drafts = %q, want the text the stream sent before it broke", drafts)
	}
	p.CompleteWithTools(ctx, greeting, nil)
	if requests := s.streamed(); !reflect.DeepEqual(requests, []bool{true, false, true, false}) {
		t.Errorf("requests streamed %v, want a stream, the whole answer, and the same again for the next call", requests)
	}
}

// TestProviderThatRefusesStreamingIsAnsweredWhole: a provider that
// answers stream=true with a 400 is asked for the whole answer at once,
// and is not asked to stream again.
func TestProviderThatRefusesStreamingIsAnsweredWhole(t *testing.T) {
	s := &sseServer{refuse: true, whole: wholeAnswer("whole, as ever", contracts.Usage{PromptTokens: 3, CompletionTokens: 3})}
	p := streamingProvider(t, s)
	for range 2 {
		if got := chainOf(p).Complete(context.Background(), greeting, nil); !got.OK || got.Text != "whole, as ever" || got.Tries != 1 {
			t.Fatalf("Complete = %+v, want the whole answer in one try", got)
		}
	}
	if requests := s.streamed(); !reflect.DeepEqual(requests, []bool{true, false, false}) {
		t.Errorf("requests streamed %v, want one refused stream, then whole answers only", requests)
	}
}

// TestStreamedJobSendsCoalescedDrafts: through the bus, a job whose
// answer streams a word every 20 ms sends its worker the text so far
// (reasoning left out) at most once per broker.DraftInterval, each draft
// longer than the one before, all before the completion, which holds the
// whole answer.
func TestStreamedJobSendsCoalescedDrafts(t *testing.T) {
	words := strings.Repeat("word ", 40)
	text := "<think>private</think>" + words
	s := &sseServer{events: contentEvents(text, nil), gap: 20 * time.Millisecond}
	p := streamingProvider(t, s)
	socket := hubtest.SocketPath(t)
	joined := make(chan struct{}, 1)
	hubtest.Serve(t, socket, hub.Config{OnJoin: func(p *hub.Peer) {
		if p.Hello.Role == contracts.RoleBroker {
			joined <- struct{}{}
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go broker.Serve(ctx, socket, 1<<20, chainOf(p), slog.New(slog.DiscardHandler))
	select {
	case <-joined:
	case <-time.After(guard):
		t.Fatal("the broker did not join")
	}
	worker := dial(t, socket, "t1")
	started := time.Now()
	env, err := contracts.NewEnvelope(contracts.KindJob, "t1", contracts.Job{Messages: greeting, Deadline: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Send(env); err != nil {
		t.Fatal(err)
	}
	var drafts []string
	for {
		env, err := worker.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if env.Kind == contracts.KindStream {
			var st contracts.Stream
			if err := env.Decode(&st); err != nil {
				t.Fatal(err)
			}
			drafts = append(drafts, st.Text)
			continue
		}
		var c contracts.Completion
		if env.Kind != contracts.KindCompletion || env.Decode(&c) != nil || c.Text != strings.TrimSpace(words) {
			t.Fatalf("got %s %s, want the completion of the whole answer", env.Kind, env.Body)
		}
		break
	}
	took := time.Since(started)
	if most := int(took/broker.DraftInterval) + 2; len(drafts) < 2 || len(drafts) > most {
		t.Errorf("%d drafts in %v, want at least 2 and at most %d (one per %v)", len(drafts), took.Round(time.Millisecond), most, broker.DraftInterval)
	}
	for i, d := range drafts {
		if strings.Contains(d, "private") || strings.Contains(d, "think") || !strings.HasPrefix(words, d) {
			t.Errorf("draft %d = %q, want the answer so far without its reasoning", i, d)
		}
		if i > 0 && len(d) <= len(drafts[i-1]) {
			t.Errorf("draft %d = %q does not grow from %q", i, d, drafts[i-1])
		}
	}
}

// TestStreamedToolCallDeltas: the shapes servers stream tool calls in are
// put back together as the calls the whole answer would hold: deltas by
// index, split over events, with arguments in fragments; deltas without
// an index (the last call's, until a new id); ids missing or repeated,
// made unique; a name sent again on every delta, taken once.
func TestStreamedToolCallDeltas(t *testing.T) {
	tools := []contracts.ToolDefinition{{Name: "run_command"}, {Name: "read_file"}}
	delta := func(calls string) string {
		return `{"choices":[{"index":0,"delta":{"tool_calls":` + calls + `},"finish_reason":null}]}`
	}
	const finish = `{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`
	for _, tt := range []struct {
		name   string
		events []string
		want   []contracts.ToolCall
	}{
		{"interleaved by index, ids missing", []string{
			delta(`[{"index":0,"type":"function","function":{"name":"run_command","arguments":"{\"comm"}}]`),
			delta(`[{"index":1,"type":"function","function":{"name":"read_file","arguments":""}}]`),
			delta(`[{"index":0,"function":{"arguments":"and\":\"ls\"}"}},{"index":1,"function":{"arguments":"{\"path\":\"a\"}"}}]`),
			finish,
		}, []contracts.ToolCall{{ID: "call_1", Name: "run_command", Args: `{"command":"ls"}`}, {ID: "call_2", Name: "read_file", Args: `{"path":"a"}`}}},
		{"no index, a new id starts a call", []string{
			delta(`[{"id":"a","type":"function","function":{"name":"run_command","arguments":"{\"command\":"}}]`),
			delta(`[{"function":{"arguments":"\"pwd\"}"}}]`),
			delta(`[{"id":"b","type":"function","function":{"name":"read_file","arguments":"{}"}}]`),
			finish,
		}, []contracts.ToolCall{{ID: "a", Name: "run_command", Args: `{"command":"pwd"}`}, {ID: "b", Name: "read_file", Args: "{}"}}},
		{"one id twice, a name on every delta", []string{
			delta(`[{"index":0,"id":"x","type":"function","function":{"name":"run_command","arguments":"{\"command\""}}]`),
			delta(`[{"index":0,"id":"x","function":{"name":"run_command","arguments":":\"ls\"}"}}]`),
			delta(`[{"index":1,"id":"x","type":"function","function":{"name":"run_command","arguments":"{\"command\":\"id\"}"}}]`),
			finish,
		}, []contracts.ToolCall{{ID: "x", Name: "run_command", Args: `{"command":"ls"}`}, {ID: "call_2", Name: "run_command", Args: `{"command":"id"}`}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := streamingProvider(t, &sseServer{events: tt.events})
			got, err := p.CompleteWithTools(context.Background(), greeting, tools)
			if err != nil || !reflect.DeepEqual(got.ToolCalls, tt.want) {
				t.Errorf("calls = %+v, %v; want %+v", got.ToolCalls, err, tt.want)
			}
		})
	}
}

// TestAStalledStreamFailsTheCall: a stream that goes quiet mid-answer
// for its idle gap fails the call as a passing fault, which the chain
// tries again, rather than waiting out the turn.
func TestAStalledStreamFailsTheCall(t *testing.T) {
	events := contentEvents("half of it and then nothing", nil)
	s := &sseServer{events: events[:2], gap: time.Minute}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	p := broker.NewOpenAI(broker.OpenAIConfig{Name: "stalling", BaseURL: ts.URL + "/v1", Model: "m", Stream: true, StreamIdleGap: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	got := chainOf(p).Complete(ctx, greeting, nil)
	if got.OK || got.Tries != 2 || !strings.Contains(got.Error, "the stream sent nothing for 100ms mid-answer (retried once)") {
		t.Errorf("Complete = %+v, want the stall as the reason, tried twice", got)
	}
}
