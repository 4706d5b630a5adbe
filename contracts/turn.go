package contracts

import (
	"strings"
	"time"
)

// Inbound is a message from the owner, as a transport delivers it.
// The envelope's Sender names the transport, so the reply goes back the
// same way.
type Inbound struct {
	// Chat identifies the conversation within the transport (a Telegram chat id).
	Chat string `json:"chat,omitempty"`
	Text string `json:"text"`
	// Ref is the transport's own id of the message (a Telegram update
	// id), when it keeps the message until core has made it durable:
	// core answers with an InboundAck of it, and recognises the message
	// if it is delivered again.
	Ref string `json:"ref,omitempty"`
	// Spoken marks a Text that is the transcript of the owner's voice
	// note: core shows it back in the reply ("🎤 you said: …").
	Spoken bool `json:"spoken,omitempty"`
	// Image is the photo the owner sent; Text is then its placeholder
	// ("[photo: caption]"), which is all the history keeps of it.
	Image *Image `json:"image,omitempty"`
}

// Image is a picture for a vision-capable model: its media type and its
// bytes (base64 in JSON). Its size is bounded by the transport that took
// it (telegram.photo_max_bytes), below the bus's frame.
type Image struct {
	MIME string `json:"mime"`
	Data []byte `json:"data"`
}

// Transcribe asks the broker for the text of one voice note.
type Transcribe struct {
	// ID ties the answer to the request.
	ID string `json:"id"`
	// FileName names the audio for the provider, whose extension tells
	// it the format ("voice.ogg").
	FileName string `json:"file_name"`
	Audio    []byte `json:"audio"`
	// Deadline is when the transport stops waiting; the broker gives up
	// then too.
	Deadline time.Time `json:"deadline"`
}

// Transcript is the broker's answer to a [Transcribe].
type Transcript struct {
	ID   string `json:"id"`
	OK   bool   `json:"ok"`
	Text string `json:"text,omitempty"`
	// Error says why no text came, with each provider's reason.
	Error    string `json:"error,omitempty"`
	Provider string `json:"provider,omitempty"`
}

// InboundAck tells a transport that the message Ref is durable in core.
type InboundAck struct {
	Ref  string `json:"ref"`
	Chat string `json:"chat,omitempty"`
}

// OutboundAck tells core that a transport holds the reply Key durably.
type OutboundAck struct {
	Key string `json:"key"`
}

// Outbound is a reply for the owner.
type Outbound struct {
	Chat string `json:"chat,omitempty"`
	Text string `json:"text"`
	// Turn is the turn that produced the reply, when one did.
	Turn string `json:"turn,omitempty"`
	// Key, when set, names a reply core keeps until the transport it is
	// for confirms holding it (OUTBOUND_ACK), and sends again until then:
	// the transport holds a key once, so a reply sent again is still
	// delivered once. A reply without one (a command's answer, a note) is
	// the transport's as soon as it is routed.
	Key string `json:"key,omitempty"`
	// Degraded marks the "can't think right now" answer of a failed turn.
	Degraded bool `json:"degraded,omitempty"`
	// Refused marks the answer to an owner's command that did not do
	// what it asked (a tool not restored, an unknown command), so that
	// `shelldon tools restore` can exit with a failure.
	Refused bool `json:"refused,omitempty"`
	// File, when set, goes with the text as a file named FileName: the
	// whole of what the text sums up (the list of a long change set),
	// which a transport sends as a document or saves for the owner.
	File     []byte `json:"file,omitempty"`
	FileName string `json:"file_name,omitempty"`
}

// SafeFileName is name with every character but an ASCII letter, digit,
// '-', '_' or '.' made '-': what a transport may name a file by when the
// name came over the bus (an Outbound's FileName, a request's key), with
// no directory and nothing a terminal would act on.
func SafeFileName(name string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x80 && (r == '-' || r == '_' || r == '.' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return r
		}
		return '-'
	}, name)
}

// Role of a chat message in a model conversation.
const (
	ChatSystem    = "system"
	ChatUser      = "user"
	ChatAssistant = "assistant"
	ChatTool      = "tool"
)

// Message is one message of a model conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID ties a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Images go with a user message's Content to a vision-capable
	// provider, as image content parts.
	Images []Image `json:"images,omitempty"`
}

// ToolCall is a model's request to run one tool. Args is the JSON object
// of arguments exactly as the model wrote it.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"args"`
}

// ToolResult is what a tool call produced, fed back to the model.
type ToolResult struct {
	ID      string `json:"id"`
	OK      bool   `json:"ok"`
	Content string `json:"content"`
}

// Tier says whether a tool runs without asking.
type Tier string

// The tiers.
const (
	TierFree  Tier = "free"
	TierRisky Tier = "risky"
)

// ToolDefinition is a tool as the model sees it. ParamsSchema is a JSON
// schema object.
type ToolDefinition struct {
	Name         string         `json:"name"`
	Description  string         `json:"description"`
	ParamsSchema map[string]any `json:"params_schema"`
	Tier         Tier           `json:"tier"`
	// Note is what an asking call's card says of the tool besides its
	// arguments: an MCP tool's server, and the server's own claims about
	// it. The model is not shown it.
	Note string `json:"note,omitempty"`
}

// Job asks the broker for one completion.
type Job struct {
	Messages []Message        `json:"messages"`
	Tools    []ToolDefinition `json:"tools,omitempty"`
	// Deadline is when the worker stops waiting; the broker gives up then too.
	Deadline time.Time `json:"deadline"`
}

// Completion is the broker's answer: final text, or tool calls to run, or
// an error as a value.
type Completion struct {
	OK        bool       `json:"ok"`
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Error says why no completion came, with each provider's reason.
	Error string `json:"error,omitempty"`
	// Provider names the provider that answered.
	Provider string `json:"provider,omitempty"`
	// Tries counts the provider calls made, retries included.
	Tries int `json:"tries,omitempty"`
	// Usage is what the answering call cost, as its provider counted it;
	// zero where the provider does not say.
	Usage Usage `json:"usage,omitzero"`
	// OwnerFix, when no completion came, is what only the owner can
	// change among the reasons, in their words: a model that cannot call
	// tools, a key refused, a model the provider does not know.
	OwnerFix string `json:"owner_fix,omitempty"`
}

// Usage counts the tokens of model calls: the prompts sent and the
// completions received.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens,omitempty"`
	CompletionTokens int `json:"completion_tokens,omitempty"`
}

// Add is the usage of both u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{PromptTokens: u.PromptTokens + v.PromptTokens, CompletionTokens: u.CompletionTokens + v.CompletionTokens}
}

// Total is the prompt and completion tokens together.
func (u Usage) Total() int { return u.PromptTokens + u.CompletionTokens }

// ProviderUsage is what one provider's answers cost in a turn.
type ProviderUsage struct {
	Provider string `json:"provider"`
	Usage    Usage  `json:"usage"`
}

// UsageByProvider is a turn's usage per provider that answered, in the
// order they first answered: a turn may go through several providers of
// the fallback chain.
type UsageByProvider []ProviderUsage

// Add is u with one more answer of provider counted: a provider that
// answered but did not say what it cost is listed with no tokens.
func (u UsageByProvider) Add(provider string, usage Usage) UsageByProvider {
	for i := range u {
		if u[i].Provider == provider {
			out := append(UsageByProvider(nil), u...)
			out[i].Usage = out[i].Usage.Add(usage)
			return out
		}
	}
	return append(append(UsageByProvider(nil), u...), ProviderUsage{Provider: provider, Usage: usage})
}

// Total is the usage of every provider, summed.
func (u UsageByProvider) Total() Usage {
	var sum Usage
	for _, p := range u {
		sum = sum.Add(p.Usage)
	}
	return sum
}

// HistoryEntry is one earlier message of the conversation with the owner.
type HistoryEntry struct {
	Role string    `json:"role"` // ChatUser or ChatAssistant
	Text string    `json:"text"`
	At   time.Time `json:"at"`
}

// TurnInput is what core gives a worker: the owner's text and the recent
// conversation. The worker reads the memory tree itself, read-only.
type TurnInput struct {
	Turn    string         `json:"turn"`
	Text    string         `json:"text"`
	History []HistoryEntry `json:"history,omitempty"`
	// Deadline is the worker's own budget (W); past it the worker reports
	// failure rather than wait.
	Deadline time.Time `json:"deadline"`
	// Resume, when set, continues a conversation that parked on a RISKY
	// call: the worker takes up the loop from there instead of building a
	// new prompt from Text.
	Resume *Resume `json:"resume,omitempty"`
	// Approvals says that core can park a RISKY call for the owner: the
	// worker then offers the RISKY tools, and parks on the first such
	// call instead of refusing it.
	Approvals bool `json:"approvals,omitempty"`
	// Mood is how the pet feels as the turn starts, and why, for the
	// prompt.
	Mood    string `json:"mood,omitempty"`
	MoodWhy string `json:"mood_why,omitempty"`
	// Scheduled marks a turn the pet started itself, on a schedule: Text
	// is what the owner asked for then, not something they just said.
	Scheduled bool `json:"scheduled,omitempty"`
	// SelfCoded are the self-coded tools the turn may offer, each one
	// core found to be what the owner kept. The worker reads no tool
	// store of its own.
	SelfCoded []ToolDefinition `json:"self_coded,omitempty"`
	// ByNameOnly names the SelfCoded tools the model is told of by name
	// alone, so that a pet with many tools does not send every
	// definition with every request; the rest are offered in full. A
	// tool known by name is as callable as the others, and its
	// definition joins the offer once the model calls it.
	ByNameOnly []string `json:"by_name_only,omitempty"`
	// MCP are the tools of the owner's MCP servers the turn may offer,
	// each named mcp_<server>_<tool>, as core listed them. Core runs
	// every call of one (EXEC) and checks it against its own list.
	MCP []ToolDefinition `json:"mcp,omitempty"`
	// MaxModelCalls caps the model calls of the turn (turn.max_model_calls);
	// under 1 it counts as 1, since the model is always asked once.
	MaxModelCalls int `json:"max_model_calls,omitempty"`
	// Images are the photos the owner's Text stands for, for a
	// vision-capable model; the history holds only their placeholders.
	Images []Image `json:"images,omitempty"`
}

// DeniedByOwner is the answer to a parked call the owner turned down.
const DeniedByOwner = "denied by owner"

// Resume is a parked conversation, taken up after the owner decided: the
// messages as parked (ending with the assistant message whose last call
// was parked) and the answer to that call — what core's execution of the
// owner's approved call produced, or "denied by owner".
type Resume struct {
	Messages []Message `json:"messages"`
	Answer   Message   `json:"answer"`
}

// Result is a worker's parsed outcome of its turn.
type Result struct {
	OK bool `json:"ok"`
	// Payload is the reply for the owner, control blocks removed.
	Payload string `json:"payload,omitempty"`
	Ops     []Op   `json:"ops,omitempty"`
	// Thought is the caption for the panel (the THOUGHT: line).
	Thought string `json:"thought,omitempty"`
	// Face is the reaction face, already checked against the registry.
	Face string `json:"face,omitempty"`
	// Error says why the turn failed, when it did.
	Error string `json:"error,omitempty"`
	// OwnerFix is the model's failure the owner must fix, when that is
	// why the turn failed (Completion.OwnerFix): core tells them.
	OwnerFix string `json:"owner_fix,omitempty"`
	// Notes are things the parser wants core to log: a rejected ops block,
	// an unknown face.
	Notes []string `json:"notes,omitempty"`
	// ModelTime is how long the worker waited on the broker in total.
	ModelTime time.Duration `json:"model_time,omitempty"`
	// PeakRSS is the worker's resident-memory high-water mark in bytes,
	// read just before it reported; 0 where the kernel does not say.
	PeakRSS int64 `json:"peak_rss,omitempty"`
	// Stop says how the agent loop ended, one of the Stop… values; empty
	// when the turn failed before or inside the loop.
	Stop string `json:"stop,omitempty"`
	// Usage is what the turn's model calls cost, per provider that
	// answered them; its Total is the turn's.
	Usage UsageByProvider `json:"usage,omitempty"`
}

// How an agent loop ends, as [Result.Stop] says. Only an answer or a
// parked call is the model's own ending; the others are the loop's
// bounds cutting it short, and the reply then says so.
const (
	StopAnswer = "answer" // the model answered with text
	StopParked = "parked" // a RISKY call waits for the owner
	// StopModelCallCap: the turn used its model calls without an answer.
	StopModelCallCap = "model-call-cap"
	// StopRepeatedFailure: the same call failed with the same error twice.
	StopRepeatedFailure = "repeated-failure"
	// StopDeadline: too little of the worker's budget was left to ask
	// the model again.
	StopDeadline = "deadline"
)

// Snapshot is the moment core wants shown, for any panel: the face, the
// status strip's word for it and the caption, all decided together by
// panel/moment, so that they tell one story.
type Snapshot struct {
	Face string `json:"face"`
	// Glyphs is the face's drawing, from the registry, so a panel needs
	// no registry of its own.
	Glyphs string `json:"glyphs"`
	// Word is the strip's word for the face: its name, the mood's when
	// idle.
	Word    string `json:"word,omitempty"`
	Caption string `json:"caption,omitempty"`
	// HoldUntil is the end of a reaction's dwell; ambient faces wait for it.
	HoldUntil time.Time `json:"hold_until,omitempty"`
	// Ambient marks an at-rest face (the mood's drift), which yields to a
	// reaction still held; a turn's faces and reactions show at once.
	Ambient bool `json:"ambient,omitempty"`
	// Status is what the panel's status strip shows.
	Status PanelStatus `json:"status"`
}

// PanelStatus is the pet's vital signs, for the panel's status strip.
// How it feels is not among them: the strip's word comes with the face
// ([Snapshot.Word]).
type PanelStatus struct {
	Name string `json:"name"`
	// Since is when core started; the panel counts the uptime from it.
	Since      time.Time `json:"since"`
	TurnsToday int       `json:"turns_today"`
	// Memory is what the pet's processes use, in bytes; 0 when unknown.
	Memory int64 `json:"memory,omitempty"`
}

// ExecRequest asks core to run one tool call in the sandbox. Core checks
// the call itself, from Name and Args, and runs only what its own check
// allows.
type ExecRequest struct {
	Call ToolCall `json:"call"`
	// Tests asks instead for the workspace's tests to be run (the
	// done-check after a turn changed files); Call is then empty.
	Tests bool `json:"tests,omitempty"`
}

// ExecResult answers an ExecRequest: the tool's answer for the model.
type ExecResult struct {
	CallID  string `json:"call_id"`
	OK      bool   `json:"ok"`
	Content string `json:"content"`
}

// ApprovalRequest shows the owner a parked RISKY call, exactly as core
// will run it, with buttons: the transport renders it and answers with a
// Decision.
type ApprovalRequest struct {
	Turn string `json:"turn"` // the parked turn: the key of the decision
	Chat string `json:"chat,omitempty"`
	Tool string `json:"tool"`
	// Note is the policy's one-line risk note.
	Note string `json:"note"`
	// Detail is the exact command, path and content, URL, or git argv.
	Detail string `json:"detail"`
	// Expires is when the request stops being honoured.
	Expires time.Time `json:"expires"`
	// Always, when set, is a rule the owner may grant with this call, in
	// the words they read before granting it ("run_shell of exactly
	// `python3 build.py`"): a third answer beside approve and deny.
	// Empty when no narrow rule can be stated for the call.
	Always string `json:"always,omitempty"`
	// Digest is the request's digest of what would run, as shown: a
	// decision that carries it back ([Decision.Digest]) answers this
	// version and no other.
	Digest string `json:"digest,omitempty"`
	// Approving says what an approval does, in the owner's words
	// ("running run_shell", "keeping new tool greet"): a transport
	// confirms the approval with it.
	Approving string `json:"approving,omitempty"`
}

// Decision is the owner's answer to an ApprovalRequest. Anything but an
// explicit approval counts as a denial.
type Decision struct {
	Turn    string `json:"turn"`
	Approve bool   `json:"approve"`
	Chat    string `json:"chat,omitempty"`
	// Always, with Approve, approves the call and grants the rule the
	// request offered ([ApprovalRequest.Always]); without Approve, or on
	// a request that offered none, it is a plain approval or denial.
	Always bool `json:"always,omitempty"`
	// Digest, when set, is the digest of the request as the owner was
	// shown it ([ApprovalRequest.Digest]): core takes the decision only
	// if the request still has it, and otherwise shows the request as it
	// is now. A transport that shows the request where its answer is
	// given (a button on the message) may leave it empty.
	Digest string `json:"digest,omitempty"`
}

// Outcomes of an approval request, as [ApprovalClosed] reports them.
const (
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	// ApprovalExpired: nobody decided before the request's expiry.
	ApprovalExpired = "expired"
	// ApprovalGone: a decision came for a request core no longer holds
	// (decided elsewhere, or lost with a state that was reset).
	ApprovalGone = "gone"
	// ApprovalReplaced: a newer request of the same tool took its place.
	ApprovalReplaced = "replaced"
)

// ApprovalClosed says that the request of Turn is settled.
type ApprovalClosed struct {
	Turn    string    `json:"turn"`
	Outcome string    `json:"outcome"`
	At      time.Time `json:"at"`
}

// Step is a worker's [KindStep]: the call it is about to run. Core
// checks the call itself and words the step from its own check, never
// from the worker's or the model's words.
type Step struct {
	Call ToolCall `json:"call"`
}

// MaxProgressLine bounds [Progress.Line], in characters (runes).
const MaxProgressLine = 120

// Progress is what a running turn is doing, for the transport the turn
// came from: core sends one when a tool step starts ("reading notes.md…",
// "running `pytest -q`…"), one when a command it ran is done, with its
// outcome ("running `pytest -q`… 12 passed", "… exit 1"), and, once the
// turn's reply has been sent, one with Settled set.
//
// A transport shows the latest Line of a turn in place of the one before
// (a status message, a status line) — only the latest matters, so a
// transport may skip lines that come faster than it can show them — and
// takes it away, or leaves Line as a settled record, when Settled comes.
// Settled always follows the turn's reply (and any approval request it
// makes) on the bus, so a transport never needs to hold a reply back for
// it. A turn that runs no tool sends no Progress at all.
//
// Line is core's wording of the parsed call, already passed through
// daemon/visible (one line, no control or invisible characters) and at
// most MaxProgressLine runes; a transport still escapes it for its own
// markup.
type Progress struct {
	Chat string `json:"chat,omitempty"`
	Turn string `json:"turn"`
	Line string `json:"line"`
	// Steps counts the tool steps the turn has run so far.
	Steps   int  `json:"steps"`
	Settled bool `json:"settled,omitempty"`
}

// Activity says whether a turn for Chat is running.
type Activity struct {
	Chat string `json:"chat,omitempty"`
	Turn string `json:"turn"`
	Busy bool   `json:"busy"`
}

// MaxStreamBytes bounds [Stream.Text]: the broker sends no more of a
// streamed answer's text than this as it grows (the whole answer still
// comes with the completion). A draft shows at most MaxDraftRunes
// characters, which this holds with room for the lines it hides.
const MaxStreamBytes = 16 << 10

// Stream is the broker's [KindStream]: the text of the answer a job's
// model is writing, so far, without its reasoning or the tool calls a
// model writes as text; at most MaxStreamBytes. The broker sends one at
// most every few hundred milliseconds, and only when the text grew (or,
// on the chain's next try, changed); none after the job's completion.
type Stream struct {
	Text string `json:"text"`
}

// MaxDraftRunes bounds [Draft.Text], in characters (runes): about what a
// Telegram message holds. Core cuts a longer draft there.
const MaxDraftRunes = 4000

// Draft is what the owner may see of the reply a turn's model is writing,
// as it grows: a worker's [KindDraft] to core (Chat empty), and core's
// [KindReplyDraft] to the transport the turn came from, while the turn
// runs. It is the reply as the worker's reply format would show it so
// far (no THOUGHT: or FACE: line, no ops block, no reasoning); the turn's
// reply replaces it, and no draft is kept or reaches the history. A
// transport shows the latest in place of the one before, and may skip
// drafts that come faster than it can show them.
type Draft struct {
	Chat string `json:"chat,omitempty"`
	Turn string `json:"turn"`
	Text string `json:"text"`
}
