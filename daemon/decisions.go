package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/approval/approved"
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
	if !c.carryOut(ctx, out) && out.Slot {
		c.release(ctx)
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

// carryOut does what a taken decision says, and reports whether it goes
// on off the loop holding the slot (a call being carried out for its
// resumed turn, a change set being applied); the caller gives the slot
// back otherwise, if the decision held it.
func (c *Core) carryOut(ctx context.Context, out approval.Outcome) bool {
	if out.Verdict != approval.Approved && out.Verdict != approval.Denied {
		return false
	}
	approve := out.Verdict == approval.Approved
	req := out.Request
	switch req.Kind {
	case approval.Promotion:
		c.say.Tell(out.From, c.keeper.keep(ctx, req, approve, out.From))
		return false
	case approval.TokenCap:
		return c.carryOutPastCap(ctx, out)
	case approval.Memory:
		c.keepMarked(ctx, out.From, req, approve)
		return false
	case approval.ChangeSet:
		if !approve {
			c.brain.feel(mood.Denied)
			if err := c.runner.DiscardKept(req.ChangeSet); err != nil {
				c.log.Error("discarding a change set the owner turned down", "turn", req.Key, "err", err)
			}
			c.say.Tell(out.From, fmt.Sprintf("All right, I threw away the changes of %s; the workspace is as it was.", req.ChangeSet.Tool))
			return false
		}
		c.brain.feel(mood.Approved)
		c.offLoop.Go(func() {
			report := c.runner.ApplyKept(ctx, req)
			c.onLoop(func(ctx context.Context) {
				c.say.changes(req.Origin, fmt.Sprintf("the changes of %s", req.ChangeSet.Tool), &report)
				c.release(ctx)
			})
		})
		return true
	}
	decision := contracts.ApprovalDenied
	if approve {
		decision = contracts.ApprovalApproved
		c.brain.feel(mood.Approved)
	} else {
		c.brain.feel(mood.Denied)
	}
	// Checked again and verified once, here: the progress line says what
	// the verified call does, and only that call runs.
	var verified approved.Verified
	var res approved.Result
	ok := false
	if approve {
		if verified, res, ok = c.runner.Verify(req); ok {
			c.approvedProgress(turns.Origin(req.Origin), req.Key, verified.Doing(), false)
		}
	}
	doing := verified.Doing()
	c.offLoop.Go(func() {
		answer := contracts.DeniedByOwner
		if ok {
			res = c.runner.Run(ctx, verified)
		}
		if approve {
			answer = res.Answer
		}
		c.onLoop(func(ctx context.Context) {
			if doing != "" {
				c.approvedProgress(turns.Origin(req.Origin), req.Key, doing, true)
			}
			c.resume(ctx, req, answer, decision, res)
		})
	})
	return true
}

// resume tells the owner what the approved call changed (and parks its
// change set if it needs their own look), then starts the turn that
// takes the parked conversation up with the answer to its call.
func (c *Core) resume(ctx context.Context, req approval.Request, answer, decision string, res approved.Result) {
	call := req.Call.Call
	if rule := req.Call.Rule; rule != nil {
		what, more, _ := strings.Cut(req.Shown.Detail, "\n")
		if more != "" {
			what += " …"
		}
		c.say.Tell(req.Origin, fmt.Sprintf("Ran under rule %d (%s): %s", rule.ID, rule.Words, what))
	}
	if res.Changed {
		c.say.Tell(req.Origin, fmt.Sprintf("I did not run %s: what it would run now is not what you approved (the workspace changed since?). Ask me again.", call.Name))
	}
	if res.Applied != nil {
		c.say.changes(req.Origin, call.Name, res.Applied)
	}
	if res.Kept != nil {
		if err := c.auth.Park(ctx, res.KeptRequest(req)); err != nil {
			c.log.Error("asking the owner about a change set failed; it was dropped", "turn", req.Key, "err", err)
			c.runner.DiscardKept(res.Kept)
			c.say.Tell(req.Origin, fmt.Sprintf("The changes of %s needed your own look, but I could not ask you (%v), so I dropped them.", res.Kept.Tool, err))
		}
	}
	c.startTurn(ctx, turns.Admission{
		Origin: turns.Origin(req.Origin),
		Resume: &contracts.Resume{
			Messages: req.Call.Messages,
			Answer:   contracts.Message{Role: contracts.ChatTool, ToolCallID: call.ID, Content: answer},
		},
		Preview: fmt.Sprintf("(%s %s)", decision, call.Name),
		Outside: policy.MarkResumed(req.Call.Outside, res.Outside),
		// The owner's own decision starts the count again.
		RuleRuns: req.Call.Runs,
	})
}

// keep keeps a turn's RISKY call for the owner, to be asked once the
// turn's reply has said why: core checks the call itself (the worker is
// not trusted to have), and the authority shows the owner exactly what
// core's check will run.
func (c *Core) keep(ctx context.Context, t *turns.Turn, req contracts.RequestToolApproval) (approval.Request, error) {
	checked, err := approved.Check(c.tools, req.Call)
	if err != nil {
		return approval.Request{}, err
	}
	outside := t.Admission.Outside
	payload := &approval.CallPayload{Call: req.Call, Messages: req.Messages, Outside: outside}
	if rule, ok := policy.RuleFor(checked.RuleCall(req.Call.Name)); ok && policy.RulesApply(outside) {
		payload.Offer = &rule
	}
	kept, err := c.auth.Keep(ctx, approval.Request{
		Key: t.ID, Kind: approval.Call, Origin: approval.Audience(t.Admission.Origin),
		Shown: approval.RenderCall(req.Call.Name, checked, outside), Digest: approval.CallDigest(req.Call.Name, checked, outside),
		Call: payload,
	})
	return kept, c.writes.note("keep a request for the owner", err)
}

// letThrough reports whether a granted rule lets the turn's RISKY call
// through without asking, and if so queues it to be carried out as an
// approved call once the turn is over. Never for a marked turn, and
// never past policy.MaxRuleRuns in a row (policy.RulesLetThrough).
func (c *Core) letThrough(ctx context.Context, t *turns.Turn, req contracts.RequestToolApproval) bool {
	if !policy.RulesLetThrough(t.Admission.Outside, t.Admission.RuleRuns) {
		return false
	}
	checked, err := approved.Check(c.tools, req.Call)
	if err != nil {
		return false // keep says why
	}
	rule, ok := c.auth.Allow(ctx, t.ID, checked.RuleCall(req.Call.Name))
	if !ok {
		return false
	}
	c.auth.LetThrough(approval.Request{
		Key: t.ID, Kind: approval.Call, Origin: approval.Audience(t.Admission.Origin),
		Shown: approval.RenderCall(req.Call.Name, checked, ""), Digest: approval.CallDigest(req.Call.Name, checked, ""),
		Call: &approval.CallPayload{Call: req.Call, Messages: req.Messages, Rule: &rule, Runs: t.Admission.RuleRuns + 1},
	})
	return true
}
