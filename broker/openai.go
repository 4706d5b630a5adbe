package broker

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"shelldon/contracts"
)

// OpenAIConfig describes one OpenAI-compatible chat-completions endpoint:
// OpenAI itself, OpenRouter, a local Ollama or llama.cpp server, or another
// vendor's compatible endpoint.
type OpenAIConfig struct {
	// Name tells providers apart in errors and logs; empty means "openai".
	Name string
	// BaseURL is the API root, such as "https://openrouter.ai/api/v1";
	// empty means OpenAI's.
	BaseURL string
	Model   string
	APIKey  string
	// Vision marks a model that takes images: a conversation with a
	// photo goes only to such providers.
	Vision bool
	// TranscriptionModel is the endpoint's /audio/transcriptions model
	// ("whisper-1"); empty means it transcribes nothing.
	TranscriptionModel string
	// Stream asks for answers as streams, whose text so far goes to the
	// caller's [WithDrafts] as it grows; a provider that refuses is asked
	// for the whole answer.
	Stream bool
	// StreamIdleGap bounds the wait for a stream's next event; zero
	// means DefaultStreamIdleGap.
	StreamIdleGap time.Duration
	// HTTPClient carries the requests; nil means a client without a
	// timeout of its own, so the caller's context bounds each call. A
	// client without a Transport goes by the broker's pool, whose
	// connections' closes are chores (providerConns).
	HTTPClient *http.Client
}

// OpenAI is a [Provider] speaking the OpenAI chat-completions API. It is
// safe for concurrent use.
type OpenAI struct {
	name               string
	model              string
	vision             bool
	transcriptionModel string
	client             *openai.Client
	// stream says answers are asked for as streams, until the provider
	// refuses one (noStream).
	stream   bool
	idleGap  time.Duration
	noStream atomic.Bool
}

// NewOpenAI returns a provider for the endpoint cfg describes.
func NewOpenAI(cfg OpenAIConfig) *OpenAI {
	clientCfg := openai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		clientCfg.BaseURL = cfg.BaseURL
	}
	client := http.Client{}
	if cfg.HTTPClient != nil {
		client = *cfg.HTTPClient
	}
	next := client.Transport
	if next == nil {
		next = providerConns()
	}
	client.Transport = cappedTransport{next: next, max: maxAnswerBytes}
	clientCfg.HTTPClient = &client
	name := cfg.Name
	if name == "" {
		name = "openai"
	}
	idleGap := cfg.StreamIdleGap
	if idleGap <= 0 {
		idleGap = DefaultStreamIdleGap
	}
	return &OpenAI{name: name, model: cfg.Model, vision: cfg.Vision, transcriptionModel: cfg.TranscriptionModel, stream: cfg.Stream,
		idleGap: idleGap, client: openai.NewClientWithConfig(clientCfg)}
}

// SeesImages implements [Seeing].
func (p *OpenAI) SeesImages() bool { return p.vision }

// Transcribes implements [Transcriber].
func (p *OpenAI) Transcribes() bool { return p.transcriptionModel != "" }

// Transcribe implements [Transcriber] through the endpoint's
// /audio/transcriptions, as multipart form data. Every error it returns
// is a *CallError.
func (p *OpenAI) Transcribe(ctx context.Context, fileName string, audio []byte) (string, error) {
	var wait time.Duration
	resp, err := p.client.CreateTranscription(context.WithValue(ctx, retryAfterKey{}, &wait), openai.AudioRequest{
		Model: p.transcriptionModel, FilePath: fileName, Reader: bytes.NewReader(audio),
	})
	if err != nil {
		e := p.callError(ctx, err)
		e.RetryAfter = wait
		return "", e
	}
	if len(resp.Text) > MaxReplyBytes {
		return "", &CallError{Provider: p.name, Status: http.StatusOK,
			Reason: fmt.Sprintf("the transcript is %d KiB, more than the %d KiB one turn takes", len(resp.Text)>>10, MaxReplyBytes>>10)}
	}
	return resp.Text, nil
}

// maxAnswerBytes bounds one HTTP answer of a provider. A completion is a
// few kilobytes; a provider or proxy gone wrong may send without end, and
// the broker lives for months on a 416 MB board.
const maxAnswerBytes = 8 << 20

// ErrAnswerTooLarge is the failure of a call whose answer passed
// maxAnswerBytes; the rest of it is not read.
var ErrAnswerTooLarge = errors.New("the provider's answer is larger than 8 MiB")

// cappedTransport hands out answer bodies that fail with
// [ErrAnswerTooLarge] past max bytes.
type cappedTransport struct {
	next http.RoundTripper
	max  int64
}

func (t cappedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: t.max}
	if isChatAnswer(r, resp) {
		resp.Body = reshapeBody(resp, resp.Body)
	}
	if slot, ok := r.Context().Value(retryAfterKey{}).(*time.Duration); ok {
		// After the reshape, which may have found an error in a 200.
		*slot = retryAfter(resp, time.Now())
	}
	return resp, nil
}

// retryAfterKey carries, in a call's context, where the transport puts
// the wait a provider's 429 or 503 asked for: go-openai's errors do not
// keep the answer's headers.
type retryAfterKey struct{}

// retryAfter is the wait a 429 or 503 answer's Retry-After asks for, in
// seconds or as a date; for a 429 without one, the wait its rate-limit
// headers imply ([rateLimitReset]); zero when it asks none.
func retryAfter(resp *http.Response, now time.Time) time.Duration {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0
	}
	h := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if secs, err := strconv.Atoi(h); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	if at, err := http.ParseTime(h); err == nil && at.After(now) {
		return at.Sub(now)
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		return rateLimitReset(resp.Header)
	}
	return 0
}

type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// A body of exactly the cap ends here; one byte more is too much.
		var probe [1]byte
		if n, err := b.ReadCloser.Read(probe[:]); n == 0 {
			return 0, err
		}
		return 0, ErrAnswerTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// Name implements [Provider].
func (p *OpenAI) Name() string { return p.name }

// CompleteWithTools implements [Provider]. Every error it returns is a
// *CallError.
func (p *OpenAI) CompleteWithTools(ctx context.Context, messages []contracts.Message, tools []contracts.ToolDefinition) (contracts.Completion, error) {
	wireMessages, err := toOpenAIMessages(messages)
	if err != nil {
		return contracts.Completion{}, &CallError{Provider: p.name, Reason: err.Error(), Err: err}
	}
	req := openai.ChatCompletionRequest{Model: p.model, Messages: wireMessages, Tools: toOpenAITools(tools)}
	if !p.stream || p.noStream.Load() {
		return p.whole(ctx, req, tools, messages)
	}
	c, fallBack, refused, err := p.streamed(ctx, req, tools, messages)
	if !fallBack {
		return c, err
	}
	c, err = p.whole(ctx, req, tools, messages)
	if err == nil && refused {
		p.noStream.Store(true)
	}
	return c, err
}

// whole asks for req's answer in one piece.
func (p *OpenAI) whole(ctx context.Context, req openai.ChatCompletionRequest, tools []contracts.ToolDefinition, messages []contracts.Message) (contracts.Completion, error) {
	var wait time.Duration
	resp, err := p.client.CreateChatCompletion(context.WithValue(ctx, retryAfterKey{}, &wait), req)
	if err != nil {
		e := p.callError(ctx, err)
		e.RetryAfter = wait
		return contracts.Completion{}, e
	}
	if len(resp.Choices) == 0 {
		return contracts.Completion{}, &CallError{Provider: p.name, Status: http.StatusOK, Reason: "answer has no choices"}
	}
	answer := resp.Choices[0].Message
	if size := answerSize(answer); size > MaxReplyBytes {
		return contracts.Completion{}, &CallError{Provider: p.name, Status: http.StatusOK,
			Reason: fmt.Sprintf("the answer is %d KiB, more than the %d KiB one turn takes", size>>10, MaxReplyBytes>>10)}
	}
	text, calls := normalizeAnswer(answer.Content, fromOpenAIToolCalls(answer.ToolCalls), tools, messages)
	return contracts.Completion{
		OK:        true,
		Text:      text,
		ToolCalls: calls,
		Provider:  p.name,
		// A provider that sends no usage leaves it zero: not counted, not
		// free (docs/configuration.md says how the owner sees it).
		Usage: contracts.Usage{PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens},
	}, nil
}

// MaxReplyBytes bounds what one answer of a model may hold — its text and
// its tool calls' arguments — well below the bus's frame limit: a larger
// one fails its own turn at once, with this reason, rather than stalling
// the turn or poisoning the history of the next.
const MaxReplyBytes = 256 << 10

// answerSize is the size of what an answer carries to the worker.
func answerSize(m openai.ChatCompletionMessage) int {
	n := len(m.Content)
	for _, c := range m.ToolCalls {
		n += len(c.Function.Name) + len(c.Function.Arguments)
	}
	return n
}

// callError classifies an error of the go-openai client.
func (p *OpenAI) callError(ctx context.Context, err error) *CallError {
	e := &CallError{Provider: p.name, Err: err}
	var (
		message    string // the provider's own words, when it sent any
		requestErr *openai.RequestError
		apiErr     *openai.APIError
		urlErr     *url.Error
		syntaxErr  *json.SyntaxError
		typeErr    *json.UnmarshalTypeError
	)
	switch {
	case ctx.Err() != nil:
		// The failure is only the caller giving up; the chain stops on it.
		e.Reason = ctx.Err().Error()
	case errors.As(err, &requestErr):
		// An error status whose body is not OpenAI's error JSON: another
		// vendor's error JSON (vLLM's, Mistral's, Gemini's list), whose
		// message is found, or a proxy's HTML page, whose status says more.
		e.Status = requestErr.HTTPStatusCode
		if message = errorBodyMessage(requestErr.Body); message != "" {
			e.Reason = statusReason(requestErr.HTTPStatusCode, message)
			break
		}
		e.Reason = statusReason(requestErr.HTTPStatusCode, "")
		if body := oneLine(string(requestErr.Body), 120); body != "" {
			e.Reason += ": " + body
		}
	case errors.As(err, &apiErr):
		e.Status = apiErr.HTTPStatusCode
		e.Reason = statusReason(apiErr.HTTPStatusCode, apiErr.Message)
		message = apiErr.Message
	case errors.As(err, &urlErr):
		// http.Client wraps every transport failure so; its Op and URL
		// only repeat what the provider name already says.
		e.Reason = urlErr.Err.Error()
		e.Transient = true
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		e.Status = http.StatusOK
		e.Reason = "malformed answer: " + err.Error()
	default:
		e.Reason = err.Error()
	}
	if e.Status != 0 && e.Status != http.StatusOK {
		e.Transient = transientStatus(e.Status)
	}
	if apiErr != nil && fmt.Sprint(apiErr.Code) == "tool_use_failed" {
		// Groq refusing a call the model wrote wrongly: the model may
		// write it right when asked again.
		e.Transient = true
	}
	if e.Status >= 400 {
		if fix, ok := toolsRefusal(message); ok {
			e.Reason = fmt.Sprintf("model %q cannot call tools here (%s): %s", p.model, e.Reason, fix)
			e.Err = fmt.Errorf("%w: %w", ErrToolsUnsupported, err)
			e.Transient = false
		}
	}
	return e
}

// statusReason is "502 bad gateway" or "401 invalid api key": the status
// and the API's own message, or the status text when it sent none.
func statusReason(status int, message string) string {
	if message = oneLine(message, 200); message == "" {
		message = strings.ToLower(http.StatusText(status))
	}
	return fmt.Sprintf("%d %s", status, message)
}

// oneLine collapses s onto one line and caps it at max characters, so a
// provider's error page cannot flood a log line or a reply.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max]) + "…"
}

func toOpenAIMessages(messages []contracts.Message) ([]openai.ChatCompletionMessage, error) {
	out := make([]openai.ChatCompletionMessage, len(messages))
	for i, m := range messages {
		switch m.Role {
		case contracts.ChatSystem, contracts.ChatUser, contracts.ChatAssistant, contracts.ChatTool:
		default:
			return nil, fmt.Errorf("message %d has unknown role %q", i, m.Role)
		}
		wire := openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		if len(m.Images) > 0 {
			if m.Role != contracts.ChatUser {
				return nil, fmt.Errorf("message %d: only the owner's messages carry images, not %q", i, m.Role)
			}
			wire.Content, wire.MultiContent = "", imageParts(m)
		}
		for _, call := range m.ToolCalls {
			wire.ToolCalls = append(wire.ToolCalls, openai.ToolCall{
				ID:       call.ID,
				Type:     openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: call.Name, Arguments: argsOrEmptyObject(call.Args)},
			})
		}
		out[i] = wire
	}
	return out, nil
}

// imageParts is a user message as content parts: its text, then each
// image as a data: URL, which every vision endpoint takes inline.
func imageParts(m contracts.Message) []openai.ChatMessagePart {
	var parts []openai.ChatMessagePart
	if m.Content != "" {
		parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: m.Content})
	}
	for _, img := range m.Images {
		parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{
			URL: "data:" + img.MIME + ";base64," + base64.StdEncoding.EncodeToString(img.Data), Detail: openai.ImageURLDetailAuto,
		}})
	}
	return parts
}

func toOpenAITools(tools []contracts.ToolDefinition) []openai.Tool {
	if len(tools) == 0 {
		return nil // some servers refuse an empty tools array
	}
	out := make([]openai.Tool, len(tools))
	for i, t := range tools {
		var params any = t.ParamsSchema
		if t.ParamsSchema == nil {
			// APIs refuse a function without a parameter schema.
			params = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		out[i] = openai.Tool{
			Type:     openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params},
		}
	}
	return out
}

// fromOpenAIToolCalls converts a model's tool calls as they came; ids
// are made whole by [normalizeAnswer].
func fromOpenAIToolCalls(calls []openai.ToolCall) []contracts.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]contracts.ToolCall, len(calls))
	for i, call := range calls {
		out[i] = contracts.ToolCall{ID: call.ID, Name: call.Function.Name, Args: argsOrEmptyObject(call.Function.Arguments)}
	}
	return out
}

// argsOrEmptyObject turns the empty arguments some models send for a
// parameterless tool into the empty JSON object every consumer can parse.
func argsOrEmptyObject(args string) string {
	if strings.TrimSpace(args) == "" {
		return "{}"
	}
	return args
}
