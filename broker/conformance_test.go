package broker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"shelldon/broker"
	"shelldon/contracts"
)

// The provider conformance suite replays exchanges recorded from, or
// published in the documentation of, every OpenAI-compatible server an
// owner is likely to point shelldon at, through the real go-openai client,
// and checks what the broker makes of each answer: the one vocabulary the
// worker sees ([contracts.Completion]) or a [broker.CallError].
//
// testdata/providers/<provider>/ is one provider: provider.json says how
// the broker is configured for it (base path, model, key), and every other
// *.json file there is one exchange; those under streaming/ are streamed
// (their events are sent as server-sent events to a provider that asks
// to stream). A new provider is a new directory.

// providerFixture is a directory's provider.json.
type providerFixture struct {
	// BasePath is the API root's path below the server, such as "/v1"
	// or "/v1beta/openai"; requests must go to BasePath/chat/completions.
	BasePath string `json:"base_path"`
	Model    string `json:"model"`
	// APIKey, when set, must arrive as "Authorization: Bearer <key>".
	APIKey string `json:"api_key"`
	Docs   string `json:"docs"`
}

// exchangeFixture is one recorded exchange and what the broker must make
// of it.
type exchangeFixture struct {
	What string `json:"what"`
	// Sources cite where the answer's shape comes from; Provenance says
	// how closely the fixture follows them: "published" (the answer as a
	// provider's documentation or a capture in a public issue shows it),
	// "assembled" (the documented fields and values, put together here),
	// or "constructed" (no published capture was found; the shape is the
	// one the cited reports describe).
	Sources []struct {
		URL   string `json:"url"`
		Where string `json:"where"`
	} `json:"sources"`
	Provenance string `json:"provenance"`
	// Tools are the names of the tools the request offers.
	Tools    []string `json:"tools"`
	Response struct {
		Status  int               `json:"status"`
		Headers map[string]string `json:"headers"`
		// Body is the answer's JSON, sent as it stands.
		Body json.RawMessage `json:"body"`
		// Events are a streamed answer's data: lines, in order.
		Events []json.RawMessage `json:"events"`
	} `json:"response"`
	Want *struct {
		Text      string               `json:"text"`
		ToolCalls []contracts.ToolCall `json:"tool_calls"`
		Usage     contracts.Usage      `json:"usage"`
	} `json:"want"`
	WantError *struct {
		Status    int      `json:"status"`
		Transient bool     `json:"transient"`
		Contains  []string `json:"reason_contains"`
		// RetryAfter is a Go duration; empty means none asked.
		RetryAfter       string `json:"retry_after"`
		ToolsUnsupported bool   `json:"tools_unsupported"`
	} `json:"want_error"`
}

var conformanceConversation = []contracts.Message{
	{Role: contracts.ChatSystem, Content: "You are a small pet."},
	{Role: contracts.ChatUser, Content: "What is the weather in Istanbul?"},
}

func TestProviderConformance(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "providers", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no provider fixtures under testdata/providers: %v", err)
	}
	for _, dir := range dirs {
		provider := filepath.Base(dir)
		var pf providerFixture
		readFixture(t, filepath.Join(dir, "provider.json"), &pf)
		cases, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		if len(cases) < 2 {
			t.Errorf("%s has no exchanges beside provider.json", dir)
		}
		streamed, _ := filepath.Glob(filepath.Join(dir, "streaming", "*.json"))
		for _, file := range append(cases, streamed...) {
			if filepath.Base(file) == "provider.json" {
				continue
			}
			rel, _ := filepath.Rel(dir, file)
			name := provider + "/" + strings.TrimSuffix(rel, ".json")
			stream := len(streamed) > 0 && slices.Contains(streamed, file)
			t.Run(name, func(t *testing.T) {
				var ex exchangeFixture
				readFixture(t, file, &ex)
				checkFixtureCited(t, ex)
				if stream != (ex.Response.Events != nil) || stream == (ex.Response.Body != nil) {
					t.Fatal("an exchange under streaming/ has events and no body; any other, a body and no events")
				}
				replayExchange(t, provider, pf, ex)
			})
		}
	}
}

func readFixture(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// checkFixtureCited holds every exchange to saying where it comes from.
func checkFixtureCited(t *testing.T, ex exchangeFixture) {
	t.Helper()
	if ex.What == "" || len(ex.Sources) == 0 {
		t.Errorf("the fixture says neither what it is nor where it comes from")
	}
	for _, s := range ex.Sources {
		if !strings.HasPrefix(s.URL, "https://") || s.Where == "" {
			t.Errorf("source %+v: want an https URL and the page's section", s)
		}
	}
	if !slices.Contains([]string{"published", "assembled", "constructed"}, ex.Provenance) {
		t.Errorf("provenance %q: want published, assembled or constructed", ex.Provenance)
	}
	if (ex.Want == nil) == (ex.WantError == nil) {
		t.Errorf("want exactly one of want and want_error")
	}
}

func replayExchange(t *testing.T, provider string, pf providerFixture, ex exchangeFixture) {
	t.Helper()
	streamed := ex.Response.Events != nil
	var requests int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		checkConformanceRequest(t, pf, ex, r)
		for k, v := range ex.Response.Headers {
			w.Header().Set(k, v)
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(ex.Response.Status)
		w.Write(ex.Response.Body)
		for _, event := range ex.Response.Events {
			// One data: line per event: the fixture's JSON compacted, or
			// the string "[DONE]" that ends the stream, as it stands.
			var line bytes.Buffer
			if s, err := strconv.Unquote(string(event)); err == nil {
				line.WriteString(s)
			} else if err := json.Compact(&line, event); err != nil {
				t.Fatalf("event %s: %v", event, err)
			}
			fmt.Fprintf(w, "data: %s\n\n", line.Bytes())
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()

	p := broker.NewOpenAI(broker.OpenAIConfig{Name: provider, BaseURL: srv.URL + pf.BasePath, Model: pf.Model, APIKey: pf.APIKey, Stream: streamed})
	var tools []contracts.ToolDefinition
	for _, name := range ex.Tools {
		tools = append(tools, contracts.ToolDefinition{Name: name, Description: "a tool", Tier: contracts.TierFree,
			ParamsSchema: map[string]any{"type": "object", "properties": map[string]any{}}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	got, err := p.CompleteWithTools(ctx, conformanceConversation, tools)
	if requests != 1 {
		t.Errorf("the server saw %d requests, want 1", requests)
	}

	if ex.Want != nil {
		if err != nil {
			t.Fatalf("CompleteWithTools failed: %v", err)
		}
		want := contracts.Completion{OK: true, Text: ex.Want.Text, ToolCalls: ex.Want.ToolCalls, Provider: provider, Usage: ex.Want.Usage}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("CompleteWithTools =\n%+v\nwant\n%+v", got, want)
		}
		return
	}
	var ce *broker.CallError
	if !errors.As(err, &ce) {
		t.Fatalf("CompleteWithTools = %+v, %v; want a *CallError", got, err)
	}
	we := ex.WantError
	if ce.Provider != provider || ce.Status != we.Status || ce.Transient != we.Transient {
		t.Errorf("CallError = provider %q status %d transient %v, want %q %d %v (%s)", ce.Provider, ce.Status, ce.Transient, provider, we.Status, we.Transient, ce.Reason)
	}
	for _, part := range we.Contains {
		if !strings.Contains(ce.Reason, part) {
			t.Errorf("reason %q does not say %q", ce.Reason, part)
		}
	}
	var wantWait time.Duration
	if we.RetryAfter != "" {
		if wantWait, err = time.ParseDuration(we.RetryAfter); err != nil {
			t.Fatal(err)
		}
	}
	if ce.RetryAfter != wantWait {
		t.Errorf("RetryAfter = %v, want %v", ce.RetryAfter, wantWait)
	}
	if got := errors.Is(ce, broker.ErrToolsUnsupported); got != we.ToolsUnsupported {
		t.Errorf("errors.Is(err, ErrToolsUnsupported) = %v, want %v (%s)", got, we.ToolsUnsupported, ce.Reason)
	}
	if we.ToolsUnsupported && !strings.Contains(ce.Reason, pf.Model) {
		t.Errorf("reason %q does not name the model %q", ce.Reason, pf.Model)
	}
}

// checkConformanceRequest holds the request go-openai sent to what the
// provider expects: the path under its base, its key, the model and the
// tools offered, and streaming (with the usage asked for) only for a
// streamed exchange.
func checkConformanceRequest(t *testing.T, pf providerFixture, ex exchangeFixture, r *http.Request) {
	t.Helper()
	if r.Method != http.MethodPost || r.URL.Path != pf.BasePath+"/chat/completions" {
		t.Errorf("request %s %s, want POST %s/chat/completions", r.Method, r.URL.Path, pf.BasePath)
	}
	if pf.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+pf.APIKey {
		t.Errorf("Authorization %q, want the provider's key as a bearer token", r.Header.Get("Authorization"))
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("request body: %v", err)
	}
	var offered []string
	for _, tool := range req.Tools {
		offered = append(offered, tool.Function.Name)
	}
	streamed := ex.Response.Events != nil
	if req.Model != pf.Model || req.Stream != streamed || req.StreamOptions.IncludeUsage != streamed || !slices.Equal(offered, ex.Tools) {
		t.Errorf("request model %q stream %v (usage %v) tools %v, want %q %v %v", req.Model, req.Stream, req.StreamOptions.IncludeUsage, offered, pf.Model, streamed, ex.Tools)
	}
}
