package contracts

// AuditEvent is the log attribute that names what happened, for the
// audit trail: under systemd it becomes the journal field SHELLDON_EVENT,
// beside SHELLDON_TURN, so that `journalctl SHELLDON_TURN=<id>` reads as
// the turn's story and `journalctl SHELLDON_EVENT=sandbox-run` lists
// every command the pet ran.
const AuditEvent = "event"

// The audit events.
const (
	EventTurnStart         = "turn-start"
	EventTurnEnd           = "turn-end"
	EventDegrade           = "degrade"
	EventToolCall          = "tool-call"
	EventApprovalRequested = "approval-requested"
	EventApprovalDecided   = "approval-decided"
	EventSandboxRun        = "sandbox-run"
	EventPromotion         = "promotion"
	EventQuarantine        = "quarantine"
	// EventSandboxEgress: a networked run's connection out, allowed or
	// refused (to, decision, why).
	EventSandboxEgress = "sandbox-egress"
	// EventHTTPGet: an http_get fetched, or refused by the address rules
	// before the owner was asked or when core dialled (url, decision,
	// why).
	EventHTTPGet = "http-get"
	// EventMood: the mood changed (mood, why).
	EventMood = "mood"
	// EventSchedule: a scheduled turn was set, cancelled, started,
	// coalesced, or skipped by the budget (decision, schedule, why).
	EventSchedule = "schedule"
	// EventTokenCap: the daily token cap held a message of the owner's
	// back, to ask them first (today, cap, request).
	EventTokenCap = "token-cap"
	// EventRule: a rule the owner may grant was granted, let a call
	// through, was revoked or expired (decision, rule, words, turn).
	EventRule = "rule"
	// EventPairing: a pairing code made a Telegram user the owner, or
	// was spent by wrong guesses (user_id).
	EventPairing = "pairing"
)
