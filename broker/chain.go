package broker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"shelldon/contracts"
)

// attemptsPerProvider is one call and one retry.
const attemptsPerProvider = 2

// DefaultRetryDelay is the pause before a retry: long enough for a
// rate-limited or restarting endpoint to recover a little, short against
// the worker's budget of 25 s.
const DefaultRetryDelay = 500 * time.Millisecond

// errEmptyCompletion is the failure of an answer with neither text nor
// tool calls: nothing the worker could act on.
var errEmptyCompletion = errors.New("empty completion")

// Chain tries its providers in order, each with one retry for a transient
// failure, and answers with the first usable completion. Once built it is
// safe for concurrent use.
type Chain struct {
	// RetryDelay is the pause before a retry; NewChain sets DefaultRetryDelay.
	RetryDelay time.Duration

	links []link
}

type link struct {
	name     string
	provider Provider
}

// NewChain returns a chain of providers, tried in the order given. Nil
// providers are left out.
func NewChain(providers ...Provider) *Chain {
	c := &Chain{RetryDelay: DefaultRetryDelay}
	for i, p := range providers {
		if p == nil {
			continue
		}
		c.links = append(c.links, link{name: nameOf(p, i), provider: p})
	}
	return c
}

// Names returns the providers' names in chain order.
func (c *Chain) Names() []string {
	names := make([]string, len(c.links))
	for i, l := range c.links {
		names[i] = l.name
	}
	return names
}

// Complete asks the providers in turn for a completion of messages with
// tools on offer. It never panics and never returns an error: a failure
// comes back as Completion{OK: false} whose Error gives each provider's
// reason. Only a *CallError marked Transient is retried; anything else
// moves on to the next provider. When ctx is done, Complete stops at once.
// A conversation that carries images goes only to the providers that see
// them ([Seeing]).
func (c *Chain) Complete(ctx context.Context, messages []contracts.Message, tools []contracts.ToolDefinition) contracts.Completion {
	links := c.links
	if hasImages(messages) {
		links = c.able(func(p Provider) bool { s, ok := p.(Seeing); return ok && s.SeesImages() })
		if len(links) == 0 && len(c.links) > 0 {
			return contracts.Completion{Error: ErrNoVision.Error()}
		}
	}
	var completion contracts.Completion
	var fixes []string
	name, tries, failure := c.each(ctx, links, func(ctx context.Context, p Provider) (err error) {
		completion, err = safeCall(ctx, p, messages, tools)
		if fix := ownersToFix(err); fix != "" && !slices.Contains(fixes, fix) {
			fixes = append(fixes, fix)
		}
		return err
	})
	if failure != "" {
		return contracts.Completion{Error: failure, Tries: tries, OwnerFix: strings.Join(fixes, "; ")}
	}
	completion.OK, completion.Error = true, ""
	completion.Provider, completion.Tries = name, tries
	return completion
}

// ErrNoVision is the failure of a conversation with images when no
// provider of the chain is marked as seeing them.
var ErrNoVision = errors.New("no provider takes images: mark a vision-capable one with vision = true in its [[provider]] table")

// ErrNoTranscription is the failure of a voice note when no provider of
// the chain has a transcription model.
var ErrNoTranscription = errors.New("no provider transcribes voice notes: set transcription_model (e.g. \"whisper-1\") in a [[provider]] table")

// Transcribe asks the providers that transcribe ([Transcriber]), in
// turn and with the same retries as Complete, for the text of audio,
// whose fileName's extension tells its format. Like Complete, it answers
// every failure as a value.
func (c *Chain) Transcribe(ctx context.Context, fileName string, audio []byte) contracts.Transcript {
	links := c.able(func(p Provider) bool { t, ok := p.(Transcriber); return ok && t.Transcribes() })
	if len(links) == 0 {
		return contracts.Transcript{Error: ErrNoTranscription.Error()}
	}
	var text string
	name, _, failure := c.each(ctx, links, func(ctx context.Context, p Provider) (err error) {
		text, err = safeTranscribe(ctx, p.(Transcriber), fileName, audio)
		return err
	})
	if failure != "" {
		return contracts.Transcript{Error: failure}
	}
	return contracts.Transcript{OK: true, Text: text, Provider: name}
}

// able is the links whose provider can says is able.
func (c *Chain) able(can func(Provider) bool) []link {
	var out []link
	for _, l := range c.links {
		if can(l.provider) {
			out = append(out, l)
		}
	}
	return out
}

func hasImages(messages []contracts.Message) bool {
	for _, m := range messages {
		if len(m.Images) > 0 {
			return true
		}
	}
	return false
}

// each makes call to the providers of links in turn, each with one retry
// for a transient failure, until one succeeds. It returns that one's
// name and the calls made, or a failure naming each provider's reason.
func (c *Chain) each(ctx context.Context, links []link, call func(context.Context, Provider) error) (name string, tries int, failure string) {
	if len(links) == 0 {
		return "", 0, "no providers configured"
	}
	var reasons []string
	for _, l := range links {
		var reason string
		var wait time.Duration
		for attempt := 1; attempt <= attemptsPerProvider; attempt++ {
			if attempt > 1 && !c.pause(ctx, wait) {
				return "", tries, gaveUp(ctx, reasons)
			}
			if ctx.Err() != nil {
				return "", tries, gaveUp(ctx, reasons)
			}
			tries++
			err := call(ctx, l.provider)
			if err == nil {
				return l.name, tries, ""
			}
			if ctx.Err() != nil {
				// The failure is the cancellation itself, not the provider's.
				return "", tries, gaveUp(ctx, reasons)
			}
			reason = reasonOf(err)
			if attempt > 1 {
				reason += " (retried once)"
			}
			if !isTransient(err) {
				break
			}
			// A provider that said when to come back is asked again then,
			// if that is within the turn's budget; if not, the next one
			// is asked now rather than the turn spent waiting.
			wait = retryAfterOf(err)
			if deadline, ok := ctx.Deadline(); ok && wait > 0 && time.Now().Add(wait).After(deadline) {
				reason += fmt.Sprintf(" (it asked to wait %v, more than the turn has left)", wait.Round(time.Second))
				break
			}
		}
		reasons = append(reasons, l.name+": "+reason)
	}
	return "", tries, "all providers failed: " + strings.Join(reasons, "; ")
}

// retryAfterOf is the wait a provider's failure asked for.
func retryAfterOf(err error) time.Duration {
	var ce *CallError
	if errors.As(err, &ce) {
		return ce.RetryAfter
	}
	return 0
}

// pause waits before a retry — what the provider asked for, else
// RetryDelay — and reports whether ctx is still live.
func (c *Chain) pause(ctx context.Context, asked time.Duration) bool {
	wait := c.RetryDelay
	if asked > 0 {
		wait = asked
	}
	if wait <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func gaveUp(ctx context.Context, reasons []string) string {
	msg := "gave up: " + ctx.Err().Error()
	if len(reasons) > 0 {
		msg += "; " + strings.Join(reasons, "; ")
	}
	return msg
}

// safeCall calls p, turning a panic and an empty answer into errors, so
// that one broken provider cannot take the broker down with it.
func safeCall(ctx context.Context, p Provider, messages []contracts.Message, tools []contracts.ToolDefinition) (completion contracts.Completion, err error) {
	defer func() {
		if r := recover(); r != nil {
			completion, err = contracts.Completion{}, fmt.Errorf("panic: %v", r)
		}
	}()
	completion, err = p.CompleteWithTools(ctx, messages, tools)
	if err == nil && strings.TrimSpace(completion.Text) == "" && len(completion.ToolCalls) == 0 {
		err = errEmptyCompletion
	}
	return completion, err
}

// safeTranscribe is safeCall for a transcription: a panic and an empty
// text are errors too.
func safeTranscribe(ctx context.Context, t Transcriber, fileName string, audio []byte) (text string, err error) {
	defer func() {
		if r := recover(); r != nil {
			text, err = "", fmt.Errorf("panic: %v", r)
		}
	}()
	text, err = t.Transcribe(ctx, fileName, audio)
	if err == nil && strings.TrimSpace(text) == "" {
		err = errEmptyTranscript
	}
	return strings.TrimSpace(text), err
}

// errEmptyTranscript is the failure of a transcription with no words:
// silence, or noise the model could not make out.
var errEmptyTranscript = errors.New("the transcript is empty: no words could be made out")

// nameOf asks p its name, falling back to its position when it has none
// or cannot say.
func nameOf(p Provider, index int) (name string) {
	fallback := fmt.Sprintf("provider %d", index+1)
	defer func() {
		if recover() != nil {
			name = fallback
		}
	}()
	if name = p.Name(); name == "" {
		name = fallback
	}
	return name
}

// reasonOf is the failure without the provider's name, which the chain adds.
func reasonOf(err error) string {
	var callErr *CallError
	if errors.As(err, &callErr) {
		return callErr.Reason
	}
	return err.Error()
}

func isTransient(err error) bool {
	var callErr *CallError
	return errors.As(err, &callErr) && callErr.Transient
}

// ownersToFix words a provider's failure that only the owner can fix —
// a model that cannot call tools, a key refused, a model unknown — for
// them; "" for any other (an outage is not theirs to fix, and is retried).
func ownersToFix(err error) string {
	fault, ce := FaultOf(err)
	switch fault {
	case NoToolCalling:
		return ce.Error()
	case BadKey:
		return fmt.Sprintf("%s refused the key (%s): check its key (api_key_credential)", ce.Provider, ce.Reason)
	case UnknownModel:
		return fmt.Sprintf("%s does not know the model (%s): check model in its [[provider]] table", ce.Provider, ce.Reason)
	}
	return ""
}

// OwnersFault is a provider's failure that only the owner can fix.
type OwnersFault string

// The faults: the model calls no tools, the key is refused (401, 403), the
// model is unknown there (404).
const (
	NoToolCalling OwnersFault = "no tool calling"
	BadKey        OwnersFault = "bad key"
	UnknownModel  OwnersFault = "unknown model"
)

// FaultOf says which of the owner's faults err, a provider's failure, is,
// with its *CallError; "" for any other failure (an outage, a timeout),
// which is not theirs to fix.
func FaultOf(err error) (OwnersFault, *CallError) {
	var ce *CallError
	if err == nil || !errors.As(err, &ce) {
		return "", nil
	}
	switch {
	case errors.Is(err, ErrToolsUnsupported):
		return NoToolCalling, ce
	case ce.Status == http.StatusUnauthorized || ce.Status == http.StatusForbidden:
		return BadKey, ce
	case ce.Status == http.StatusNotFound:
		return UnknownModel, ce
	}
	return "", ce
}
