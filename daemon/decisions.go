package daemon

import (
	"context"
	"encoding/json"
	"errors"

	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/mood"
	"shelldon/daemon/turns"
	"shelldon/policy"
)

// handleDecision hands the owner's answer to the approval authority,
// which says what it comes to, and carries that out. A decision comes
// before the arbiter: one that needs the turn slot while a turn runs is
// held by the authority and comes back when the turn ends.
func (c *Core) handleDecision(ctx context.Context, env contracts.Envelope) {
	d, err := readDecision(env)
	if err != nil {
		c.log.Warn("dropped an unreadable decision", "from", env.Sender, "err", err)
		return
	}
	out := c.auth.Decide(ctx, d, approval.Audience{Transport: env.Sender, Chat: d.Chat}, c.turns.Claim)
	if !c.auth.CarryOut(ctx, out) && out.Slot {
		c.driver.Release(ctx)
	}
}

// readDecision reads a decision leniently: it needs the turn, and
// anything but an explicit "approve": true — a missing, misspelt or
// mistyped answer — counts as a denial.
func readDecision(env contracts.Envelope) (contracts.Decision, error) {
	var raw struct {
		Turn    string          `json:"turn"`
		Approve json.RawMessage `json:"approve"`
		Chat    string          `json:"chat"`
		Always  json.RawMessage `json:"always"`
		Digest  string          `json:"digest"`
	}
	if err := json.Unmarshal(env.Body, &raw); err != nil {
		return contracts.Decision{}, err
	}
	if raw.Turn == "" {
		return contracts.Decision{}, errors.New("a decision without a turn")
	}
	approve := string(raw.Approve) == "true"
	return contracts.Decision{Turn: raw.Turn, Chat: raw.Chat, Approve: approve, Always: approve && string(raw.Always) == "true", Digest: raw.Digest}, nil
}

// decisionHost is what only core can do for a decision the authority
// carries out.
type decisionHost struct{ c *Core }

func (h decisionHost) Feel(e mood.Event)                  { h.c.brain.feel(e) }
func (h decisionHost) Go(f func())                        { h.c.offLoop.Go(f) }
func (h decisionHost) OnLoop(f func(ctx context.Context)) { h.c.onLoop(f) }
func (h decisionHost) Release(ctx context.Context)        { h.c.driver.Release(ctx) }
func (h decisionHost) PastCap(ctx context.Context, out approval.Outcome) bool {
	return h.c.carryOutPastCap(ctx, out)
}

func (h decisionHost) Progress(r approval.Request, doing string, done bool) {
	h.c.progress.Approved(turns.Origin(r.Origin), r.Key, doing, done)
}

func (h decisionHost) Changes(to approval.Audience, what string, report *approval.Report) {
	h.c.say.changes(to, what, report)
}

func (h decisionHost) KeepTool(ctx context.Context, r approval.Request, approve bool, from approval.Audience) string {
	return h.c.keeper.keep(ctx, r, approve, from)
}

func (h decisionHost) KeepMemory(ctx context.Context, from approval.Audience, r approval.Request, approve bool) {
	h.c.keepMarked(ctx, from, r, approve)
}

// Resume starts the turn that takes a parked call's conversation up with
// the answer to its call; the owner's own decision starts the count of
// calls let through by rules again.
func (h decisionHost) Resume(ctx context.Context, r approval.Request, answer contracts.Message, preview, outside string) {
	h.c.driver.Start(ctx, turns.Admission{
		Origin:   turns.Origin(r.Origin),
		Resume:   &contracts.Resume{Messages: r.Call.Messages, Answer: answer},
		Preview:  preview,
		Outside:  outside,
		RuleRuns: r.Call.Runs,
	})
}

// keep keeps a turn's RISKY call for the owner, to be asked once the
// turn's reply has said why: the authority checks the call itself (the
// worker is not trusted to have) and shows the owner exactly what its
// check will run.
func (c *Core) keep(ctx context.Context, t *turns.Turn, req contracts.RequestToolApproval) (approval.Request, error) {
	kept, err := c.auth.Keep(ctx, approval.Request{Key: t.ID, Kind: approval.Call, Origin: approval.Audience(t.Admission.Origin),
		Call: &approval.CallPayload{Call: req.Call, Messages: req.Messages, Outside: t.Admission.Outside}})
	return kept, c.writes.note("keep a request for the owner", err)
}

// letThrough reports whether a granted rule lets the turn's RISKY call
// through without asking (the authority then queues it to be carried
// out as an approved call once the turn is over). Never for a marked
// turn, and never past policy.MaxRuleRuns in a row
// (policy.RulesLetThrough).
func (c *Core) letThrough(ctx context.Context, t *turns.Turn, req contracts.RequestToolApproval) bool {
	return policy.RulesLetThrough(t.Admission.Outside, t.Admission.RuleRuns) &&
		c.auth.LetThrough(ctx, approval.Request{Key: t.ID, Kind: approval.Call, Origin: approval.Audience(t.Admission.Origin),
			Call: &approval.CallPayload{Call: req.Call, Messages: req.Messages, Runs: t.Admission.RuleRuns + 1}})
}
