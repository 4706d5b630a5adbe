package daemon

import (
	"errors"
	"log/slog"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/approved"
	"shelldon/daemon/hub"
	"shelldon/daemon/turns"
)

// messenger is how core reaches the owner's transports and the panels,
// through the hub's routes. It is the approval authority's Notifier.
type messenger struct {
	hub   *hub.Hub // set once the bus is up
	clock clock.Clock
	log   *slog.Logger
}

// Ask shows a request, with its buttons, at to.
func (m *messenger) Ask(to approval.Audience, req contracts.ApprovalRequest) {
	req.Chat = to.Chat
	env, err := contracts.NewEnvelope(contracts.KindApprovalRequest, req.Turn, req)
	if err == nil {
		env.To = to.Transport
		err = m.hub.Route(env)
	}
	if err != nil {
		m.log.Warn("the request reached no transport; it stays parked (/pending shows it again)", "turn", req.Turn, "err", err)
	}
}

// Settled tells every transport that a request is settled, so no button
// for it stays to be tapped.
func (m *messenger) Settled(key, outcome string) {
	env, err := contracts.NewEnvelope(contracts.KindApprovalClosed, key, contracts.ApprovalClosed{Turn: key, Outcome: outcome, At: m.clock.Now()})
	if err == nil {
		err = m.hub.Route(env)
	}
	if err != nil {
		m.log.Info("no transport heard that a request is settled", "turn", key, "outcome", outcome, "err", err)
	}
}

// Tell says a line to the owner at to; an empty audience is every
// transport, for what concerns the owner wherever they are.
func (m *messenger) Tell(to approval.Audience, text string) {
	m.reply(turns.Origin(to), contracts.Outbound{Text: text})
}

// changes shows the owner the exact list of what an approved command
// changed in the workspace: nothing it does there goes unseen.
func (m *messenger) changes(to approval.Audience, what string, report *approved.Report) {
	m.reply(turns.Origin(to), report.ForOwner(what))
}

// reply sends the owner a message where they wrote from.
func (m *messenger) reply(to turns.Origin, out contracts.Outbound) {
	out.Chat = to.Chat
	env, err := contracts.NewEnvelope(contracts.KindOutbound, out.Turn, out)
	if err != nil {
		m.log.Error("encoding the reply failed", "turn", out.Turn, "err", err)
		return
	}
	env.To = to.Transport
	if err := m.hub.Route(env); err != nil {
		m.log.Error("the reply reached no transport", "turn", out.Turn, "err", err)
	}
}

// activity tells the transport a turn came from that it started or
// ended, so the owner sees the pet is busy (Telegram's "typing…").
func (m *messenger) activity(t *turns.Turn, busy bool) {
	from := t.Admission.Origin
	env, err := contracts.NewEnvelope(contracts.KindActivity, t.ID, contracts.Activity{Chat: from.Chat, Turn: t.ID, Busy: busy})
	if err != nil || from.Transport == "" {
		return
	}
	env.To = from.Transport
	// A transport that has gone misses a typing hint, nothing more.
	_ = m.hub.Route(env)
}

// progress tells the transport a turn came from what the turn is doing.
// A transport that has gone misses a line, nothing more; a turn of no
// transport's (a schedule's) has nobody watching its steps.
func (m *messenger) progress(to turns.Origin, p contracts.Progress) {
	p.Chat = to.Chat
	env, err := contracts.NewEnvelope(contracts.KindProgress, p.Turn, p)
	if err != nil || to.Transport == "" {
		return
	}
	env.To = to.Transport
	_ = m.hub.Route(env)
}

// snapshot sends the panels what to show.
func (m *messenger) snapshot(s contracts.Snapshot) {
	env, err := contracts.NewEnvelope(contracts.KindSnapshot, "", s)
	if err != nil {
		return
	}
	if err := m.hub.Route(env); err != nil && !errors.Is(err, hub.ErrNoRoute) {
		m.log.Warn("face push failed", "err", err)
	}
}
