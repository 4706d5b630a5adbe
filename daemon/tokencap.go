package daemon

import (
	"context"
	"fmt"

	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/intake"
	"shelldon/daemon/turns"
	"shelldon/policy"
)

// The owner's daily token cap (budget.daily_token_cap) is weighed before
// a turn of their messages starts, never during one: a turn that crosses
// it finishes, and the next asks. Asking is a request of the approval
// authority's like any other (it is kept, shown where the message came
// from, expires, and counts only once); the message lives in it until
// the owner decides, and is kept again as admitted when they approve.

// startOwnersTurn starts a turn of the owner's messages in the slot the
// caller holds, unless today's turns used the daily token cap: then the
// owner is asked first, and the slot is handed on. A sum that cannot be
// read does not keep the owner waiting: the turn starts, and the failure
// is logged.
func (c *Core) startOwnersTurn(ctx context.Context, adm turns.Admission) {
	limit := policy.TokenCap(c.cfg.Budget.DailyTokenCap)
	if limit.Set() {
		today, err := c.brain.tokensToday(ctx)
		switch {
		case err != nil:
			c.log.Error("summing today's tokens for the daily cap failed; the turn starts", "err", err)
		case limit.Asks(today):
			c.askPastCap(ctx, adm, today)
			c.release(ctx)
			return
		}
	}
	c.startTurn(ctx, adm)
}

// askPastCap asks the owner whether to think about their messages
// although today's turns used the cap. Their messages are then the
// request's to keep, so they are no longer waiting as admitted: a core
// that restarts shows the request again instead of answering them.
func (c *Core) askPastCap(ctx context.Context, adm turns.Admission, today int) {
	if adm.Overflow != "" {
		adm.Text += c.intake.Overflow(adm.Overflow)
	}
	p := approval.TokenCapPayload{Text: adm.Text, Today: today, Cap: c.cfg.Budget.DailyTokenCap, Outside: adm.Outside}
	origin := approval.Audience(adm.Origin)
	log := c.log.With(contracts.AuditEvent, contracts.EventTokenCap, "today", today, "cap", p.Cap)
	kept, err := c.auth.Keep(ctx, approval.Request{Key: approval.NewKey(), Kind: approval.TokenCap, Origin: origin,
		Shown: approval.RenderTokenCap(p), Digest: approval.TokenCapDigest(p), TokenCap: &p})
	if err := c.writes.note("keep a request for the owner", err); err != nil {
		log.Error("the daily token cap holds a message back, and asking the owner failed; it is let go", "err", err)
		c.say.Tell(origin, fmt.Sprintf("Today's turns used %d tokens, your daily cap is %d, and I could not ask you whether to go on (%v), so I did not think about %s. Ask me again.",
			today, p.Cap, err, intake.Quote(adm.Text)))
	} else {
		log.Info("the daily token cap holds a message back until the owner decides", "request", kept.Key)
		c.auth.Ask(kept)
	}
	if err := c.intake.Answered(ctx, adm.Messages); err != nil {
		log.Error("recording that the request holds the owner's messages failed; the next start may answer them", "err", err)
	}
}

// carryOutPastCap does what the owner decided of a message past the
// cap, holding the slot: on Approve, if the kept text is the one
// approved, it is kept again as admitted and its turn starts (the turn
// then holds the slot); on Deny it is let go, politely.
func (c *Core) carryOutPastCap(ctx context.Context, out approval.Outcome) bool {
	req := out.Request
	if out.Verdict != approval.Approved {
		c.say.Tell(req.Origin, fmt.Sprintf("All right, I'll leave %s for now. Ask me again when you like; the cap starts afresh at midnight.", intake.Quote(req.TokenCap.Text)))
		return false
	}
	if err := req.Verify(approval.TokenCapDigest(*req.TokenCap)); err != nil {
		c.log.Error("a message past the cap is not what the owner approved; no turn starts", "request", req.Key, "err", err)
		c.say.Tell(req.Origin, "I did not think about it: what I kept is not what you approved. Ask me again.")
		return false
	}
	from := turns.Origin(req.Origin)
	kept, _ := c.intake.Admit(ctx, from, contracts.Inbound{Chat: from.Chat, Text: req.TokenCap.Text})
	c.startTurn(ctx, turns.Admission{Text: req.TokenCap.Text, Origin: from, Messages: kept, Outside: req.TokenCap.Outside})
	return true
}
