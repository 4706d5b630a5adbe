package daemon

import (
	"context"
	"fmt"
	"strings"

	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/mood"
	"shelldon/daemon/selfcode"
	"shelldon/daemon/toolstore"
	"shelldon/daemon/turns"
)

// propose stages a tool the model wrote in the tool store and runs the
// gate on it, away from the turn loop; a pass asks the owner to keep
// exactly the code that was gated, a failure discards it and says why.
func (c *Core) propose(ctx context.Context, t *turns.Turn, p contracts.ProposeTool) error {
	if c.opts.Sandbox == nil {
		return fmt.Errorf("no sandbox to test a new tool in (%v)", c.opts.NoSandbox)
	}
	stem, err := selfcode.Check(p.Name, p.Code, p.Test, c.tools.BuiltinNames())
	if err != nil {
		return err
	}
	staged, err := c.store2.Stage(approval.NewKey(), stem, p.Code, p.Test)
	if err != nil {
		return err
	}
	origin := approval.Audience(t.Admission.Origin)
	c.log.Info("testing a proposed tool", contracts.AuditEvent, contracts.EventPromotion, "turn", t.ID, "tool", stem, "decision", "gate")
	go func() {
		v, err := selfcode.Gate(ctx, c.opts.Sandbox, staged.Dir, stem)
		staged.Discard()
		c.onLoop(func(ctx context.Context) { c.gated(ctx, staged, p, v, err, origin) })
	}()
	return nil
}

// gated takes a gate's verdict: a pass parks the tool, as it was gated,
// for the owner; a failure is reported.
func (c *Core) gated(ctx context.Context, staged toolstore.Staged, p contracts.ProposeTool, v selfcode.Verdict, err error, origin approval.Audience) {
	stem := staged.Stem
	if err == nil && v.Passed {
		promo := approval.PromotionPayload{Stem: stem, Description: v.Description, Schema: v.Schema,
			Module: p.Code, Test: p.Test, Unverifiable: v.Unverifiable, Gate: lastLines(v.Output, 3), Live: staged.Live}
		if live := c.store2.LiveDigest(stem); live != staged.Live {
			// Kept or changed while this one was gated: the gate held it
			// to a version that is no longer the live one.
			err = fmt.Errorf("the live %s changed while this version was tested; propose it again", stem)
		} else {
			err = c.auth.Park(ctx, approval.Request{Key: approval.NewKey(), Kind: approval.Promotion, Origin: origin,
				Shown: approval.RenderPromotion(promo), Digest: approval.PromotionDigest(promo), Promotion: &promo})
			if err == nil {
				c.log.Info("asked the owner to keep a tool", contracts.AuditEvent, contracts.EventPromotion, "tool", stem, "decision", "asked")
				return
			}
		}
	}
	why := fmt.Sprintf("the gate could not run: %v", err)
	if err == nil {
		why = fmt.Sprintf("it failed the %s: %s", v.Step, v.Why)
		if v.Output != "" {
			why += "\n" + v.Output
		}
	}
	c.log.Info("a proposed tool failed the gate", contracts.AuditEvent, contracts.EventPromotion, "tool", stem, "decision", "failed", "why", why)
	c.tell(origin, fmt.Sprintf("I wrote a tool, %s, but %s", stem, why))
}

// keep carries out the owner's decision on a tool: Approve makes the
// exact code and test they were shown live, from the next turn; Deny
// drops them. The answer is for the owner.
func (c *Core) keep(ctx context.Context, req approval.Request, approve bool, by approval.Audience) string {
	p := req.Promotion
	if !approve {
		c.feel(mood.Denied)
		c.log.Info("the owner turned a tool down", contracts.AuditEvent, contracts.EventPromotion, "tool", p.Stem, "decision", "denied")
		return fmt.Sprintf("All right, I threw %s away.", p.Stem)
	}
	if err := req.Verify(approval.PromotionDigest(*p)); err != nil {
		return fmt.Sprintf("I did not keep %s: %v", p.Stem, err)
	}
	if live := c.store2.LiveDigest(p.Stem); live != p.Live {
		return fmt.Sprintf("I did not keep %s: the live version changed since it was tested. Ask me to propose it again.", p.Stem)
	}
	m := toolstore.Manifest{Name: p.Stem, Description: p.Description, Schema: p.Schema,
		PromotedAt: c.clock.Now().UTC().Format("2006-01-02T15:04:05Z"), PromotedBy: by.Transport + ":" + by.Chat}
	if err := c.store2.Keep(m, []byte(p.Module), []byte(p.Test)); err != nil {
		return fmt.Sprintf("Keeping %s failed: %v", p.Stem, err)
	}
	if err := c.store.ClearStrikes(ctx, p.Stem); err != nil {
		c.log.Error("clearing the strikes of a new version", "tool", p.Stem, "err", err)
	}
	c.feel(mood.Promoted)
	c.log.Info("promoted a tool", contracts.AuditEvent, contracts.EventPromotion, "tool", p.Stem, "decision", "promoted", "digest", req.Digest)
	return fmt.Sprintf("Kept: %s is one of my tools from now on.", p.Stem)
}

// lastLines is the end of a text, for a short report.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
