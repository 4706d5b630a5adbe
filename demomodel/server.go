package demomodel

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"shelldon/contracts"
)

// ModelName is the one model the server lists and answers as.
const ModelName = "shelldon-demo"

// maxRequestBytes bounds a request body; a prompt for a small board is far
// smaller, so anything bigger is a bug worth a 413 rather than a silent read.
const maxRequestBytes = 8 << 20

// RequestsKept is how many of the latest requests a server keeps for
// [Server.Requests]: enough for any test's conversation, and a bound on
// a demo model that answers a `make run` session for days (a turn's
// prompt is some 10 KB).
const RequestsKept = 64

// Request is one chat-completion request as the server received it.
type Request struct {
	Model    string
	Messages []contracts.Message
	// Tools are the names of the tools the request offered, in order.
	Tools []string
	// Host is the host and port the request was sent to (its Host
	// header): where the persona's demo page is served.
	Host     string
	Received time.Time
	// Stream says the request asked for its answer as a stream.
	Stream bool
	// Key is the API key the request carried (Authorization: Bearer), ""
	// for none: which of the owner's keys reached the model.
	Key string
	// Bytes is the length of the request's body: what a provider reads,
	// and bills as prompt.
	Bytes int
}

func (r Request) clone() Request {
	r.Tools = slices.Clone(r.Tools)
	r.Messages = slices.Clone(r.Messages)
	for i := range r.Messages {
		r.Messages[i].ToolCalls = slices.Clone(r.Messages[i].ToolCalls)
		r.Messages[i].Images = slices.Clone(r.Messages[i].Images)
	}
	return r
}

// demoPage is the page at DemoPagePath: something real for "fetch the
// demo page" to be refused, and for the owner to open in a browser.
const demoPage = `<!doctype html>
<title>shelldon's demo page</title>
<p>Hello from the scripted demo model. shelldon's http_get will not fetch
this page: it is on this machine (loopback), which the network policy
never lets a tool reach.</p>
`

// Responder chooses the step for a request once the script has run out.
type Responder func(req Request) Step

// Server is the scripted chat-completions server; it is an http.Handler.
// Its methods are safe for concurrent use.
type Server struct {
	// Fallback answers each request that finds the script used up; nil
	// means [Persona]. Set it before the server takes requests.
	Fallback Responder
	// Logf, when set, hears of each request as it arrives: a test outside
	// the process (the demo model in a test host) counts them in the log.
	Logf func(format string, args ...any)
	// Pace is the pause before each chunk of a streamed answer whose
	// step sets no ChunkDelay: zero streams at once; the demo model's
	// command sets [DemoPace], so `make run` shows a reply grow.
	Pace time.Duration

	mu       sync.Mutex
	queue    []Step
	requests []Request
	hits     int
	// cancelled counts the requests whose client went away before the
	// answer.
	cancelled int

	transcriptQueue []TranscriptStep
	transcriptions  []Transcription

	// after is the clock scripted delays wait on; tests replace it.
	after func(time.Duration) <-chan time.Time
}

// New returns a server that answers with steps, in order.
func New(steps ...Step) *Server {
	return &Server{queue: append([]Step(nil), steps...), after: time.After}
}

// Enqueue appends steps to the script.
func (s *Server) Enqueue(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, steps...)
}

// Requests returns a deep copy of the latest [RequestsKept]
// chat-completion requests the server parsed, oldest first. Refused
// requests (bad JSON, no messages) are not in it; [Server.Hits] counts
// them all.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		out[i] = r.clone()
	}
	return out
}

// Hits counts every request that reached the chat-completions endpoint,
// refused ones included, so a test can count a client's attempts.
func (s *Server) Hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits
}

// Cancelled counts the chat-completion requests whose client went away
// (or cancelled the call) before the server answered: a test sees that a
// call nobody waits for any more was not left running.
func (s *Server) Cancelled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancelled
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/chat/completions", "/chat/completions":
		if r.Method != http.MethodPost {
			writeError(w, http.StatusMethodNotAllowed, "chat completions take POST")
			return
		}
		s.complete(w, r)
	case "/v1/audio/transcriptions", "/audio/transcriptions":
		if r.Method != http.MethodPost {
			writeError(w, http.StatusMethodNotAllowed, "transcriptions take POST")
			return
		}
		s.transcribe(w, r)
	case "/v1/models", "/models":
		if r.Method != http.MethodGet {
			writeError(w, http.StatusMethodNotAllowed, "the model list takes GET")
			return
		}
		writeJSON(w, http.StatusOK, modelList{
			Object: "list",
			Data:   []modelEntry{{ID: ModelName, Object: "model", OwnedBy: "shelldon"}},
		})
	case DemoPagePath:
		if r.Method != http.MethodGet {
			writeError(w, http.StatusMethodNotAllowed, "the demo page takes GET")
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, demoPage)
	default:
		writeError(w, http.StatusNotFound, fmt.Sprintf(
			"no route for %s %s: the demo model serves POST /v1/chat/completions, POST /v1/audio/transcriptions, GET /v1/models and GET %s",
			r.Method, r.URL.Path, DemoPagePath))
	}
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits++
	number := s.hits
	s.mu.Unlock()
	if s.Logf != nil {
		s.Logf("request %d arrived", number)
	}

	var body chatRequest
	counted := &countingReader{r: http.MaxBytesReader(w, r.Body, maxRequestBytes)}
	if err := json.NewDecoder(counted).Decode(&body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", tooBig.Limit))
			return
		}
		writeError(w, http.StatusBadRequest, "request body is not valid JSON: "+err.Error())
		return
	}
	req, err := body.request(r.Host, time.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	req.Key, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	io.Copy(io.Discard, counted) // what the decoder left: a trailing newline
	req.Bytes = counted.n

	step := s.next(req)
	if !s.wait(r.Context(), step) {
		s.mu.Lock()
		s.cancelled++
		s.mu.Unlock()
		// The client went away or the server is shutting down. Returning
		// would send an empty 200, which a client still listening would
		// take for an answer; aborting drops the connection instead.
		panic(http.ErrAbortHandler)
	}
	if err := step.Validate(); err != nil {
		writeError(w, http.StatusInternalServerError, "the script is broken: "+err.Error())
		return
	}
	switch {
	case step.Status != 0 && step.Status != http.StatusOK:
		writeError(w, step.Status, step.Error)
	case step.Raw != "":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(step.Raw))
	case body.Stream:
		gap := step.ChunkDelay
		if gap == 0 {
			gap = s.Pace
		}
		if !s.stream(r.Context(), w, completionFor(number, req, step), gap, body.StreamOptions.IncludeUsage) {
			s.mu.Lock()
			s.cancelled++ // the client went away mid-answer
			s.mu.Unlock()
			panic(http.ErrAbortHandler)
		}
	default:
		writeJSON(w, http.StatusOK, completionFor(number, req, step))
	}
}

// next records req, forgetting the oldest beyond RequestsKept, and takes
// the next step for it.
func (s *Server) next(req Request) Step {
	s.mu.Lock()
	if len(s.requests) == RequestsKept {
		// Shifted down in place: the backing array never grows past
		// RequestsKept, and what falls off is no longer referenced.
		copy(s.requests, s.requests[1:])
		s.requests = s.requests[:RequestsKept-1]
	}
	s.requests = append(s.requests, req)
	if len(s.queue) > 0 {
		step := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		return step
	}
	fallback := s.Fallback
	s.mu.Unlock()
	// The responder runs unlocked: a test's responder may block on purpose.
	if fallback == nil {
		fallback = Persona
	}
	return fallback(req)
}

// wait holds the answer as the step asks and reports whether to answer at
// all: false when the request was cancelled first.
func (s *Server) wait(ctx context.Context, step Step) bool {
	switch {
	case step.Hang:
		<-ctx.Done()
		return false
	case step.Delay > 0:
		select {
		case <-s.after(step.Delay):
			return true
		case <-ctx.Done():
			return false
		}
	}
	return ctx.Err() == nil
}

// chatRequest is the part of an OpenAI chat-completions request the server reads.
type chatRequest struct {
	Model    string        `json:"model"`
	Messages []wireMessage `json:"messages"`
	Tools    []wireTool    `json:"tools"`
	Stream   bool          `json:"stream"`
	// StreamOptions.IncludeUsage asks a streamed answer's usage, in an
	// event of its own before the end.
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type wireMessage struct {
	Role string `json:"role"`
	// Content is a string, null, or an array of content parts.
	Content    json.RawMessage `json:"content"`
	ToolCalls  []wireToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// request converts the wire request into the recorded form.
func (c chatRequest) request(host string, received time.Time) (Request, error) {
	if len(c.Messages) == 0 {
		return Request{}, errors.New("messages must not be empty")
	}
	req := Request{Model: c.Model, Host: host, Received: received, Stream: c.Stream, Messages: make([]contracts.Message, len(c.Messages))}
	for i, m := range c.Messages {
		content, images, err := contentParts(m.Content)
		if err != nil {
			return Request{}, fmt.Errorf("message %d: %w", i, err)
		}
		msg := contracts.Message{Role: m.Role, Content: content, ToolCallID: m.ToolCallID, Images: images}
		for _, call := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, contracts.ToolCall{ID: call.ID, Name: call.Function.Name, Args: call.Function.Arguments})
		}
		req.Messages[i] = msg
	}
	for _, t := range c.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}
	return req, nil
}

// contentParts flattens a message's content: a string as it is, the text
// parts of a content-part array joined, null or absent as empty; the
// array's image parts, which must be data: URLs, come back decoded.
func contentParts(raw json.RawMessage) (string, []contracts.Image, error) {
	trimmed := strings.TrimSpace(string(raw))
	if trimmed == "" || trimmed == "null" {
		return "", nil, nil
	}
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return text, nil, nil
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, errors.New("content must be a string, null or an array of content parts")
	}
	var texts []string
	var images []contracts.Image
	for i, p := range parts {
		switch p.Type {
		case "text":
			texts = append(texts, p.Text)
		case "image_url":
			img, err := dataURL(p.ImageURL.URL)
			if err != nil {
				return "", nil, fmt.Errorf("content part %d: %w", i, err)
			}
			images = append(images, img)
		}
	}
	return strings.Join(texts, "\n"), images, nil
}

// dataURL decodes an image part's data:MIME;base64,… URL.
func dataURL(url string) (contracts.Image, error) {
	rest, ok := strings.CutPrefix(url, "data:")
	head, data, found := strings.Cut(rest, ",")
	mime, base64ed := strings.CutSuffix(head, ";base64")
	if !ok || !found || !base64ed || !strings.HasPrefix(mime, "image/") {
		return contracts.Image{}, fmt.Errorf("the demo model takes images only as data:image/…;base64 URLs, not %.40q", url)
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return contracts.Image{}, fmt.Errorf("the image's base64 is broken: %w", err)
	}
	return contracts.Image{MIME: mime, Data: raw}, nil
}

type completionBody struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   usage    `json:"usage"`
}

type choice struct {
	Index        int       `json:"index"`
	Message      wireReply `json:"message"`
	FinishReason string    `json:"finish_reason"`
}

type wireReply struct {
	Role string `json:"role"`
	// Content is null beside tool calls with no text, as OpenAI sends it.
	Content   *string        `json:"content"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// completionFor builds the chat.completion answering req with step.
func completionFor(number int, req Request, step Step) completionBody {
	reply := wireReply{Role: contracts.ChatAssistant}
	if step.Text != "" || len(step.ToolCalls) == 0 {
		reply.Content = &step.Text
	}
	finish := "stop"
	if len(step.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	answerBytes := len(step.Text)
	for _, call := range step.ToolCalls {
		reply.ToolCalls = append(reply.ToolCalls, wireToolCall{
			ID: call.ID, Type: "function",
			Function: wireFunction{Name: call.Name, Arguments: call.Args},
		})
		answerBytes += len(call.Name) + len(call.Args)
	}
	promptBytes := 0
	for _, m := range req.Messages {
		promptBytes += len(m.Role) + len(m.Content)
		for _, call := range m.ToolCalls {
			promptBytes += len(call.Name) + len(call.Args)
		}
	}
	model := req.Model
	if model == "" {
		model = ModelName
	}
	// About four bytes a token, as for English under common tokenizers.
	prompt, completion := promptBytes/4+1, answerBytes/4+1
	return completionBody{
		ID:      fmt.Sprintf("chatcmpl-demo-%d", number),
		Object:  "chat.completion",
		Created: req.Received.Unix(),
		Model:   model,
		Choices: []choice{{Message: reply, FinishReason: finish}},
		Usage:   usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion},
	}
}

type modelList struct {
	Object string       `json:"object"`
	Data   []modelEntry `json:"data"`
}

type modelEntry struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type errorBody struct {
	Error apiError `json:"error"`
}

type apiError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

// writeError answers with status and an OpenAI-style error body; an empty
// message becomes the status text, so a client always has a reason to show.
func writeError(w http.ResponseWriter, status int, message string) {
	if message == "" {
		message = strings.ToLower(http.StatusText(status))
	}
	writeJSON(w, status, errorBody{Error: apiError{Message: message, Type: errorType(status), Code: status}})
}

// errorType names the error class OpenAI's API uses for status.
func errorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
