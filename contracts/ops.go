package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Caps on what one op may carry. Core checks them again before it writes.
const (
	MaxRememberBytes  = 2000
	MaxAboutBytes     = 8 << 10
	MaxLearningBytes  = 1000
	MaxLearningTags   = 5
	MaxFaceNameLen    = 24
	MaxFaceGlyphs     = 24
	MaxToolSourceSize = 64 << 10
	MaxSummaryBytes   = 500
	MaxParkedMessages = 64
	MaxScheduleText   = 500
	maxScheduleWhen   = 64
	maxScheduleEvery  = 16
)

// ErrInvalidOp is wrapped by every op validation error.
var ErrInvalidOp = errors.New("invalid op")

// WithRefusedOps is a reply whose ops were refused for err, saying so
// at its end.
func WithRefusedOps(reply string, err error) string {
	return strings.TrimSpace(reply + "\n\n⚠ " + err.Error())
}

// OpBody is one kind of change a model proposes. Only core applies it.
type OpBody interface {
	// OpName is the op's name in an ops block ("remember").
	OpName() string
	// Validate checks the op's fields against the caps; the error wraps
	// [ErrInvalidOp] and names the field.
	Validate() error
}

// Op is a proposed op, in JSON an object whose "op" field names the kind:
//
//	{"op": "remember", "topic": "coffee", "text": "loves hazelnut"}
type Op struct {
	Body OpBody
}

// Remember adds a note to the memory tree (memory/<topic>.md).
type Remember struct {
	Topic string `json:"topic,omitempty"`
	Text  string `json:"text"`
}

// RewriteAbout replaces about.md, the pet's picture of its owner.
type RewriteAbout struct {
	Text string `json:"text"`
}

// AddFace adds a face to the registry.
type AddFace struct {
	Name   string `json:"name"`
	Glyphs string `json:"glyphs"`
}

// CaptureLearning records a lesson in the learnings table.
type CaptureLearning struct {
	Text string   `json:"text"`
	Tags []string `json:"tags,omitempty"`
}

// RequestToolApproval parks a RISKY call until the owner decides. The
// worker, not the model, proposes it: Messages is the conversation so far,
// ending with the assistant message that asked for Call.
type RequestToolApproval struct {
	Call     ToolCall  `json:"call"`
	Summary  string    `json:"summary"`
	Messages []Message `json:"messages"`
}

// ProposeTool offers a new self-coded tool: a Python module and its pytest test.
type ProposeTool struct {
	Name string `json:"name"`
	Code string `json:"code"`
	Test string `json:"test"`
}

// Schedule asks core to start a turn later, once or again and again: a
// reminder, a check-in. Core parses When and Every (daemon/schedule) and
// refuses what it cannot read.
type Schedule struct {
	// When is the first time: "2026-12-01T09:00:00+01:00", "2026-12-01
	// 09:00" or "09:00" (local time; the next such time), or "in 20m".
	When string `json:"when"`
	// Every repeats it: empty for once, "day", "week", or a duration such
	// as "2h" (at least 15 minutes).
	Every string `json:"every,omitempty"`
	// Text is what the pet is to do then, as if the owner had written it.
	Text string `json:"text"`
}

// CancelSchedule drops a scheduled turn, by the id /schedule shows.
type CancelSchedule struct {
	ID int64 `json:"id"`
}

func (Remember) OpName() string            { return "remember" }
func (RewriteAbout) OpName() string        { return "rewrite_about" }
func (AddFace) OpName() string             { return "add_face" }
func (CaptureLearning) OpName() string     { return "capture_learning" }
func (RequestToolApproval) OpName() string { return "request_tool_approval" }
func (ProposeTool) OpName() string         { return "propose_tool" }
func (Schedule) OpName() string            { return "schedule" }
func (CancelSchedule) OpName() string      { return "cancel_schedule" }

// opKinds makes a fresh body for each op name.
var opKinds = map[string]func() OpBody{
	"remember":              func() OpBody { return &Remember{} },
	"rewrite_about":         func() OpBody { return &RewriteAbout{} },
	"add_face":              func() OpBody { return &AddFace{} },
	"capture_learning":      func() OpBody { return &CaptureLearning{} },
	"request_tool_approval": func() OpBody { return &RequestToolApproval{} },
	"propose_tool":          func() OpBody { return &ProposeTool{} },
	"schedule":              func() OpBody { return &Schedule{} },
	"cancel_schedule":       func() OpBody { return &CancelSchedule{} },
}

// ModelOps are the op names a model may write in its ops block. A tool
// approval is raised by the worker's loop, never by the model's text, so
// that the owner only ever approves a call the loop actually stopped on.
var ModelOps = []string{"remember", "rewrite_about", "add_face", "capture_learning", "propose_tool", "schedule", "cancel_schedule"}

var (
	slugPattern     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`) })
	toolNamePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
)

func invalid(op, format string, args ...any) error {
	return fmt.Errorf("%w %s: %s", ErrInvalidOp, op, fmt.Sprintf(format, args...))
}

// checkText validates a required, size-capped, valid UTF-8 text field.
func checkText(op, field, s string, max int) error {
	switch {
	case strings.TrimSpace(s) == "":
		return invalid(op, "%s is empty", field)
	case len(s) > max:
		return invalid(op, "%s is %d bytes, over the cap of %d", field, len(s), max)
	case !utf8.ValidString(s):
		return invalid(op, "%s is not valid UTF-8", field)
	}
	return nil
}

// Validate implements [OpBody].
func (o Remember) Validate() error {
	if o.Topic != "" && (len(o.Topic) > 40 || !slugPattern().MatchString(o.Topic)) {
		return invalid(o.OpName(), "topic %q must be lower-case letters, digits and dashes, at most 40", o.Topic)
	}
	return checkText(o.OpName(), "text", o.Text, MaxRememberBytes)
}

// Validate implements [OpBody].
func (o RewriteAbout) Validate() error {
	return checkText(o.OpName(), "text", o.Text, MaxAboutBytes)
}

// Validate implements [OpBody]. Whether the panel's font can draw the
// glyphs is the face registry's check, not this one.
func (o AddFace) Validate() error {
	if len(o.Name) > MaxFaceNameLen || !slugPattern().MatchString(o.Name) {
		return invalid(o.OpName(), "name %q must be lower-case letters, digits and dashes, at most %d", o.Name, MaxFaceNameLen)
	}
	if err := checkText(o.OpName(), "glyphs", o.Glyphs, 4*MaxFaceGlyphs); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(o.Glyphs); n > MaxFaceGlyphs {
		return invalid(o.OpName(), "glyphs are %d characters, over the cap of %d", n, MaxFaceGlyphs)
	}
	for _, r := range o.Glyphs {
		if !unicode.IsPrint(r) {
			return invalid(o.OpName(), "glyphs contain the unprintable %U", r)
		}
	}
	return nil
}

// Validate implements [OpBody].
func (o CaptureLearning) Validate() error {
	if len(o.Tags) > MaxLearningTags {
		return invalid(o.OpName(), "%d tags, over the cap of %d", len(o.Tags), MaxLearningTags)
	}
	for _, t := range o.Tags {
		if len(t) > 40 || !slugPattern().MatchString(t) {
			return invalid(o.OpName(), "tag %q must be lower-case letters, digits and dashes, at most 40", t)
		}
	}
	return checkText(o.OpName(), "text", o.Text, MaxLearningBytes)
}

// Validate implements [OpBody].
func (o RequestToolApproval) Validate() error {
	if !toolNamePattern().MatchString(o.Call.Name) {
		return invalid(o.OpName(), "call names no tool (%q)", o.Call.Name)
	}
	if o.Call.ID == "" {
		return invalid(o.OpName(), "call has no id")
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(o.Call.Args), &args); err != nil {
		return invalid(o.OpName(), "call arguments are not a JSON object: %v", err)
	}
	if err := checkText(o.OpName(), "summary", o.Summary, MaxSummaryBytes); err != nil {
		return err
	}
	if len(o.Messages) == 0 || len(o.Messages) > MaxParkedMessages {
		return invalid(o.OpName(), "%d messages; want 1 to %d", len(o.Messages), MaxParkedMessages)
	}
	return nil
}

// Validate implements [OpBody]: the sizes only; core reads the times.
func (o Schedule) Validate() error {
	if err := checkText(o.OpName(), "text", o.Text, MaxScheduleText); err != nil {
		return err
	}
	if err := checkText(o.OpName(), "when", o.When, maxScheduleWhen); err != nil {
		return err
	}
	if len(o.Every) > maxScheduleEvery || !utf8.ValidString(o.Every) {
		return invalid(o.OpName(), "every %q is not a repetition (day, week, or a duration such as 2h)", o.Every)
	}
	return nil
}

// Validate implements [OpBody].
func (o CancelSchedule) Validate() error {
	if o.ID <= 0 {
		return invalid(o.OpName(), "id %d is not a schedule's id", o.ID)
	}
	return nil
}

// Validate implements [OpBody].
func (o ProposeTool) Validate() error {
	if len(o.Name) > 40 || !toolNamePattern().MatchString(o.Name) {
		return invalid(o.OpName(), "name %q must be a Python identifier of at most 40 characters", o.Name)
	}
	if err := checkText(o.OpName(), "code", o.Code, MaxToolSourceSize); err != nil {
		return err
	}
	return checkText(o.OpName(), "test", o.Test, MaxToolSourceSize)
}

// MarshalJSON writes the body's fields with its name under "op".
func (o Op) MarshalJSON() ([]byte, error) {
	if o.Body == nil {
		return nil, errors.New("encode op: no body")
	}
	fields, err := json.Marshal(o.Body)
	if err != nil {
		return nil, fmt.Errorf("encode op %s: %w", o.Body.OpName(), err)
	}
	name, _ := json.Marshal(o.Body.OpName())
	out := []byte(`{"op":` + string(name))
	if inner := bytes.TrimSpace(fields[1 : len(fields)-1]); len(inner) > 0 {
		out = append(append(out, ','), inner...)
	}
	return append(out, '}'), nil
}

// UnmarshalJSON reads an op strictly: the name must be known and every
// other field must belong to that op, with the right type.
func (o *Op) UnmarshalJSON(data []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return fmt.Errorf("op is not a JSON object: %w", err)
	}
	var name string
	if err := json.Unmarshal(fields["op"], &name); err != nil || name == "" {
		return errors.New(`op has no "op" name`)
	}
	mk, ok := opKinds[name]
	if !ok {
		return fmt.Errorf("unknown op %q", name)
	}
	delete(fields, "op")
	rest, _ := json.Marshal(fields)
	body := mk()
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(body); err != nil {
		return fmt.Errorf("op %s: %w", name, err)
	}
	// Store the value, not the pointer, so a type switch sees one shape.
	switch b := body.(type) {
	case *Remember:
		o.Body = *b
	case *RewriteAbout:
		o.Body = *b
	case *AddFace:
		o.Body = *b
	case *CaptureLearning:
		o.Body = *b
	case *RequestToolApproval:
		o.Body = *b
	case *ProposeTool:
		o.Body = *b
	case *Schedule:
		o.Body = *b
	case *CancelSchedule:
		o.Body = *b
	}
	return nil
}
