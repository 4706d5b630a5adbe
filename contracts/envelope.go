package contracts

import (
	"encoding/json"
	"fmt"
)

// Role names what an actor is. Core checks the role a connection claims
// against the peer's credentials before it routes anything to it.
type Role string

// The roles of the actors on the bus.
const (
	RoleCore      Role = "core"
	RoleBroker    Role = "broker"
	RoleWorker    Role = "worker"
	RoleTransport Role = "transport"
	RolePanel     Role = "panel"
)

// Valid reports whether r is one of the known roles.
func (r Role) Valid() bool {
	switch r {
	case RoleCore, RoleBroker, RoleWorker, RoleTransport, RolePanel:
		return true
	}
	return false
}

// Kind says what an envelope carries, and so where the hub sends it.
type Kind string

// The kinds of envelope.
const (
	// KindHello is the first frame on every connection: who is calling.
	KindHello Kind = "HELLO"
	// KindWelcome is core's answer to a hello: accepted, or refused with a reason.
	KindWelcome Kind = "WELCOME"
	// KindInbound is a message from the owner, delivered by a transport.
	KindInbound Kind = "INBOUND_MSG"
	// KindOutbound is a reply for the owner, sent by core to the transports.
	KindOutbound Kind = "OUTBOUND_MSG"
	// KindTurnInput is what core gives a worker to work on.
	KindTurnInput Kind = "TURN_INPUT"
	// KindJob is a completion request from a worker to the broker.
	KindJob Kind = "JOB"
	// KindCompletion is the broker's answer to a job.
	KindCompletion Kind = "COMPLETION"
	// KindResult is a worker's parsed outcome of its turn.
	KindResult Kind = "RESULT"
	// KindSnapshot is the face, caption and status for whichever panel listens.
	KindSnapshot Kind = "STATE_SNAPSHOT"
	// KindExec asks core to run a FREE call that runs a program (a
	// read-only shell command) in the sandbox, for the worker's turn.
	KindExec Kind = "EXEC"
	// KindExecResult is core's answer to an exec request.
	KindExecResult Kind = "EXEC_RESULT"
	// KindApprovalRequest asks the owner, through a transport, to decide
	// on a parked RISKY call.
	KindApprovalRequest Kind = "APPROVAL_REQUEST"
	// KindDecision is the owner's answer, from a transport.
	KindDecision Kind = "DECISION"
	// KindApprovalClosed tells the transports that a request is settled —
	// decided on any transport, or expired — so they take its buttons away.
	KindApprovalClosed Kind = "APPROVAL_CLOSED"
	// KindActivity tells a transport that a turn for one of its chats
	// started or ended, so it can show that the pet is busy.
	KindActivity Kind = "ACTIVITY"
	// KindInboundAck tells a transport that core has made one of its
	// messages durable (see [Inbound.Ref]): it is core's to answer now,
	// across any restart, and the transport may forget it.
	KindInboundAck Kind = "INBOUND_ACK"
	// KindOutboundAck tells core that a transport holds one of its keyed
	// replies (see [Outbound.Key]) durably, to deliver across any
	// restart: the messages the reply answers are answered now.
	KindOutboundAck Kind = "OUTBOUND_ACK"
	// KindTranscribe asks the broker, for a transport, to turn the
	// owner's voice note into text.
	KindTranscribe Kind = "TRANSCRIBE"
	// KindTranscript is the broker's answer to a transcribe request,
	// addressed (Envelope.To) to the transport that asked.
	KindTranscript Kind = "TRANSCRIPT"
	// KindStep is a worker's word that it is about to run one of its
	// turn's tool calls itself (one that needs no sandbox), so that core
	// can tell the owner what the turn is doing. Calls core runs for the
	// worker (EXEC) need no step: core sees them anyway.
	KindStep Kind = "STEP"
	// KindProgress tells the transport a turn came from what the turn is
	// doing, step by step, and when it is over (see [Progress]).
	KindProgress Kind = "PROGRESS"
	// KindJobCancel tells the brokers that the worker of the envelope's
	// turn is gone: a job of that turn still running is cancelled, its
	// model call with it, since nobody is left to read the answer.
	KindJobCancel Kind = "JOB_CANCEL"
	// KindStream is the broker's word, while a job's answer streams, of
	// its text so far (see [Stream]), to the worker that asked.
	KindStream Kind = "STREAM"
	// KindDraft is a worker's word to core of what the owner may see of
	// the reply its model is writing (see [Draft]).
	KindDraft Kind = "DRAFT"
	// KindReplyDraft shows the transport a turn came from the draft of
	// the turn's reply, while the turn runs (see [Draft]).
	KindReplyDraft Kind = "REPLY_DRAFT"
)

// Delivery says how many connections of the destination role get an envelope.
type Delivery int

const (
	// ToOne sends to the newest connection of the role (a job must run once).
	ToOne Delivery = iota
	// ToAll sends to every connection of the role (every panel draws the face).
	ToAll
	// ToTurn sends to the worker that proved the envelope's turn id.
	ToTurn
)

// Route is where the hub sends one kind.
type Route struct {
	To       Role
	Delivery Delivery
}

// Routes is the one routing table of the bus: every kind that may cross it,
// and where it goes. A kind missing here is refused by the hub. Hello and
// welcome are not routed; they are the handshake.
var Routes = map[Kind]Route{
	KindInbound:         {To: RoleCore, Delivery: ToOne},
	KindResult:          {To: RoleCore, Delivery: ToOne},
	KindOutbound:        {To: RoleTransport, Delivery: ToAll},
	KindSnapshot:        {To: RolePanel, Delivery: ToAll},
	KindTurnInput:       {To: RoleWorker, Delivery: ToTurn},
	KindCompletion:      {To: RoleWorker, Delivery: ToTurn},
	KindJob:             {To: RoleBroker, Delivery: ToOne},
	KindExec:            {To: RoleCore, Delivery: ToOne},
	KindExecResult:      {To: RoleWorker, Delivery: ToTurn},
	KindApprovalRequest: {To: RoleTransport, Delivery: ToAll},
	KindDecision:        {To: RoleCore, Delivery: ToOne},
	KindApprovalClosed:  {To: RoleTransport, Delivery: ToAll},
	KindActivity:        {To: RoleTransport, Delivery: ToAll},
	KindInboundAck:      {To: RoleTransport, Delivery: ToAll},
	KindOutboundAck:     {To: RoleCore, Delivery: ToOne},
	KindTranscribe:      {To: RoleBroker, Delivery: ToOne},
	KindTranscript:      {To: RoleTransport, Delivery: ToAll},
	KindStep:            {To: RoleCore, Delivery: ToOne},
	KindProgress:        {To: RoleTransport, Delivery: ToAll},
	KindJobCancel:       {To: RoleBroker, Delivery: ToAll},
	KindStream:          {To: RoleWorker, Delivery: ToTurn},
	KindDraft:           {To: RoleCore, Delivery: ToOne},
	KindReplyDraft:      {To: RoleTransport, Delivery: ToAll},
}

// Senders lists which roles may send each kind; the hub drops (and logs) an
// envelope whose sender's role is not listed, so a worker cannot forge a
// reply to the owner and a transport cannot forge a turn result.
var Senders = map[Kind][]Role{
	KindInbound:         {RoleTransport},
	KindResult:          {RoleWorker},
	KindOutbound:        {RoleCore},
	KindSnapshot:        {RoleCore},
	KindTurnInput:       {RoleCore},
	KindCompletion:      {RoleBroker},
	KindJob:             {RoleWorker},
	KindExec:            {RoleWorker},
	KindExecResult:      {RoleCore},
	KindApprovalRequest: {RoleCore},
	KindDecision:        {RoleTransport},
	KindApprovalClosed:  {RoleCore},
	KindActivity:        {RoleCore},
	KindInboundAck:      {RoleCore},
	KindOutboundAck:     {RoleTransport},
	KindTranscribe:      {RoleTransport},
	KindTranscript:      {RoleBroker},
	KindStep:            {RoleWorker},
	KindProgress:        {RoleCore},
	KindJobCancel:       {RoleCore},
	KindStream:          {RoleBroker},
	KindDraft:           {RoleWorker},
	KindReplyDraft:      {RoleCore},
}

// MaySend reports whether role may send kind.
func MaySend(role Role, kind Kind) bool {
	for _, r := range Senders[kind] {
		if r == role {
			return true
		}
	}
	return false
}

// Envelope is one frame on the bus. Body holds the kind's body as JSON;
// Decode and NewEnvelope convert it.
type Envelope struct {
	Kind Kind   `json:"kind"`
	From Role   `json:"from,omitempty"`
	Turn string `json:"turn,omitempty"`
	// To names one connection of the destination role (a transport's name),
	// when the sender wants only that one; empty means the route decides.
	To string `json:"to,omitempty"`
	// Sender is the name the sending connection joined with. The hub sets
	// it (with From), so a receiver can trust it.
	Sender string          `json:"sender,omitempty"`
	Body   json.RawMessage `json:"body,omitempty"`
}

// NewEnvelope builds an envelope of kind around body.
func NewEnvelope(kind Kind, turn string, body any) (Envelope, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return Envelope{}, fmt.Errorf("encode %s body: %w", kind, err)
	}
	return Envelope{Kind: kind, Turn: turn, Body: raw}, nil
}

// Decode unmarshals the envelope's body into v.
func (e Envelope) Decode(v any) error {
	if len(e.Body) == 0 {
		return fmt.Errorf("decode %s: empty body", e.Kind)
	}
	if err := json.Unmarshal(e.Body, v); err != nil {
		return fmt.Errorf("decode %s body: %w", e.Kind, err)
	}
	return nil
}

// MaxHelloFrame bounds a hello's frame, and every frame of a connection
// that has not yet said who it is: core reads no more of a caller it
// does not know.
const MaxHelloFrame = 4 << 10

// Hello opens every connection; its frame is at most [MaxHelloFrame].
type Hello struct {
	Role Role `json:"role"`
	// Name tells connections of one role apart ("telegram", "cli").
	Name string `json:"name,omitempty"`
	// Turn is the turn a worker claims to serve; core checks it.
	Turn string `json:"turn,omitempty"`
	// Note is a line for core's log, such as the broker's provider chain.
	Note string `json:"note,omitempty"`
}

// Welcome answers a hello.
type Welcome struct {
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
}
