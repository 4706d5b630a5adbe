package approval

import (
	"context"
	"fmt"

	"shelldon/contracts"
	"shelldon/daemon/state"
	"shelldon/policy"
)

// grant keeps the rule request r offered, which the owner granted with
// their approval of it from from, and tells them so: its number, its
// words and when it ends. A request that offered none (or was asked
// after outside content) grants nothing; a rule that cannot be kept is
// said, and the call is still approved.
func (a *Authority) grant(ctx context.Context, r Request, from Audience) {
	offer := r.offer()
	if offer.Pattern == "" {
		a.cfg.Notify.Tell(from, "Approved once: this request offered no rule to keep, so I will ask again next time.")
		return
	}
	now := a.cfg.Clock.Now()
	kept, err := a.cfg.Store.Rules().Grant(ctx, state.Rule{Tool: offer.Tool, Pattern: offer.Pattern, Words: offer.Words,
		Granted: now, Expires: now.Add(a.cfg.RuleLife)})
	if err != nil {
		a.cfg.Log.Error("keeping a rule the owner granted failed", contracts.AuditEvent, contracts.EventRule, "decision", "grant-failed",
			"turn", r.Key, "words", offer.Words, "err", err)
		a.cfg.Notify.Tell(from, fmt.Sprintf("Approved once, but I could not keep the rule (%v), so I will ask again next time.", err))
		return
	}
	a.rulesDue.lower(kept.Expires)
	a.cfg.Log.Info("the owner granted a rule", contracts.AuditEvent, contracts.EventRule, "decision", "granted", "rule", kept.ID,
		"words", kept.Words, "turn", r.Key, "expires", kept.Expires, "from", from.Transport, "chat", from.Chat)
	a.cfg.Notify.Tell(from, fmt.Sprintf("Rule %d kept until %s: %s runs without asking. /rules lists it; /rules revoke %d drops it.",
		kept.ID, kept.Expires.Format("2006-01-02"), kept.Words, kept.ID))
}

// allow finds a granted rule, not expired, that covers the call c, counts
// the use and says it in the journal; false when none does. The caller
// asks it only for a call of a conversation that read nothing from
// outside.
func (a *Authority) allow(ctx context.Context, turn string, c policy.RuleCall) (state.Rule, bool) {
	rules, err := a.cfg.Store.Rules().All(ctx)
	if err != nil {
		a.cfg.Log.Error("reading the granted rules failed; the call is asked", "turn", turn, "err", err)
		return state.Rule{}, false
	}
	now := a.cfg.Clock.Now()
	for _, r := range rules {
		if !r.Expires.After(now) || !(policy.Rule{Tool: r.Tool, Pattern: r.Pattern}).Covers(c) {
			continue
		}
		if err := a.cfg.Store.Rules().Use(ctx, r.ID); err != nil {
			a.cfg.Log.Error("counting a rule's use failed; the call is asked", "rule", r.ID, "err", err)
			return state.Rule{}, false
		}
		r.Uses++
		a.cfg.Log.Info("a rule let a call through", contracts.AuditEvent, contracts.EventRule, "decision", "used", "rule", r.ID,
			"words", r.Words, "turn", turn, "tool", c.Tool)
		return r, true
	}
	return state.Rule{}, false
}

// LetThrough reports whether a granted rule lets the RISKY call r asks
// (r.Call: a call of a conversation that read nothing from outside, with
// its count of calls let through in a row) through without asking, and
// if so queues it, checked and sealed as if asked, to be carried out like
// an approved one once the slot is free: [Authority.Held] gives it back
// first.
func (a *Authority) LetThrough(ctx context.Context, r Request) bool {
	checked, err := a.cfg.Executor.Check(r.Call.Call)
	if err != nil {
		return false // asking it says why
	}
	rule, ok := a.allow(ctx, r.Key, checked.RuleCall(r.Call.Call.Name))
	if !ok {
		return false
	}
	r.Call.Rule = &rule
	if err := a.seal(&r); err != nil {
		a.cfg.Log.Error("a call a rule let through no longer checks; it is asked", "turn", r.Key, "err", err)
		return false
	}
	a.ruled = append(a.ruled, r)
	return true
}

// Rules lists the granted rules, oldest first.
func (a *Authority) Rules(ctx context.Context) ([]state.Rule, error) {
	return a.cfg.Store.Rules().All(ctx)
}

// Revoke drops the rule id at the owner's word, from from.
func (a *Authority) Revoke(ctx context.Context, id int64, from Audience) (state.Rule, error) {
	r, err := a.cfg.Store.Rules().Revoke(ctx, id)
	if err != nil {
		return state.Rule{}, err
	}
	a.cfg.Log.Info("the owner revoked a rule", contracts.AuditEvent, contracts.EventRule, "decision", "revoked", "rule", r.ID,
		"words", r.Words, "uses", r.Uses, "from", from.Transport, "chat", from.Chat)
	return r, nil
}

// ExpireRules drops the rules whose time has come, each in the journal.
func (a *Authority) ExpireRules(ctx context.Context) {
	now := a.cfg.Clock.Now()
	if a.rulesDue.notYet(now) {
		return
	}
	expired, err := a.cfg.Store.Rules().Expire(ctx, now)
	if err != nil {
		a.cfg.Log.Error("expiring rules", "err", err)
	}
	a.rulesDue.learn(a.cfg.Store.Rules().NextExpiry(ctx))
	for _, r := range expired {
		a.cfg.Log.Info("a rule expired", contracts.AuditEvent, contracts.EventRule, "decision", "expired", "rule", r.ID,
			"words", r.Words, "uses", r.Uses)
	}
}
