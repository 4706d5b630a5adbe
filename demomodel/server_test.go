package demomodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"shelldon/contracts"
)

// guard bounds every wait in these tests; reaching it means a bug.
const guard = 5 * time.Second

const helloBody = `{"model":"m","messages":[{"role":"user","content":"hello"}]}`

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	return resp.StatusCode, string(data)
}

// answer decodes a chat.completion the way a client would.
type answer struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Role      string         `json:"role"`
			Content   *string        `json:"content"`
			ToolCalls []wireToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage usage `json:"usage"`
}

func decodeAnswer(t *testing.T, body string) answer {
	t.Helper()
	var a answer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatalf("answer %q is not JSON: %v", body, err)
	}
	if len(a.Choices) != 1 {
		t.Fatalf("answer %q has %d choices, want 1", body, len(a.Choices))
	}
	return a
}

func text(a answer) string {
	if c := a.Choices[0].Message.Content; c != nil {
		return *c
	}
	return ""
}

func TestStepsAnswerInOrderThenFallback(t *testing.T) {
	srv := New(Step{Text: "one"}, Step{Text: "two"})
	srv.Enqueue(Step{Text: "three"})
	srv.Fallback = func(Request) Step { return Step{Text: "fallback"} }
	ts := httptest.NewServer(srv)
	defer ts.Close()

	for _, want := range []string{"one", "two", "three", "fallback", "fallback"} {
		status, body := post(t, ts.URL, helloBody)
		if status != http.StatusOK {
			t.Fatalf("status %d, body %s", status, body)
		}
		a := decodeAnswer(t, body)
		if got := text(a); got != want {
			t.Errorf("answer text = %q, want %q", got, want)
		}
		if a.Object != "chat.completion" || a.Model != "m" || a.Choices[0].FinishReason != "stop" {
			t.Errorf("answer %s: want object chat.completion, model m, finish stop", body)
		}
		if a.Usage.TotalTokens != a.Usage.PromptTokens+a.Usage.CompletionTokens || a.Usage.PromptTokens == 0 {
			t.Errorf("usage %+v is not plausible", a.Usage)
		}
	}
	if got := srv.Hits(); got != 5 {
		t.Errorf("Hits() = %d, want 5", got)
	}
}

func TestNilFallbackIsPersona(t *testing.T) {
	srv := New()
	srv.Fallback = nil
	ts := httptest.NewServer(srv)
	defer ts.Close()
	_, body := post(t, ts.URL, helloBody)
	if got := text(decodeAnswer(t, body)); !strings.Contains(got, "scripted demo model") {
		t.Errorf("persona answer %q does not say it is the scripted demo model", got)
	}
}

func TestToolCallsAnswer(t *testing.T) {
	calls := []contracts.ToolCall{
		{ID: "call_a", Name: "get_time", Args: `{}`},
		{Name: "read_file", Args: `{"path":"x"}`},
	}
	ts := httptest.NewServer(New(Step{ToolCalls: calls}))
	defer ts.Close()
	_, body := post(t, ts.URL, helloBody)
	a := decodeAnswer(t, body)
	msg := a.Choices[0].Message
	if msg.Content != nil {
		t.Errorf("content = %q beside tool calls, want null", *msg.Content)
	}
	if a.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("finish_reason = %q, want tool_calls", a.Choices[0].FinishReason)
	}
	want := []wireToolCall{
		{ID: "call_a", Type: "function", Function: wireFunction{Name: "get_time", Arguments: `{}`}},
		{Type: "function", Function: wireFunction{Name: "read_file", Arguments: `{"path":"x"}`}},
	}
	if !reflect.DeepEqual(msg.ToolCalls, want) {
		t.Errorf("tool_calls = %+v, want %+v", msg.ToolCalls, want)
	}
	if strings.Contains(body, `"id":""`) {
		t.Errorf("answer %s carries an empty id; a call without id must have none", body)
	}
}

func TestEmptyStepIsEmptyCompletion(t *testing.T) {
	ts := httptest.NewServer(New(Step{}))
	defer ts.Close()
	_, body := post(t, ts.URL, helloBody)
	a := decodeAnswer(t, body)
	if got := text(a); got != "" || len(a.Choices[0].Message.ToolCalls) != 0 {
		t.Errorf("empty step answered %s, want no text and no tool calls", body)
	}
}

func TestStatusErrors(t *testing.T) {
	tests := []struct {
		step        Step
		wantMessage string
		wantType    string
	}{
		{Step{Status: 401, Error: "bad key"}, "bad key", "authentication_error"},
		{Step{Status: 429, Error: "slow down"}, "slow down", "rate_limit_error"},
		{Step{Status: 500}, "internal server error", "server_error"},
		{Step{Status: 503, Error: "overloaded"}, "overloaded", "server_error"},
		{Step{Status: 400, Error: "nope"}, "nope", "invalid_request_error"},
		{Step{Status: 42}, "the script is broken", "server_error"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.step.Status), func(t *testing.T) {
			ts := httptest.NewServer(New(tt.step))
			defer ts.Close()
			status, body := post(t, ts.URL, helloBody)
			wantStatus := tt.step.Status
			if tt.step.Validate() != nil {
				wantStatus = http.StatusInternalServerError
			}
			if status != wantStatus {
				t.Errorf("status = %d, want %d", status, wantStatus)
			}
			var e errorBody
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				t.Fatalf("error body %q is not JSON: %v", body, err)
			}
			if !strings.Contains(e.Error.Message, tt.wantMessage) || e.Error.Type != tt.wantType || e.Error.Code != wantStatus {
				t.Errorf("error = %+v, want message containing %q, type %q, code %d", e.Error, tt.wantMessage, tt.wantType, wantStatus)
			}
		})
	}
}

func TestRawBodyIsVerbatim(t *testing.T) {
	const raw = `{"choices": [ {"message": oops`
	ts := httptest.NewServer(New(Step{Raw: raw}))
	defer ts.Close()
	status, body := post(t, ts.URL, helloBody)
	if status != http.StatusOK || body != raw {
		t.Errorf("raw step answered %d %q, want 200 %q", status, body, raw)
	}
}

func TestRefusedRequests(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"bad json", `{"model":`, "not valid JSON"},
		{"not an object", `[1,2]`, "not valid JSON"},
		{"no messages", `{"model":"m","messages":[]}`, "messages must not be empty"},
		{"bad content", `{"model":"m","messages":[{"role":"user","content":7}]}`, "message 0: content must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := New(Step{Text: "kept for later"})
			ts := httptest.NewServer(srv)
			defer ts.Close()
			status, body := post(t, ts.URL, tt.body)
			if status != http.StatusBadRequest || !strings.Contains(body, tt.want) {
				t.Errorf("POST %s = %d %s, want 400 mentioning %q", tt.body, status, body, tt.want)
			}
			if srv.Hits() != 1 || len(srv.Requests()) != 0 {
				t.Errorf("Hits() = %d, len(Requests()) = %d, want 1 and 0", srv.Hits(), len(srv.Requests()))
			}
			// A refused request must not use up a step.
			if _, body := post(t, ts.URL, helloBody); text(decodeAnswer(t, body)) != "kept for later" {
				t.Errorf("after a refused request the next answer is %s, want the queued step", body)
			}
		})
	}
}

func TestOversizedBody(t *testing.T) {
	ts := httptest.NewServer(New())
	defer ts.Close()
	big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", maxRequestBytes) + `"}]}`
	if status, body := post(t, ts.URL, big); status != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body answered %d %s, want 413", status, body)
	}
}

// TestRequestsKeepOnlyTheLatest is a long `make run` session: the demo
// model answers every turn, but keeps only the latest requests, so it
// does not grow by every prompt it was sent.
func TestRequestsKeepOnlyTheLatest(t *testing.T) {
	srv := New()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	const sent = RequestsKept + 10
	for i := range sent {
		body, _ := json.Marshal(map[string]any{"model": "m", "messages": []map[string]string{{"role": "user", "content": fmt.Sprintf("message %d", i)}}})
		if status, answer := post(t, ts.URL, string(body)); status != http.StatusOK {
			t.Fatalf("request %d answered %d %s", i, status, answer)
		}
	}
	reqs := srv.Requests()
	if srv.Hits() != sent || len(reqs) != RequestsKept {
		t.Fatalf("after %d requests Hits() = %d, len(Requests()) = %d, want %d and %d", sent, srv.Hits(), len(reqs), sent, RequestsKept)
	}
	for i, req := range reqs {
		if got, want := lastUserText(req.Messages), fmt.Sprintf("message %d", sent-RequestsKept+i); got != want {
			t.Errorf("Requests()[%d] holds %q, want %q (the latest, oldest first)", i, got, want)
		}
	}
}

func TestRequestsRecorded(t *testing.T) {
	srv := New(Step{Text: "ok"})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	before := time.Now()
	body := `{
		"model": "gpt-x",
		"messages": [
			{"role":"system","content":"be a pet"},
			{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,aGk="}},{"type":"text","text":"here"}]},
			{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_time","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"c1","content":"noon"}
		],
		"tools": [{"type":"function","function":{"name":"get_time","parameters":{}}},{"type":"function","function":{"name":"list_dir"}}]
	}
`
	post(t, ts.URL, body)
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("len(Requests()) = %d, want 1", len(reqs))
	}
	got := reqs[0]
	want := []contracts.Message{
		{Role: "system", Content: "be a pet"},
		{Role: "user", Content: "look\nhere", Images: []contracts.Image{{MIME: "image/png", Data: []byte("hi")}}},
		{Role: "assistant", ToolCalls: []contracts.ToolCall{{ID: "c1", Name: "get_time", Args: "{}"}}},
		{Role: "tool", Content: "noon", ToolCallID: "c1"},
	}
	if got.Model != "gpt-x" || !reflect.DeepEqual(got.Messages, want) || !reflect.DeepEqual(got.Tools, []string{"get_time", "list_dir"}) {
		t.Errorf("recorded %+v, want model gpt-x, messages %+v, tools [get_time list_dir]", got, want)
	}
	if want := strings.TrimPrefix(ts.URL, "http://"); got.Host != want {
		t.Errorf("Host = %q, want %q, where the request was sent", got.Host, want)
	}
	if got.Bytes != len(body) {
		t.Errorf("Bytes = %d, want %d, the body's length", got.Bytes, len(body))
	}
	if got.Received.Before(before) || got.Received.After(time.Now()) {
		t.Errorf("Received = %v, not within the request", got.Received)
	}
	// Requests is a copy: changing it changes nothing recorded.
	reqs[0].Model = "changed"
	reqs[0].Messages[2].ToolCalls[0].Name = "changed"
	reqs[0].Tools[0] = "changed"
	if again := srv.Requests()[0]; again.Model != "gpt-x" || again.Messages[2].ToolCalls[0].Name != "get_time" || again.Tools[0] != "get_time" {
		t.Error("Requests() returned the server's own slice")
	}
}

// fakeClock stands in for time.After: each wait announces itself on
// started and ends when the test sends on fire.
type fakeClock struct {
	started chan time.Duration
	fire    chan time.Time
}

func newFakeClock(srv *Server) *fakeClock {
	c := &fakeClock{started: make(chan time.Duration, 1), fire: make(chan time.Time)}
	srv.after = func(d time.Duration) <-chan time.Time {
		c.started <- d
		return c.fire
	}
	return c
}

// watched runs srv and signals on the returned channel each time a handler ends.
func watched(srv *Server) (*httptest.Server, <-chan struct{}) {
	done := make(chan struct{}, 10)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		srv.ServeHTTP(w, r)
	}))
	return ts, done
}

func TestDelayWaitsThenAnswers(t *testing.T) {
	srv := New(Step{Text: "late", Delay: 3 * time.Second})
	clock := newFakeClock(srv)
	ts := httptest.NewServer(srv)
	defer ts.Close()

	answered := make(chan string, 1)
	go func() {
		resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(helloBody))
		if err != nil {
			answered <- err.Error()
			return
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		answered <- string(data)
	}()
	if d := <-clock.started; d != 3*time.Second {
		t.Errorf("server waited %v, want 3s", d)
	}
	select {
	case body := <-answered:
		t.Fatalf("answered %s before the delay was over", body)
	default:
	}
	clock.fire <- time.Now()
	select {
	case body := <-answered:
		if !strings.Contains(body, "late") {
			t.Errorf("answer after delay = %s, want the step's text", body)
		}
	case <-time.After(guard):
		t.Fatal("no answer after the delay ended")
	}
}

func TestWaitsEndWhenClientGoesAway(t *testing.T) {
	tests := []struct {
		name string
		step Step
	}{
		{"delay", Step{Text: "never", Delay: time.Hour}},
		{"hang", Step{Hang: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := New()
			waiting := make(chan struct{})
			srv.Fallback = func(Request) Step { close(waiting); return tt.step }
			ts, handlerDone := watched(srv)
			defer ts.Close()

			ctx, cancel := context.WithCancel(context.Background())
			clientErr := make(chan error, 1)
			go func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/chat/completions", strings.NewReader(helloBody))
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				clientErr <- err
			}()
			<-waiting
			cancel()
			select {
			case err := <-clientErr:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("client error = %v, want context.Canceled", err)
				}
			case <-time.After(guard):
				t.Fatal("client still waiting after cancel")
			}
			select {
			case <-handlerDone:
			case <-time.After(guard):
				t.Fatal("handler still waiting after the client went away")
			}
		})
	}
}

func TestConcurrentRequests(t *testing.T) {
	const n = 40
	srv := New()
	ts := httptest.NewServer(srv)
	defer ts.Close()

	var wg sync.WaitGroup
	answers := make(chan string, n)
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			srv.Enqueue(Step{Text: fmt.Sprintf("step %d", i)})
		}()
		go func() {
			defer wg.Done()
			_ = srv.Requests()
			_ = srv.Hits()
		}()
	}
	wg.Wait()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(ts.URL+"/chat/completions", "application/json", strings.NewReader(helloBody))
			if err != nil {
				answers <- "error: " + err.Error()
				return
			}
			defer resp.Body.Close()
			var a answer
			if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || len(a.Choices) != 1 {
				answers <- fmt.Sprintf("bad answer: %v", err)
				return
			}
			answers <- text(a)
		}()
	}
	wg.Wait()
	close(answers)
	seen := map[string]bool{}
	for a := range answers {
		if !strings.HasPrefix(a, "step ") || seen[a] {
			t.Errorf("answer %q: want each queued step exactly once", a)
		}
		seen[a] = true
	}
	if srv.Hits() != n || len(srv.Requests()) != n {
		t.Errorf("Hits() = %d, len(Requests()) = %d, want %d each", srv.Hits(), len(srv.Requests()), n)
	}
}

func TestRoutes(t *testing.T) {
	ts := httptest.NewServer(New())
	defer ts.Close()
	tests := []struct {
		method, path string
		wantStatus   int
		wantBody     string
	}{
		{http.MethodGet, "/v1/models", 200, `"id":"shelldon-demo"`},
		{http.MethodGet, "/models", 200, `"object":"list"`},
		{http.MethodPost, "/v1/models", 405, "GET"},
		{http.MethodGet, "/v1/chat/completions", 405, "POST"},
		{http.MethodGet, "/v2/other", 404, "no route"},
		{http.MethodGet, DemoPagePath, 200, "Hello from the scripted demo model"},
		{http.MethodPost, DemoPagePath, 405, "GET"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, ts.URL+tt.path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus || !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("%s %s = %d %s, want %d containing %s", tt.method, tt.path, resp.StatusCode, body, tt.wantStatus, tt.wantBody)
			}
		})
	}
}
