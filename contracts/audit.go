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
	// EventMood: the mood changed (mood, why).
	EventMood = "mood"
	// EventSchedule: a scheduled turn was set, cancelled, started,
	// coalesced, or skipped by the budget (decision, schedule, why).
	EventSchedule = "schedule"
	// EventRule: a rule the owner may grant was granted, let a call
	// through, was revoked or expired (decision, rule, words, turn).
	EventRule = "rule"
)
