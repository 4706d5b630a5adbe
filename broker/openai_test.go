package broker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"shelldon/broker"
	"shelldon/contracts"
	"shelldon/demomodel"
)

// guard bounds every wait in these tests; reaching it means a bug.
const guard = 5 * time.Second

var greeting = []contracts.Message{
	{Role: contracts.ChatSystem, Content: "You are a small pet."},
	{Role: contracts.ChatUser, Content: "hello"},
}

// bodyRecorder keeps every request body the handler behind it sees, so a
// test can check the wire format go-openai actually sent.
type bodyRecorder struct {
	next   http.Handler
	mu     sync.Mutex
	bodies [][]byte
}

func (b *bodyRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	b.mu.Lock()
	b.bodies = append(b.bodies, body)
	b.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	b.next.ServeHTTP(w, r)
}

func (b *bodyRecorder) last(t *testing.T) map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.bodies) == 0 {
		t.Fatal("no request reached the server")
	}
	var v map[string]any
	if err := json.Unmarshal(b.bodies[len(b.bodies)-1], &v); err != nil {
		t.Fatalf("request body is not JSON: %v", err)
	}
	return v
}

// demo starts a scripted model and a provider named name pointing at it.
func demo(t *testing.T, name string, steps ...demomodel.Step) (*demomodel.Server, *broker.OpenAI, *bodyRecorder) {
	t.Helper()
	srv := demomodel.New(steps...)
	rec := &bodyRecorder{next: srv}
	ts := httptest.NewServer(rec)
	t.Cleanup(ts.Close)
	p := broker.NewOpenAI(broker.OpenAIConfig{Name: name, BaseURL: ts.URL + "/v1", Model: demomodel.ModelName, APIKey: "test-key"})
	return srv, p, rec
}

// chainOf builds a chain that retries without pausing.
func chainOf(providers ...broker.Provider) *broker.Chain {
	c := broker.NewChain(providers...)
	c.RetryDelay = 0
	return c
}

func TestTextCompletion(t *testing.T) {
	srv, p, _ := demo(t, "demo", demomodel.Step{Text: "hi owner"})
	got := chainOf(p).Complete(context.Background(), greeting, nil)
	// The demo model counts a token per four bytes, plus one: 35 bytes of
	// roles and contents in, 8 out.
	want := contracts.Completion{OK: true, Text: "hi owner", Provider: "demo", Tries: 1, Usage: contracts.Usage{PromptTokens: 9, CompletionTokens: 3}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Complete = %+v, want %+v", got, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Model != demomodel.ModelName || !reflect.DeepEqual(reqs[0].Messages, greeting) {
		t.Errorf("server saw %+v, want one request for %s with %+v", reqs, demomodel.ModelName, greeting)
	}
}

// TestUsageReachesTheCompletion: the tokens a provider says a call cost
// come through the go-openai client into the completion, for text and for
// tool calls; a provider that says nothing costs nothing that is known.
func TestUsageReachesTheCompletion(t *testing.T) {
	const (
		text  = `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1234,"completion_tokens":56,"total_tokens":1290}}`
		calls = `{"id":"c2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"get_time","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":2000,"completion_tokens":7,"total_tokens":2007}}`
		none  = `{"id":"c3","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`
	)
	_, p, _ := demo(t, "demo", demomodel.Step{Raw: text}, demomodel.Step{Raw: calls}, demomodel.Step{Raw: none})
	chain := chainOf(p)
	for _, want := range []contracts.Usage{{PromptTokens: 1234, CompletionTokens: 56}, {PromptTokens: 2000, CompletionTokens: 7}, {}} {
		if got := chain.Complete(context.Background(), greeting, nil); !got.OK || got.Usage != want {
			t.Errorf("Complete = %+v, want usage %+v", got, want)
		}
	}
}

func TestProviderName(t *testing.T) {
	if got := broker.NewOpenAI(broker.OpenAIConfig{}).Name(); got != "openai" {
		t.Errorf("Name() of an unnamed provider = %q, want openai", got)
	}
	if got := broker.NewOpenAI(broker.OpenAIConfig{Name: "local"}).Name(); got != "local" {
		t.Errorf("Name() = %q, want local", got)
	}
}

func TestToolCallsRoundTrip(t *testing.T) {
	tools := []contracts.ToolDefinition{
		{Name: "get_time", Description: "the time now", Tier: contracts.TierFree},
		{Name: "read_file", Description: "read a file", Tier: contracts.TierFree, ParamsSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"path": map[string]any{"type": "string"}},
			"required":   []any{"path"},
		}},
	}
	srv, p, rec := demo(t, "demo", demomodel.Step{ToolCalls: []contracts.ToolCall{
		{ID: "call_x", Name: "read_file", Args: `{"path":"notes.md"}`},
		{Name: "get_time"}, // no id, no arguments, as some local servers send
	}})
	got := chainOf(p).Complete(context.Background(), greeting, tools)

	wantCalls := []contracts.ToolCall{
		{ID: "call_x", Name: "read_file", Args: `{"path":"notes.md"}`},
		{ID: "call_2", Name: "get_time", Args: "{}"},
	}
	if !got.OK || got.Text != "" || !reflect.DeepEqual(got.ToolCalls, wantCalls) {
		t.Errorf("Complete = %+v, want tool calls %+v", got, wantCalls)
	}
	if names := srv.Requests()[0].Tools; !reflect.DeepEqual(names, []string{"get_time", "read_file"}) {
		t.Errorf("server saw tools %v, want [get_time read_file]", names)
	}
	sent, _ := json.Marshal(rec.last(t)["tools"])
	wantSent := `[{"function":{"description":"the time now","name":"get_time","parameters":{"properties":{},"type":"object"}},"type":"function"},` +
		`{"function":{"description":"read a file","name":"read_file","parameters":{"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},"type":"function"}]`
	if string(sent) != wantSent {
		t.Errorf("tools on the wire = %s\nwant %s", sent, wantSent)
	}
}

func TestNoToolsSendsNoToolsField(t *testing.T) {
	_, p, rec := demo(t, "demo", demomodel.Step{Text: "ok"})
	chainOf(p).Complete(context.Background(), greeting, []contracts.ToolDefinition{})
	if tools, ok := rec.last(t)["tools"]; ok {
		t.Errorf("request carries tools %v, want no tools field", tools)
	}
}

func TestGeneratedIDsFollowEarlierCalls(t *testing.T) {
	conversation := []contracts.Message{
		{Role: contracts.ChatUser, Content: "what time is it?"},
		{Role: contracts.ChatAssistant, ToolCalls: []contracts.ToolCall{{ID: "call_1", Name: "get_time", Args: "{}"}}},
		{Role: contracts.ChatTool, ToolCallID: "call_1", Content: "noon"},
	}
	_, p, _ := demo(t, "demo", demomodel.Step{ToolCalls: []contracts.ToolCall{{Name: "get_time", Args: " "}}})
	got := chainOf(p).Complete(context.Background(), conversation, nil)
	want := []contracts.ToolCall{{ID: "call_2", Name: "get_time", Args: "{}"}}
	if !reflect.DeepEqual(got.ToolCalls, want) {
		t.Errorf("tool calls = %+v, want %+v", got.ToolCalls, want)
	}
}

func TestToolResultsSentBack(t *testing.T) {
	conversation := []contracts.Message{
		{Role: contracts.ChatSystem, Content: "You are a small pet."},
		{Role: contracts.ChatUser, Content: "read my notes"},
		{Role: contracts.ChatAssistant, Content: "Let me look.", ToolCalls: []contracts.ToolCall{
			{ID: "call_a", Name: "read_file", Args: `{"path":"notes.md"}`},
			{ID: "call_b", Name: "get_time"},
		}},
		{Role: contracts.ChatTool, ToolCallID: "call_a", Content: "buy milk"},
		{Role: contracts.ChatTool, ToolCallID: "call_b", Content: "12:00"},
	}
	srv, p, rec := demo(t, "demo", demomodel.Step{Text: "Your notes say: buy milk."})
	got := chainOf(p).Complete(context.Background(), conversation, nil)
	if !got.OK || got.Text != "Your notes say: buy milk." {
		t.Fatalf("Complete = %+v, want the scripted text", got)
	}
	want := append([]contracts.Message(nil), conversation...)
	want[2].ToolCalls = []contracts.ToolCall{
		{ID: "call_a", Name: "read_file", Args: `{"path":"notes.md"}`},
		{ID: "call_b", Name: "get_time", Args: "{}"},
	}
	if seen := srv.Requests()[0].Messages; !reflect.DeepEqual(seen, want) {
		t.Errorf("server saw messages\n%+v\nwant\n%+v", seen, want)
	}
	messages, _ := json.Marshal(rec.last(t)["messages"].([]any)[2:])
	wantWire := `[{"content":"Let me look.","role":"assistant","tool_calls":[` +
		`{"function":{"arguments":"{\"path\":\"notes.md\"}","name":"read_file"},"id":"call_a","type":"function"},` +
		`{"function":{"arguments":"{}","name":"get_time"},"id":"call_b","type":"function"}]},` +
		`{"content":"buy milk","role":"tool","tool_call_id":"call_a"},{"content":"12:00","role":"tool","tool_call_id":"call_b"}]`
	if string(messages) != wantWire {
		t.Errorf("messages on the wire = %s\nwant %s", messages, wantWire)
	}
}

func TestUnknownRoleIsRefusedBeforeSending(t *testing.T) {
	srv, p, _ := demo(t, "demo", demomodel.Step{Text: "unused"})
	_, err := p.CompleteWithTools(context.Background(), []contracts.Message{{Role: "narrator", Content: "x"}}, nil)
	if err == nil || !strings.Contains(err.Error(), `demo: message 0 has unknown role "narrator"`) {
		t.Errorf("CompleteWithTools error = %v, want the unknown role named", err)
	}
	if srv.Hits() != 0 {
		t.Errorf("server got %d requests, want none", srv.Hits())
	}
}

func TestRetryPolicyByStatus(t *testing.T) {
	tests := []struct {
		status    int
		wantHits  int
		wantInErr string
	}{
		{408, 2, "408 scripted failure (retried once)"},
		{429, 2, "429 scripted failure (retried once)"},
		{500, 2, "500 scripted failure (retried once)"},
		{502, 2, "502 scripted failure (retried once)"},
		{503, 2, "503 scripted failure (retried once)"},
		{400, 1, "400 scripted failure"},
		{401, 1, "401 scripted failure"},
		{403, 1, "403 scripted failure"},
		{404, 1, "404 scripted failure"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			fail := demomodel.Step{Status: tt.status, Error: "scripted failure"}
			srv, p, _ := demo(t, "flaky", fail, fail, fail)
			got := chainOf(p).Complete(context.Background(), greeting, nil)
			wantErr := "all providers failed: flaky: " + tt.wantInErr
			if got.OK || got.Error != wantErr || got.Tries != tt.wantHits {
				t.Errorf("Complete = %+v, want error %q after %d tries", got, wantErr, tt.wantHits)
			}
			if srv.Hits() != tt.wantHits {
				t.Errorf("server hits = %d, want %d", srv.Hits(), tt.wantHits)
			}
		})
	}
}

func TestRetrySucceeds(t *testing.T) {
	srv, p, _ := demo(t, "flaky", demomodel.Step{Status: 503}, demomodel.Step{Text: "second time lucky"})
	got := chainOf(p).Complete(context.Background(), greeting, nil)
	want := contracts.Completion{OK: true, Text: "second time lucky", Provider: "flaky", Tries: 2, Usage: contracts.Usage{PromptTokens: 9, CompletionTokens: 5}}
	if !reflect.DeepEqual(got, want) || srv.Hits() != 2 {
		t.Errorf("Complete = %+v after %d hits, want %+v after 2", got, srv.Hits(), want)
	}
}

func TestFallbackToSecondProvider(t *testing.T) {
	first, primary, _ := demo(t, "primary", demomodel.Step{Status: 500, Error: "boom"}, demomodel.Step{Status: 500, Error: "boom"})
	second, backup, _ := demo(t, "backup", demomodel.Step{Text: "backup here"})
	chain := chainOf(primary, backup)
	got := chain.Complete(context.Background(), greeting, nil)
	want := contracts.Completion{OK: true, Text: "backup here", Provider: "backup", Tries: 3, Usage: contracts.Usage{PromptTokens: 9, CompletionTokens: 3}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Complete = %+v, want %+v", got, want)
	}
	if first.Hits() != 2 || second.Hits() != 1 {
		t.Errorf("hits = %d and %d, want 2 and 1", first.Hits(), second.Hits())
	}
	if names := chain.Names(); !reflect.DeepEqual(names, []string{"primary", "backup"}) {
		t.Errorf("Names() = %v, want [primary backup]", names)
	}
}

func TestAllProvidersFailListsEachReason(t *testing.T) {
	// A port nothing listens on: take one, then free it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := ln.Addr().String()
	ln.Close()

	_, remote, _ := demo(t, "openrouter", demomodel.Step{Status: 502, Error: "bad gateway"}, demomodel.Step{Status: 502, Error: "bad gateway"})
	local := broker.NewOpenAI(broker.OpenAIConfig{Name: "local", BaseURL: "http://" + deadAddr + "/v1", Model: "m"})
	got := chainOf(remote, local).Complete(context.Background(), greeting, nil)
	want := "all providers failed: openrouter: 502 bad gateway (retried once); local: dial tcp " + deadAddr + ": connect: connection refused (retried once)"
	if got.OK || got.Error != want || got.Tries != 4 {
		t.Errorf("Complete = %+v\nwant error %q after 4 tries", got, want)
	}
}

func TestEmptyCompletionFallsThrough(t *testing.T) {
	first, empty, _ := demo(t, "empty", demomodel.Step{}, demomodel.Step{Text: "unused"})
	_, backup, _ := demo(t, "backup", demomodel.Step{Text: "   "})
	got := chainOf(empty, backup).Complete(context.Background(), greeting, nil)
	want := "all providers failed: empty: empty completion; backup: empty completion"
	if got.OK || got.Error != want {
		t.Errorf("Complete = %+v, want error %q", got, want)
	}
	if first.Hits() != 1 {
		t.Errorf("empty provider hit %d times, want 1 (no retry)", first.Hits())
	}
}

func TestMalformedAnswers(t *testing.T) {
	tests := []struct {
		name, raw, wantErr string
	}{
		{"broken json", `{"choices": [ {"message": oops`, "malformed answer: invalid character"},
		{"truncated", `{"choices": [`, "malformed answer: unexpected EOF"},
		{"wrong shape", `{"choices": "many"}`, "malformed answer: json: cannot unmarshal string"},
		{"no choices", `{"id":"x","object":"chat.completion","choices":[]}`, "answer has no choices"},
		{"empty object", `{}`, "answer has no choices"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, p, _ := demo(t, "odd", demomodel.Step{Raw: tt.raw}, demomodel.Step{Text: "unused"})
			got := chainOf(p).Complete(context.Background(), greeting, nil)
			if got.OK || !strings.HasPrefix(got.Error, "all providers failed: odd: "+tt.wantErr) {
				t.Errorf("Complete = %+v, want error starting %q", got, "all providers failed: odd: "+tt.wantErr)
			}
			if srv.Hits() != 1 {
				t.Errorf("hits = %d, want 1: a malformed answer is not retried", srv.Hits())
			}
		})
	}
}

func TestErrorPageWithoutErrorJSON(t *testing.T) {
	hits := 0
	var mu sync.Mutex
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<html>\n<h1>502 Bad Gateway</h1>\n</html>\n")
	}))
	defer ts.Close()
	p := broker.NewOpenAI(broker.OpenAIConfig{Name: "proxy", BaseURL: ts.URL + "/v1", Model: "m"})
	got := chainOf(p).Complete(context.Background(), greeting, nil)
	want := "all providers failed: proxy: 502 bad gateway: <html> <h1>502 Bad Gateway</h1> </html> (retried once)"
	if got.Error != want || hits != 2 {
		t.Errorf("Complete = %+v after %d hits, want error %q after 2", got, hits, want)
	}
}

func TestCallErrorCarriesStatus(t *testing.T) {
	_, p, _ := demo(t, "demo", demomodel.Step{Status: 429, Error: "slow down"})
	_, err := p.CompleteWithTools(context.Background(), greeting, nil)
	var callErr *broker.CallError
	if !errors.As(err, &callErr) || callErr.Status != 429 || !callErr.Transient || callErr.Provider != "demo" {
		t.Fatalf("error = %#v, want a transient *CallError with status 429 from demo", err)
	}
	if err.Error() != "demo: 429 slow down" {
		t.Errorf("Error() = %q, want %q", err.Error(), "demo: 429 slow down")
	}
}

func TestCancellationStopsPromptly(t *testing.T) {
	hanging, p, _ := demo(t, "hanging")
	reached := make(chan struct{})
	hanging.Fallback = func(demomodel.Request) demomodel.Step {
		close(reached)
		return demomodel.Step{Hang: true}
	}
	untouched, backup, _ := demo(t, "backup", demomodel.Step{Text: "too late"})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan contracts.Completion, 1)
	go func() { done <- chainOf(p, backup).Complete(ctx, greeting, nil) }()
	<-reached
	cancel()
	select {
	case got := <-done:
		if got.OK || got.Error != "gave up: context canceled" || got.Tries != 1 {
			t.Errorf("Complete = %+v, want error %q after 1 try", got, "gave up: context canceled")
		}
	case <-time.After(guard):
		t.Fatal("Complete still running after cancel")
	}
	if untouched.Hits() != 0 {
		t.Errorf("backup hit %d times after cancel, want 0", untouched.Hits())
	}
}

func TestDoneContextCallsNobody(t *testing.T) {
	srv, p, _ := demo(t, "demo", demomodel.Step{Text: "unused"})
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	got := chainOf(p).Complete(ctx, greeting, nil)
	if got.OK || got.Error != "gave up: context deadline exceeded" || got.Tries != 0 || srv.Hits() != 0 {
		t.Errorf("Complete = %+v with %d hits, want a deadline error and no calls", got, srv.Hits())
	}
}

// TestAnswerSizeIsBounded: a provider that sends without end costs the
// broker 8 MiB at most and becomes a failure that names it; an answer
// larger than one turn takes (2.5 MB, or 7 MiB — past the bus's frame
// limit, under the transport's cap) fails at once, saying so; one under
// the bound arrives whole.
func TestAnswerSizeIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content int // bytes of content; -1 sends without end
		wantErr string
	}{
		{"a large answer a turn takes", broker.MaxReplyBytes, ""},
		{"2.5 MB answer", 2500 << 10, "more than the 256 KiB one turn takes"},
		{"7 MiB answer", 7 << 20, "more than the 256 KiB one turn takes"},
		{"endless answer", -1, "larger than 8 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"`)
				chunk := strings.Repeat("a", 4<<10) // content is a multiple of it
				for sent := 0; tc.content < 0 || sent < tc.content; sent += len(chunk) {
					if _, err := io.WriteString(w, chunk); err != nil {
						return // the broker stopped reading
					}
				}
				io.WriteString(w, `"},"finish_reason":"stop"}]}`)
			}))
			t.Cleanup(ts.Close)
			p := broker.NewOpenAI(broker.OpenAIConfig{BaseURL: ts.URL + "/v1", Model: "m"})
			got, err := p.CompleteWithTools(context.Background(), greeting, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("CompleteWithTools = %v, want a failure saying %q", err, tc.wantErr)
				}
				if tc.content < 0 && !errors.Is(err, broker.ErrAnswerTooLarge) {
					t.Errorf("an endless answer = %v, want ErrAnswerTooLarge", err)
				}
				return
			}
			if err != nil || len(got.Text) != tc.content {
				t.Fatalf("CompleteWithTools = %d bytes, %v; want %d bytes", len(got.Text), err, tc.content)
			}
		})
	}
}

// rateLimited is a provider that answers its first call 429 with a
// Retry-After and every later one with a completion, recording when each
// call came.
func rateLimited(t *testing.T, retryAfter string) (*broker.OpenAI, func() []time.Time) {
	t.Helper()
	var mu sync.Mutex
	var calls []time.Time
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls = append(calls, time.Now())
		first := len(calls) == 1
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if first {
			w.Header().Set("Retry-After", retryAfter)
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit"}}`)
			return
		}
		io.WriteString(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"after the wait"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(ts.Close)
	return broker.NewOpenAI(broker.OpenAIConfig{Name: "limited", BaseURL: ts.URL + "/v1", Model: "m"}), func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(calls)
	}
}

// TestRetryAfterIsHonoured: a provider's 429 with Retry-After is asked
// again after the wait it asked for, not the chain's own short pause; a
// wait longer than the turn has left is not waited for at all, and the
// reason says why.
func TestRetryAfterIsHonoured(t *testing.T) {
	p, calls := rateLimited(t, "1")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := chainOf(p).Complete(ctx, greeting, nil)
	if !got.OK || got.Text != "after the wait" {
		t.Fatalf("Complete = %+v, want the answer after the wait", got)
	}
	if c := calls(); len(c) != 2 || c[1].Sub(c[0]) < time.Second {
		t.Errorf("calls at %v, want the retry a second after the 429 asked for it", c)
	}

	p, calls = rateLimited(t, "3600")
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	started := time.Now()
	got = chainOf(p).Complete(ctx, greeting, nil)
	if got.OK || !strings.Contains(got.Error, "it asked to wait 1h0m0s, more than the turn has left") {
		t.Errorf("Complete = %+v, want a failure saying the wait is past the turn's budget", got)
	}
	if took := time.Since(started); took > 2*time.Second || len(calls()) != 1 {
		t.Errorf("gave up after %v and %d calls, want at once after one", took, len(calls()))
	}
}
