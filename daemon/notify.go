package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/hub"
	"shelldon/daemon/owner"
	"shelldon/daemon/state"
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
func (m *messenger) changes(to approval.Audience, what string, report *approval.Report) {
	m.reply(turns.Origin(to), report.ForOwner(what))
}

// reply sends the owner a message where they wrote from.
func (m *messenger) reply(to turns.Origin, out contracts.Outbound) {
	if err := m.send(to, out); err != nil {
		m.log.Error("the reply reached no transport", "turn", out.Turn, "err", err)
	}
}

// send routes a message for the owner to to, and says whether a
// transport took it.
func (m *messenger) send(to turns.Origin, out contracts.Outbound) error {
	out.Chat = to.Chat
	env, err := contracts.NewEnvelope(contracts.KindOutbound, out.Turn, out)
	if err != nil {
		return err
	}
	env.To = to.Transport
	return m.hub.Route(env)
}

// tellOwed tells every transport what the store keeps for the owner
// (a damaged database restored, a rollback, the disk full), and has the store forget
// each once a transport took it; what none took waits for the next
// transport to join, or the next start.
func (m *messenger) tellOwed(ctx context.Context, store *state.Store) {
	owed, err := store.Notices().Owed(ctx)
	if err != nil {
		m.log.Error("reading what the owner must be told", "err", err)
		return
	}
	for _, n := range owed {
		if err := m.send(turns.Origin{}, contracts.Outbound{Text: noticeText(n)}); err != nil {
			m.log.Warn("no transport took a notice for the owner; it waits for the next", "err", err)
			return
		}
		if err := store.Notices().Told(ctx, n); err != nil {
			m.log.Error("the owner may be told a notice twice", "err", err)
		}
	}
}

// noticeText tells the owner, plainly, what a notice of the store's says.
func noticeText(n state.Notice) string {
	switch {
	case n.Damage != nil:
		return damageNote(n.Damage)
	case n.Rollback != nil:
		return rollbackNote(n.Rollback)
	case n.DiskFull != nil:
		return owner.DiskFullNote(*n.DiskFull) + " " + owner.FreeSomeSpace + " What I could not write or send, I try again once there is room."
	}
	return "I found something wrong with my state database when I started; `shelldon doctor` says more."
}

// keptNote says what a damaged or rolled-back database did not touch.
const keptNote = "I kept my memory (memory/, about.md, DIRECTIVE.md), my workspace and my tools."

// damageNote tells the owner, plainly, what a damaged state database cost.
func damageNote(d *state.Damage) string {
	if d.Restored.IsZero() {
		return fmt.Sprintf("My state database was damaged (%s), so I moved it aside (%s) and started a fresh one. %s "+
			"I lost our chat history, the record of my turns, my schedules and any request that was waiting for you.", d.Why, d.Aside, keptNote)
	}
	return fmt.Sprintf("My state database was damaged (%s), so I moved it aside (%s) and went back to my backup of %s. %s "+
		"What happened since that backup (chat history, turns, schedules, requests) is lost.", d.Why, d.Aside, d.Restored.Local().Format("Jan 2 15:04"), keptNote)
}

// rollbackNote tells the owner what a state database found behind its
// high-water mark lost.
func rollbackNote(r *state.Rollback) string {
	lost := "Every turn had been written into it before, so at most what was in flight is lost: a message of yours may need saying again, and a reply may come twice."
	if what := r.Lost(); what != "" {
		lost = fmt.Sprintf("What I wrote after %s is lost: %s. A reply may come twice, and a button of a request I had shown you may answer that I don't know it.",
			r.Since.Local().Format("Jan 2 15:04"), what)
	}
	return fmt.Sprintf("When I started, my state database had lost writes: %s. %s %s `shelldon doctor` says more.", r.Why, lost, keptNote)
}

// activity tells the transport a turn came from that it started or
// ended, so the owner sees the pet is busy (Telegram's "typing…").
func (m *messenger) activity(t *turns.Turn, busy bool) {
	from := t.Admission.Origin
	m.hint(from, contracts.KindActivity, t.ID, contracts.Activity{Chat: from.Chat, Turn: t.ID, Busy: busy})
}

// progress tells the transport a turn came from what the turn is doing.
func (m *messenger) progress(to turns.Origin, p contracts.Progress) {
	p.Chat = to.Chat
	m.hint(to, contracts.KindProgress, p.Turn, p)
}

// draft shows the transport a turn came from the draft of its reply.
func (m *messenger) draft(to turns.Origin, d contracts.Draft) {
	d.Chat = to.Chat
	m.hint(to, contracts.KindReplyDraft, d.Turn, d)
}

// hint sends the transport a turn came from what shows the turn under
// way: a typing hint, a step, a draft. A transport that has gone misses
// it, nothing more; a turn of no transport's (a schedule's) has nobody
// watching.
func (m *messenger) hint(to turns.Origin, kind contracts.Kind, turn string, body any) {
	env, err := contracts.NewEnvelope(kind, turn, body)
	if err != nil || to.Transport == "" {
		return
	}
	env.To = to.Transport
	_ = m.hub.Route(env)
}

// workerGone tells the brokers that the worker of turn is gone, so that
// a model call it left running is cancelled rather than paid for nobody.
// Every worker's end is told: a worker that ended its turn has no job
// running, and the broker ignores the word.
func (m *messenger) workerGone(turn string) {
	env, err := contracts.NewEnvelope(contracts.KindJobCancel, turn, struct{}{})
	if err == nil {
		err = m.hub.Route(env)
	}
	if err != nil && !errors.Is(err, hub.ErrNoRoute) {
		m.log.Warn("the broker did not hear that a worker is gone; its model call runs on to its deadline", "turn", turn, "err", err)
	}
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
