package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Some OpenAI-compatible servers write a tool call in a shape go-openai
// cannot decode, and go-openai keeps no hook between the body and its
// decoder; so the transport reshapes a chat completion answer before the
// client reads it, into the one shape it decodes:
//
//   - llama-server's documented answer puts name and arguments on the
//     call itself, without the "function" wrapper, an id or a type;
//   - Ollama's native API, and proxies that pass it on, write arguments
//     as a JSON object rather than a string holding one.
//
// An answer that needs neither is passed on untouched, byte for byte.

// reshapeAnswer is body with every tool call of its choices in the shape
// go-openai decodes; body itself when none needs it, or when it is not a
// chat completion at all (go-openai then reports what is wrong with it).
func reshapeAnswer(body []byte) []byte {
	if !bytes.Contains(body, []byte(`"tool_calls"`)) {
		return body // most answers: text, nothing to look at
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil {
		return body
	}
	var choices []map[string]json.RawMessage
	if json.Unmarshal(doc["choices"], &choices) != nil {
		return body
	}
	changed := false
	for _, choice := range choices {
		var message map[string]json.RawMessage
		if json.Unmarshal(choice["message"], &message) != nil {
			continue
		}
		var calls []map[string]json.RawMessage
		if json.Unmarshal(message["tool_calls"], &calls) != nil {
			continue
		}
		reshaped := false
		for _, call := range calls {
			reshaped = reshapeCall(call) || reshaped
		}
		if !reshaped {
			continue
		}
		message["tool_calls"] = mustMarshal(calls)
		choice["message"] = mustMarshal(message)
		changed = true
	}
	if !changed {
		return body
	}
	doc["choices"] = mustMarshal(choices)
	return mustMarshal(doc)
}

// reshapeCall puts one tool call into go-openai's shape, in place, and
// reports whether it had to.
func reshapeCall(call map[string]json.RawMessage) bool {
	changed := false
	var function map[string]json.RawMessage
	if raw, ok := call["function"]; !ok || json.Unmarshal(raw, &function) != nil || function == nil {
		// llama-server's documented shape: the function's fields on the call.
		function = map[string]json.RawMessage{}
		for _, field := range []string{"name", "arguments"} {
			if v, ok := call[field]; ok {
				function[field] = v
				delete(call, field)
			}
		}
		changed = true
	}
	if _, ok := call["type"]; !ok {
		call["type"] = mustMarshal("function")
		changed = true
	}
	if args := bytes.TrimSpace(function["arguments"]); len(args) > 0 && args[0] != '"' && !bytes.Equal(args, []byte("null")) {
		// An object (or anything else) where a string holding it belongs.
		var compact bytes.Buffer
		if json.Compact(&compact, args) == nil {
			function["arguments"] = mustMarshal(compact.String())
			changed = true
		}
	}
	if changed {
		call["function"] = mustMarshal(function)
	}
	return changed
}

// mustMarshal encodes what was just decoded, which cannot fail.
func mustMarshal(v any) json.RawMessage {
	out, err := json.Marshal(v)
	if err != nil {
		panic("broker: re-encoding a decoded answer: " + err.Error())
	}
	return out
}

// reshapeBody reads a successful chat completion answer (at most the
// cap, through body) and hands back one go-openai can decode; a read that
// fails hands back what was read, then the failure. An answer that is an
// error after all (OpenRouter's, for a failure once the model started)
// takes the status its error says, so go-openai reports it as that error.
func reshapeBody(resp *http.Response, body io.ReadCloser) io.ReadCloser {
	data, err := io.ReadAll(body)
	body.Close()
	if err != nil {
		return io.NopCloser(io.MultiReader(bytes.NewReader(data), failingReader{err}))
	}
	if status := errorStatusIn(data); status != 0 {
		resp.StatusCode, resp.Status = status, fmt.Sprintf("%d %s", status, http.StatusText(status))
	} else {
		data = reshapeAnswer(data)
	}
	resp.ContentLength = int64(len(data))
	return io.NopCloser(bytes.NewReader(data))
}

// errorStatusIn is the HTTP status of an answer that has no choices but
// an error whose numeric code is one ({"error": {"code": 502, …}}); zero
// for any other answer.
func errorStatusIn(body []byte) int {
	if !bytes.Contains(body, []byte(`"error"`)) {
		return 0
	}
	var answer struct {
		Choices json.RawMessage `json:"choices"`
		Error   struct {
			Code any `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &answer) != nil || len(answer.Choices) > 0 {
		return 0
	}
	if code, ok := answer.Error.Code.(float64); ok && code >= 400 && code <= 599 && code == float64(int(code)) {
		return int(code)
	}
	return 0
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

// isChatAnswer reports whether resp is a whole (not streamed) successful
// answer of the chat completions endpoint.
func isChatAnswer(r *http.Request, resp *http.Response) bool {
	return resp.StatusCode/100 == 2 && strings.HasSuffix(r.URL.Path, "/chat/completions") &&
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
}

// rateLimitReset is the wait a 429 implies when it carries no
// Retry-After: the longest reset among the x-ratelimit-* windows it says
// are spent (OpenAI's and Groq's headers: remaining "0", reset "6m0s" or
// "1.57s"); zero when it says none.
func rateLimitReset(h http.Header) time.Duration {
	var wait time.Duration
	for _, window := range []string{"requests", "tokens"} {
		if strings.TrimSpace(h.Get("x-ratelimit-remaining-"+window)) != "0" {
			continue
		}
		if d, err := time.ParseDuration(strings.TrimSpace(h.Get("x-ratelimit-reset-" + window))); err == nil && d > wait {
			wait = d
		}
	}
	return wait
}
