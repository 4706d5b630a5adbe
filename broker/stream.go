package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"shelldon/contracts"
)

// A provider configured to stream (stream = true, the default) is asked
// for its answer as server-sent events, and the text so far goes, as it
// grows, to whoever asked ([WithDrafts]); what the worker gets at the end
// is the same completion the whole answer would have made: the deltas
// assembled, then normalised by [normalizeAnswer].
//
// A provider that refuses to stream (an error status to stream=true, or
// a 200 that is no event stream) is asked again for the whole answer,
// once, and not asked to stream again while the broker runs. A stream
// that breaks — cut before its finish, a chunk that does not decode, an
// error event — is asked again for the whole answer too, whether or not
// some of its text was shown: the draft stays as it was until the reply
// replaces it. A stream that stalls for its idle gap fails the call
// (the chain retries it as any transient failure); the turn's deadline
// bounds all of it through ctx.

// DefaultStreamIdleGap bounds the wait for the next event of a stream: a
// model writing sends several a second, and a provider that goes quiet
// this long mid-answer is stuck.
const DefaultStreamIdleGap = 20 * time.Second

// maxStreamedCalls bounds the tool calls one streamed answer may open:
// each delta may open one by a new index, at no cost in argument bytes.
const maxStreamedCalls = 64

// errStreamIdle is why a stalled stream is given up.
var errStreamIdle = errors.New("the stream stalled")

// draftsKey carries, in a call's context, where a streaming provider
// hands the text of its answer so far.
type draftsKey struct{}

// WithDrafts returns ctx carrying draft: a streaming provider called with
// it calls draft with the whole text of the answer so far (its content,
// reasoning tags and all) each time a chunk adds to it, from the goroutine
// reading the stream. draft must be quick; [draftText] is what of it an
// owner may see.
func WithDrafts(ctx context.Context, draft func(text string)) context.Context {
	return context.WithValue(ctx, draftsKey{}, draft)
}

func draftsOf(ctx context.Context) func(string) {
	draft, _ := ctx.Value(draftsKey{}).(func(string))
	return draft
}

// streamed asks for req's answer as a stream. fallBack says the provider
// did not stream it (refused, or the stream broke) and the whole answer
// is to be asked for instead; refused says no chunk of a stream came at
// all, so a whole answer that then works means the provider does not
// stream.
func (p *OpenAI) streamed(ctx context.Context, req openai.ChatCompletionRequest, tools []contracts.ToolDefinition, messages []contracts.Message) (c contracts.Completion, fallBack, refused bool, err error) {
	draft := draftsOf(ctx)
	streamCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	var wait time.Duration
	stream, err := p.client.CreateChatCompletionStream(context.WithValue(streamCtx, retryAfterKey{}, &wait), req)
	if err != nil {
		e := p.callError(ctx, err)
		e.RetryAfter = wait
		return contracts.Completion{}, refusesStreaming(e), true, e
	}
	defer stream.Close()
	idle := time.AfterFunc(p.idleGap, func() { cancel(errStreamIdle) })
	defer idle.Stop()
	var a assembly
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return contracts.Completion{}, false, false, p.callError(ctx, err)
		case context.Cause(streamCtx) == errStreamIdle:
			return contracts.Completion{}, false, false, &CallError{Provider: p.name, Status: http.StatusOK, Transient: true, Err: errStreamIdle,
				Reason: fmt.Sprintf("the stream sent nothing for %v mid-answer", p.idleGap)}
		default:
			return contracts.Completion{}, true, a.chunks == 0, p.callError(ctx, err)
		}
		idle.Reset(p.idleGap)
		grew, err := a.add(chunk)
		if err != nil {
			return contracts.Completion{}, false, false, &CallError{Provider: p.name, Status: http.StatusOK, Reason: err.Error(), Err: err}
		}
		if grew && draft != nil {
			draft(a.content.String())
		}
	}
	if !a.finished {
		// An event stream that ends without a finish: cut short; or a
		// 200 that was no event stream at all (go-openai reads it as
		// nothing), from a server that does not stream.
		return contracts.Completion{}, true, a.chunks == 0, &CallError{Provider: p.name, Status: http.StatusOK, Reason: "the stream ended before the answer did"}
	}
	text, calls := normalizeAnswer(a.content.String(), fromOpenAIToolCalls(a.calls), tools, messages)
	var usage contracts.Usage
	if a.usage != nil {
		usage = contracts.Usage{PromptTokens: a.usage.PromptTokens, CompletionTokens: a.usage.CompletionTokens}
	}
	return contracts.Completion{OK: true, Text: text, ToolCalls: calls, Provider: p.name, Usage: usage}, false, false, nil
}

// refusesStreaming reports whether a provider's error answer to a
// streamed request may be a refusal to stream ("streaming is not
// supported"), worth asking the whole answer for: a 4xx that is not about
// the key, the model, the rate or the tools, or a 501.
func refusesStreaming(e *CallError) bool {
	switch {
	case errors.Is(e, ErrToolsUnsupported):
		return false
	case e.Status == http.StatusNotImplemented:
		return true
	case e.Status < 400 || e.Status >= 500:
		return false
	}
	switch e.Status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return false
	}
	return true
}

// assembly is a streamed answer put back together from its chunks: the
// first choice's content, its tool calls (each delta added to the call of
// its index), the usage of the chunk that carried one, and whether a
// finish reason came.
type assembly struct {
	content  strings.Builder
	calls    []openai.ToolCall
	byIndex  map[int]int // a delta's index → its call in calls
	usage    *openai.Usage
	finished bool
	chunks   int
	size     int // what answerSize counts, as the deltas come
}

// add takes one chunk, and reports whether it added to the content.
func (a *assembly) add(chunk openai.ChatCompletionStreamResponse) (grew bool, err error) {
	a.chunks++
	if chunk.Usage != nil {
		a.usage = chunk.Usage
	}
	for _, choice := range chunk.Choices {
		if choice.Index != 0 {
			continue // the whole answer's first choice is the one taken
		}
		a.content.WriteString(choice.Delta.Content)
		a.size += len(choice.Delta.Content)
		grew = grew || choice.Delta.Content != ""
		for _, delta := range choice.Delta.ToolCalls {
			if err := a.addCall(delta); err != nil {
				return false, err
			}
		}
		if choice.FinishReason != "" {
			a.finished = true
		}
	}
	if a.size > MaxReplyBytes {
		return false, fmt.Errorf("the answer is over %d KiB, more than the %d KiB one turn takes", a.size>>10, MaxReplyBytes>>10)
	}
	return grew, nil
}

// addCall adds one tool-call delta: to the call of its index; without an
// index (some servers leave it out), to the last call unless its id says
// it is a new one. The first id and name a call gets are its own (a
// server that repeats them on every delta sends them again; one that
// splits a name has its parts joined), its arguments' fragments are
// joined in order.
func (a *assembly) addCall(d openai.ToolCall) error {
	i := -1
	last := len(a.calls) - 1
	switch {
	case d.Index != nil:
		if at, ok := a.byIndex[*d.Index]; ok {
			i = at
		}
	case last >= 0 && (d.ID == "" || d.ID == a.calls[last].ID):
		i = last
	}
	if i < 0 {
		if len(a.calls) == maxStreamedCalls {
			return fmt.Errorf("the answer opens more than %d tool calls", maxStreamedCalls)
		}
		a.calls = append(a.calls, openai.ToolCall{Type: openai.ToolTypeFunction})
		i = len(a.calls) - 1
		if d.Index != nil {
			if a.byIndex == nil {
				a.byIndex = map[int]int{}
			}
			a.byIndex[*d.Index] = i
		}
	}
	call := &a.calls[i]
	if call.ID == "" {
		call.ID = d.ID
	}
	if name := d.Function.Name; name != "" && name != call.Function.Name {
		call.Function.Name += name
		a.size += len(name)
	}
	call.Function.Arguments += d.Function.Arguments
	a.size += len(d.Function.Arguments)
	return nil
}

// draftText is what of a streamed answer's text so far an owner may see:
// no reasoning (a <think> block, closed or not), nothing from a tool call
// a model writes into its text (<tool_call>, <function=) on, nothing of an
// answer that starts as a bare JSON object (a call written so, perhaps),
// and no trailing start of one of those tags, which the next chunk may
// complete; at most [contracts.MaxStreamBytes], cut on a character. What
// the owner sees of it is the worker's to say (its reply format).
func draftText(content string) string {
	text := contracts.WithoutThinking(content)
	for _, tag := range []string{toolCallOpen, functionOpen} {
		if i := contracts.IndexFoldASCII(text, tag); i >= 0 {
			text = text[:i]
		}
	}
	text = contracts.WithoutTagStart(text, contracts.ThinkOpen, toolCallOpen, functionOpen)
	if strings.HasPrefix(strings.TrimSpace(text), "{") {
		return ""
	}
	if len(text) > contracts.MaxStreamBytes {
		cut := contracts.MaxStreamBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
	}
	return text
}
