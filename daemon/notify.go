package daemon

import (
	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/approved"
	"shelldon/daemon/turns"
)

// notifier reaches the owner for the approval authority, through the
// hub's routes.
type notifier struct{ c *Core }

// Ask shows a request, with its buttons, at to.
func (n notifier) Ask(to approval.Audience, req contracts.ApprovalRequest) {
	req.Chat = to.Chat
	env, err := contracts.NewEnvelope(contracts.KindApprovalRequest, req.Turn, req)
	if err == nil {
		env.To = to.Transport
		err = n.c.hub.Route(env)
	}
	if err != nil {
		n.c.log.Warn("the request reached no transport; it stays parked (/pending shows it again)", "turn", req.Turn, "err", err)
	}
}

// Settled tells every transport that a request is settled, so no button
// for it stays to be tapped.
func (n notifier) Settled(key, outcome string) {
	env, err := contracts.NewEnvelope(contracts.KindApprovalClosed, key, contracts.ApprovalClosed{Turn: key, Outcome: outcome, At: n.c.clock.Now()})
	if err == nil {
		err = n.c.hub.Route(env)
	}
	if err != nil {
		n.c.log.Info("no transport heard that a request is settled", "turn", key, "outcome", outcome, "err", err)
	}
}

// Tell says a line to the owner at to.
func (n notifier) Tell(to approval.Audience, text string) { n.c.tell(to, text) }

// tell sends the owner a message where they are.
func (c *Core) tell(to approval.Audience, text string) {
	c.replyTo(turns.Origin(to), contracts.Outbound{Text: text})
}

// tellEveryone sends a line to every transport, for what concerns the
// owner wherever they are (no chat asked).
func (c *Core) tellEveryone(text string) {
	c.replyTo(turns.Origin{}, contracts.Outbound{Text: text})
}

// tellEveryChange shows the owner the exact list of what an approved
// command changed in the workspace: nothing it does there goes unseen.
func (c *Core) tellEveryChange(to approval.Audience, what string, report *approved.Report) {
	c.tell(to, report.ForOwner(what))
}

// replyTo sends the owner a message where they wrote from.
func (c *Core) replyTo(to turns.Origin, out contracts.Outbound) {
	out.Chat = to.Chat
	env, err := contracts.NewEnvelope(contracts.KindOutbound, out.Turn, out)
	if err != nil {
		c.log.Error("encoding the reply failed", "turn", out.Turn, "err", err)
		return
	}
	env.To = to.Transport
	if err := c.hub.Route(env); err != nil {
		c.log.Error("the reply reached no transport", "turn", out.Turn, "err", err)
	}
}
