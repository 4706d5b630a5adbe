package broker

import (
	"context"
	"errors"
	"net/http"
	"time"

	"shelldon/contracts"
)

// Provider is one model endpoint. CompleteWithTools returns the model's
// text or tool calls; on failure it returns an error, ideally a *CallError
// so the chain can tell a passing fault from a lasting one.
type Provider interface {
	Name() string
	CompleteWithTools(ctx context.Context, messages []contracts.Message, tools []contracts.ToolDefinition) (contracts.Completion, error)
}

// Seeing is a provider that may be given images; SeesImages says whether
// this one is configured to (vision = true).
type Seeing interface {
	SeesImages() bool
}

// Transcriber is a provider that can turn audio into text; Transcribes
// says whether this one is configured to (a transcription_model).
type Transcriber interface {
	Transcribes() bool
	// Transcribe returns the text of audio, whose fileName's extension
	// tells its format; on failure, ideally a *CallError.
	Transcribe(ctx context.Context, fileName string, audio []byte) (string, error)
}

// CallError is one failed provider call: which provider, why, and whether
// trying the same provider again could help.
type CallError struct {
	Provider string
	// Status is the HTTP status of the provider's answer; 0 when no answer came.
	Status int
	// Reason is the failure in a few words, such as "502 bad gateway".
	Reason string
	// Transient is set for failures a retry may cure: a transport error,
	// 408, 429 or a 5xx.
	Transient bool
	// RetryAfter is the wait a 429 or 503 asked for (Retry-After); zero
	// when none.
	RetryAfter time.Duration
	Err        error
}

func (e *CallError) Error() string { return e.Provider + ": " + e.Reason }

func (e *CallError) Unwrap() error { return e.Err }

// transientStatus reports whether an HTTP status says "try again later"
// rather than "this request will never work here".
func transientStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// ErrToolsUnsupported is wrapped by the *CallError of a provider that
// refuses the request because its model (or its server's configuration)
// does not call tools.
var ErrToolsUnsupported = errors.New("the model does not call tools")
