package approval

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/state"
	"shelldon/policy"
	"shelldon/sandbox"
)

// Kind says what a request asks.
type Kind string

// The kinds of request, as the state store keeps them (a row's kind
// column: these names are the database's format).
const (
	// Call is a RISKY tool call of a parked turn; deciding it resumes the
	// turn.
	Call Kind = "call"
	// Promotion asks to keep a self-coded tool that passed its gate.
	Promotion Kind = "promotion"
	// ChangeSet asks to apply what an approved command changed, when the
	// change set needs the owner's own look.
	ChangeSet Kind = "changeset"
	// TokenCap asks to start a turn of the owner's messages although
	// today's turns used the daily token cap.
	TokenCap Kind = "token-cap"
	// Memory asks to keep what a marked turn would keep of the owner
	// (policy/mark.go).
	Memory Kind = "memory"
)

// needsSlot reports whether carrying out a decision of kind k needs the
// turn slot: a call resumes its turn, a change set writes the workspace,
// which an approved command of a turn may be changing, and a message
// past the token cap is a turn of its own.
func (k Kind) needsSlot() bool { return k == Call || k == ChangeSet || k == TokenCap }

// Audience is one place a request is shown: a transport and a chat in it.
type Audience = state.Audience

// Shown is exactly what the owner is shown of a request, already made
// visible (see [Render]).
type Shown struct {
	// Title says what is asked: the tool, "new tool greet".
	Title string
	// Note is the one-line risk note.
	Note string
	// Detail is exactly what will run.
	Detail string
}

// Request is one request parked for the owner.
type Request struct {
	// Key is what a decision names: the parked turn's id for a call, a
	// fresh id (see [NewKey]) for anything else.
	Key   string
	Kind  Kind
	Shown Shown
	// Digest is the hash of exactly what will execute.
	Digest string
	// Origin is where the request came from: the owner is asked there,
	// and a resumed turn answers there.
	Origin Audience
	// Audiences are every place the request was shown.
	Audiences []Audience
	Created   time.Time
	Expires   time.Time

	// One of these, by Kind.
	Call      *CallPayload
	Promotion *PromotionPayload
	ChangeSet *ChangeSetPayload
	TokenCap  *TokenCapPayload
	Memory    *MemoryPayload
}

// CallPayload is a parked turn's call and its conversation.
type CallPayload struct {
	Call contracts.ToolCall
	// Messages is the conversation as parked, ending with the assistant
	// message that asked for Call.
	Messages []contracts.Message
	// Outside marks a call asked after the conversation read text from
	// outside (see [MarkOutside]): where it came from, "" when it read
	// none. Core sets it from what it carried out itself, never from the
	// worker's words; the card says so, the digest covers it, and no
	// granted rule lets the call through.
	Outside string
	// Offer is the rule the owner may grant with this call ("Always for
	// …"), as policy states it; nil when none can be, and always for a
	// call marked Outside.
	Offer *policy.Rule
	// Rule is the granted rule that let the call through without asking,
	// nil when the owner decided it; Runs counts the calls rules let
	// through in a row in its conversation, this one included.
	Rule *state.Rule
	Runs int
}

// callMarks are what core knows of a call beyond the call and its
// conversation, kept in the row's payload.
type callMarks struct {
	Outside string       `json:"outside,omitempty"`
	Offer   *policy.Rule `json:"offer,omitempty"`
}

// PromotionPayload is a self-coded tool as it passed its gate: exactly
// the bytes that were tested and shown.
type PromotionPayload struct {
	Stem        string         `json:"stem"`
	Description string         `json:"description"`
	Schema      map[string]any `json:"schema"`
	Module      string         `json:"module"`
	Test        string         `json:"test"`
	// Unverifiable lists the imports the gate could not verify.
	Unverifiable []string `json:"unverifiable,omitempty"`
	// Gate is the end of the gate's report.
	Gate string `json:"gate"`
	// Live is the digest of the live version the gate held the update to,
	// "" for a new tool: keeping it after the live version changed would
	// skip the check that the live tests stay.
	Live string `json:"live,omitempty"`
	// Outside is the mark of the turn that proposed it (see
	// [MarkOutside]), "" for none.
	Outside string `json:"outside,omitempty"`
}

// ChangeSetPayload is an approved command's change set, kept aside until
// the owner decides.
type ChangeSetPayload struct {
	// Dir names the kept upper layer in core's own directory of kept
	// change sets.
	Dir string `json:"dir"`
	// Tool and Turn say what made it: the approved call and its turn.
	Tool string `json:"tool"`
	Turn string `json:"turn"`
	// Changes is the list as scanned, and Risks why it waits.
	Changes []sandbox.Change `json:"changes"`
	Risks   []string         `json:"risks"`
}

// TokenCapPayload is the owner's message that waits because today's
// turns used the daily token cap, with the figures it was asked with.
type TokenCapPayload struct {
	// Text is what the turn will think about: the message, or the
	// messages of a catch-up joined by newlines.
	Text string `json:"text"`
	// Today is the tokens today's turns had used, and Cap the cap.
	Today int `json:"today"`
	Cap   int `json:"cap"`
	// Outside is the mark of a text that joined the messages (a due
	// schedule's, set by a marked turn), "" for none: the turn starts
	// marked.
	Outside string `json:"outside,omitempty"`
}

// MemoryPayload is what a turn marked by outside text would keep of its
// owner, or change of what they set: its ops as it proposed them, each
// valid, applied as they are when the owner approves.
type MemoryPayload struct {
	Ops []contracts.Op `json:"ops"`
	// Outside is the turn's mark; Turn the turn, whose learnings they
	// would be.
	Outside string `json:"outside"`
	Turn    string `json:"turn"`
}

// ErrChanged is wrapped by [Request.Verify] when what would run now is
// not what the owner approved.
var ErrChanged = errors.New("what would run is not what the owner approved")

// Verify checks that digest, the digest of what is about to be carried
// out, is the digest the owner approved.
func (r Request) Verify(digest string) error {
	if r.Digest == "" || digest != r.Digest {
		return fmt.Errorf("request %s: %w", r.Key, ErrChanged)
	}
	return nil
}

// ask is the request as a transport shows it, with its buttons.
func (r Request) ask(to Audience) contracts.ApprovalRequest {
	return contracts.ApprovalRequest{Turn: r.Key, Chat: to.Chat, Tool: r.Shown.Title, Note: r.Shown.Note,
		Detail: r.Shown.Detail, Expires: r.Expires, Always: r.offer().Words, Digest: r.Digest, Approving: r.approving()}
}

// approving says what approving the request does, in the owner's words,
// for the transport to confirm the approval with.
func (r Request) approving() string {
	switch r.Kind {
	case Promotion:
		return "keeping " + r.Shown.Title
	case ChangeSet:
		return "applying " + r.Shown.Title
	case TokenCap:
		return "granting " + r.Shown.Title
	case Memory:
		return "making the changes to " + r.Shown.Title
	default:
		return "running " + r.Shown.Title
	}
}

// offer is the rule an "always" decision grants: the call's offer, and
// none for a call asked after reading outside content, whatever its row
// says.
func (r Request) offer() policy.Rule {
	if r.Kind != Call || r.Call == nil || r.Call.Offer == nil || !policy.RulesApply(r.Call.Outside) {
		return policy.Rule{}
	}
	return *r.Call.Offer
}

// shownTo reports whether the request was shown at a.
func (r Request) shownTo(a Audience) bool {
	for _, b := range r.Audiences {
		if b == a {
			return true
		}
	}
	return false
}

// NewKey is a fresh key for a request that is not a parked turn's call.
func NewKey() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// row is the request as the state store keeps it.
func (r Request) row() (state.PendingApproval, error) {
	p := state.PendingApproval{
		Turn: r.Key, Kind: string(r.Kind), Title: r.Shown.Title, Summary: r.Shown.Note, Detail: r.Shown.Detail,
		Digest: r.Digest, Transport: r.Origin.Transport, Chat: r.Origin.Chat, Shown: r.Audiences,
		Created: r.Created, Expires: r.Expires,
	}
	var payload any
	switch r.Kind {
	case Call:
		if r.Call == nil {
			return p, fmt.Errorf("request %s: a call without its call", r.Key)
		}
		if err := (contracts.RequestToolApproval{Call: r.Call.Call, Summary: r.Shown.Note, Messages: r.Call.Messages}).Validate(); err != nil {
			return p, fmt.Errorf("request %s: %w", r.Key, err)
		}
		p.Call, p.Messages = r.Call.Call, r.Call.Messages
		payload = callMarks{Outside: r.Call.Outside, Offer: r.Call.Offer}
	case Promotion:
		payload = r.Promotion
	case ChangeSet:
		payload = r.ChangeSet
	case TokenCap:
		payload = r.TokenCap
	case Memory:
		payload = r.Memory
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return p, fmt.Errorf("request %s: encode its %s: %w", r.Key, r.Kind, err)
	}
	p.Payload = raw
	return p, nil
}

// fromRow reads a request the state store keeps.
func fromRow(p state.PendingApproval) (Request, error) {
	r := Request{
		Key: p.Turn, Kind: Kind(p.Kind), Shown: Shown{Title: p.Title, Note: p.Summary, Detail: p.Detail},
		Digest: p.Digest, Origin: Audience{Transport: p.Transport, Chat: p.Chat}, Audiences: p.Shown,
		Created: p.Created, Expires: p.Expires,
	}
	var err error
	if r.Kind != Call && (p.Call != (contracts.ToolCall{}) || len(p.Messages) > 0) {
		err = fmt.Errorf("a %s carries no call", r.Kind)
	}
	switch {
	case err != nil:
	case r.Kind == Call:
		r.Call = &CallPayload{Call: p.Call, Messages: p.Messages}
		err = contracts.RequestToolApproval{Call: p.Call, Summary: p.Summary, Messages: p.Messages}.Validate()
		if err == nil && len(p.Payload) > 0 { // none in a row kept before calls had marks
			var marks callMarks
			err = json.Unmarshal(p.Payload, &marks)
			r.Call.Outside, r.Call.Offer = marks.Outside, marks.Offer
		}
	case r.Kind == Promotion:
		r.Promotion = &PromotionPayload{}
		err = json.Unmarshal(p.Payload, r.Promotion)
	case r.Kind == ChangeSet:
		r.ChangeSet = &ChangeSetPayload{}
		err = json.Unmarshal(p.Payload, r.ChangeSet)
	case r.Kind == TokenCap:
		r.TokenCap = &TokenCapPayload{}
		err = json.Unmarshal(p.Payload, r.TokenCap)
	case r.Kind == Memory:
		r.Memory = &MemoryPayload{}
		err = json.Unmarshal(p.Payload, r.Memory)
	default:
		err = fmt.Errorf("unknown kind %q", r.Kind)
	}
	if err != nil {
		return r, fmt.Errorf("request %s: %w: %w", r.Key, state.ErrCorruptApproval, err)
	}
	return r, nil
}
