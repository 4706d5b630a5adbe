package demomodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"shelldon/contracts"
)

// Step is one scripted answer to one chat-completion request.
//
// The server first waits Delay (or, with Hang, until the client goes away;
// either wait ends early when the request is cancelled). Then a Status
// other than 0 and 200 is answered as an OpenAI-style error carrying Error;
// otherwise a non-empty Raw is written verbatim as a 200 body; otherwise the
// answer is a chat completion holding Text and ToolCalls. A step with none
// of them is an empty completion, which is itself a useful test case.
//
// A request that asks to stream (stream=true) gets the same answer as
// server-sent events: Delay is then the time to the first word, and
// ChunkDelay the pause before each chunk after it (a word or so of the
// text, half a tool call).
//
// In JSON, Delay and ChunkDelay are duration strings such as "2s" or
// "150ms".
type Step struct {
	Text       string               `json:"text,omitempty"`
	ToolCalls  []contracts.ToolCall `json:"tool_calls,omitempty"`
	Delay      time.Duration        `json:"delay,omitempty"`
	ChunkDelay time.Duration        `json:"chunk_delay,omitempty"`
	Status     int                  `json:"status,omitempty"`
	Error      string               `json:"error,omitempty"`
	Hang       bool                 `json:"hang,omitempty"`
	Raw        string               `json:"raw,omitempty"`
}

// stepFields is Step without its methods, so the JSON methods can reuse
// Step's own tags for every field but Delay.
type stepFields Step

// MarshalJSON writes Delay as a duration string.
func (s Step) MarshalJSON() ([]byte, error) {
	out := struct {
		stepFields
		Delay      string `json:"delay,omitempty"`
		ChunkDelay string `json:"chunk_delay,omitempty"`
	}{stepFields: stepFields(s)}
	if s.Delay != 0 {
		out.Delay = s.Delay.String()
	}
	if s.ChunkDelay != 0 {
		out.ChunkDelay = s.ChunkDelay.String()
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads a step strictly: unknown fields are refused, so a
// misspelt field in a script fails loudly instead of being ignored, and
// Delay must be a non-negative duration string.
func (s *Step) UnmarshalJSON(data []byte) error {
	var in struct {
		stepFields
		Delay      *string `json:"delay,omitempty"`
		ChunkDelay *string `json:"chunk_delay,omitempty"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return err
	}
	step := Step(in.stepFields)
	for _, d := range []struct {
		key  string
		text *string
		into *time.Duration
	}{{"delay", in.Delay, &step.Delay}, {"chunk_delay", in.ChunkDelay, &step.ChunkDelay}} {
		if d.text == nil {
			continue
		}
		v, err := time.ParseDuration(*d.text)
		if err != nil {
			return fmt.Errorf("%s %q: want a duration such as \"2s\": %w", d.key, *d.text, err)
		}
		*d.into = v
	}
	if err := step.Validate(); err != nil {
		return err
	}
	*s = step
	return nil
}

// ErrInvalidStep is wrapped by every error of [Step.Validate].
var ErrInvalidStep = errors.New("invalid step")

// Validate reports a step the server could not answer as written.
func (s Step) Validate() error {
	switch {
	case s.Delay < 0:
		return fmt.Errorf("%w: negative delay %s", ErrInvalidStep, s.Delay)
	case s.ChunkDelay < 0:
		return fmt.Errorf("%w: negative chunk_delay %s", ErrInvalidStep, s.ChunkDelay)
	case s.Status != 0 && (s.Status < 200 || s.Status > 599):
		return fmt.Errorf("%w: status %d is not a final HTTP status (200 to 599)", ErrInvalidStep, s.Status)
	}
	return nil
}

// LoadScript reads a JSON array of steps from path. An error names the file
// and, for a bad step, its index (from 0).
func LoadScript(path string) ([]Step, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load script: %w", err)
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf("load script %s: want a JSON array of steps: %w", path, err)
	}
	steps := make([]Step, len(entries))
	for i, entry := range entries {
		if err := json.Unmarshal(entry, &steps[i]); err != nil {
			return nil, fmt.Errorf("load script %s: step %d %s: %w", path, i, capRunes(string(entry), 80), err)
		}
	}
	return steps, nil
}
