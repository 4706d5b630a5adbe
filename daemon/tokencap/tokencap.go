// Package tokencap carries out the owner's daily token cap
// (budget.daily_token_cap), whose verdict is [policy.TokenCap]'s. The cap
// is weighed before a turn of the owner's messages starts, never during
// one: a turn that crosses it finishes, and the next asks. Asking is a
// request of the approval authority's like any other (it is kept, shown
// where the message came from, expires, and counts only once); the
// message lives in it until the owner decides, and is kept again as
// admitted when they approve.
package tokencap

import (
	"context"
	"fmt"
	"log/slog"

	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/intake"
	"shelldon/daemon/turns"
	"shelldon/policy"
)

// Authority keeps and asks the requests past the cap ([approval.Authority]).
type Authority interface {
	Keep(ctx context.Context, r approval.Request) (approval.Request, error)
	Ask(r approval.Request)
}

// Intake is what the gate asks of the intake of the owner's messages
// ([intake.Intake]).
type Intake interface {
	// Overflow keeps what a turn does not take, and says where.
	Overflow(text string) string
	// Admit keeps a message as the owner's again.
	Admit(ctx context.Context, from turns.Origin, in contracts.Inbound) (kept []int64, again bool)
	// Answered records that messages wait for no answer.
	Answered(ctx context.Context, ids []int64) error
}

// Gate starts the turns of the owner's messages, or asks the owner first
// when today's turns used the cap. It is used from core's loop only.
type Gate struct {
	// Cap is the daily token cap; 0 is none.
	Cap int
	// Today sums the tokens today's turns used.
	Today  func(ctx context.Context) (int, error)
	Auth   Authority
	Intake Intake
	// Failed notes a failed write to the state for /status and returns
	// its error.
	Failed func(what string, err error) error
	Tell   func(to approval.Audience, text string)
	Log    *slog.Logger
	// Begin starts a turn in the slot the caller holds; Release hands the
	// slot on.
	Begin   func(ctx context.Context, adm turns.Admission)
	Release func(ctx context.Context)
}

// Start starts a turn of the owner's messages in the slot the caller
// holds, unless today's turns used the daily token cap: then the owner is
// asked first, and the slot is handed on. A sum that cannot be read does
// not keep the owner waiting: the turn starts, and the failure is logged.
func (g *Gate) Start(ctx context.Context, adm turns.Admission) {
	limit := policy.TokenCap(g.Cap)
	if limit.Set() {
		today, err := g.Today(ctx)
		switch {
		case err != nil:
			g.Log.Error("summing today's tokens for the daily cap failed; the turn starts", "err", err)
		case limit.Asks(today):
			g.ask(ctx, adm, today)
			g.Release(ctx)
			return
		}
	}
	g.Begin(ctx, adm)
}

// ask asks the owner whether to think about their messages although
// today's turns used the cap. Their messages are then the request's to
// keep, so they are no longer waiting as admitted: a core that restarts
// shows the request again instead of answering them.
func (g *Gate) ask(ctx context.Context, adm turns.Admission, today int) {
	if adm.Overflow != "" {
		adm.Text += g.Intake.Overflow(adm.Overflow)
	}
	p := approval.TokenCapPayload{Text: adm.Text, Today: today, Cap: g.Cap, Outside: adm.Outside}
	origin := approval.Audience(adm.Origin)
	log := g.Log.With(contracts.AuditEvent, contracts.EventTokenCap, "today", today, "cap", p.Cap)
	kept, err := g.Auth.Keep(ctx, approval.Request{Key: approval.NewKey(), Kind: approval.TokenCap, Origin: origin,
		Shown: approval.RenderTokenCap(p), Digest: approval.TokenCapDigest(p), TokenCap: &p})
	if err := g.Failed("keep a request for the owner", err); err != nil {
		log.Error("the daily token cap holds a message back, and asking the owner failed; it is let go", "err", err)
		g.Tell(origin, fmt.Sprintf("Today's turns used %d tokens, your daily cap is %d, and I could not ask you whether to go on (%v), so I did not think about %s. Ask me again.",
			today, p.Cap, err, intake.Quote(adm.Text)))
	} else {
		log.Info("the daily token cap holds a message back until the owner decides", "request", kept.Key)
		g.Auth.Ask(kept)
	}
	if err := g.Intake.Answered(ctx, adm.Messages); err != nil {
		log.Error("recording that the request holds the owner's messages failed; the next start may answer them", "err", err)
	}
}

// CarryOut does what the owner decided of a message past the cap,
// holding the slot, and reports whether a turn holds it now: on Approve,
// if the kept text is the one approved, it is kept again as admitted and
// its turn starts; on Deny it is let go, politely.
func (g *Gate) CarryOut(ctx context.Context, out approval.Outcome) bool {
	req := out.Request
	if out.Verdict != approval.Approved {
		g.Tell(req.Origin, fmt.Sprintf("All right, I'll leave %s for now. Ask me again when you like; the cap starts afresh at midnight.", intake.Quote(req.TokenCap.Text)))
		return false
	}
	if err := req.Verify(approval.TokenCapDigest(*req.TokenCap)); err != nil {
		g.Log.Error("a message past the cap is not what the owner approved; no turn starts", "request", req.Key, "err", err)
		g.Tell(req.Origin, "I did not think about it: what I kept is not what you approved. Ask me again.")
		return false
	}
	from := turns.Origin(req.Origin)
	kept, _ := g.Intake.Admit(ctx, from, contracts.Inbound{Chat: from.Chat, Text: req.TokenCap.Text})
	g.Begin(ctx, turns.Admission{Text: req.TokenCap.Text, Origin: from, Messages: kept, Outside: req.TokenCap.Outside})
	return true
}
