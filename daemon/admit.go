package daemon

import (
	"context"
	"fmt"
	"strings"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/owner"
	"shelldon/daemon/state"
	"shelldon/daemon/turns"
)

// A message of the owner's is theirs until a turn has answered it: core
// keeps it in the state database before anything is done with it, marks
// it answered only once its turn has replied, and a core that starts
// takes up what an earlier one left unanswered — after a stop, a crash or
// a power cut alike.

// maxTries is how many turns may take up one message before a starting
// core stops trying it: a message whose turn stopped core twice is let go
// (and the owner told), so that it cannot stop every core that starts.
const maxTries = 2

// pruneAnsweredAfter is how long an answered message's record is kept, so
// that a transport delivering it again (Telegram keeps an update a day)
// is recognised rather than answered twice.
const pruneAnsweredAfter = 48 * time.Hour

// admit keeps the owner's message in the state database and tells its
// transport so, when the transport keeps it until then (in.Ref). It
// returns the id it is kept under (none when it could not be kept: it is
// still answered, but a stop first would lose it), and whether the
// message was kept before: a transport delivered it again, and it is
// already answered or on its way to be.
func (c *Core) admit(ctx context.Context, from turns.Origin, in contracts.Inbound) (kept []int64, again bool) {
	id, again, err := c.store.Admit(ctx, state.Admitted{
		Transport: from.Transport, Chat: from.Chat, Ref: in.Ref, Text: in.Text, At: c.clock.Now(),
	})
	if err := c.writes.note("keep the owner's message", err); err != nil {
		// Not confirmed, so a transport that keeps its messages keeps
		// this one: across a stop, it is delivered again.
		c.log.Error("could not keep the owner's message in the state database; answering it anyway, but a stop before the answer loses it",
			"err", err, "transport", from.Transport)
		return nil, false
	}
	c.confirm(from, in.Ref)
	return []int64{id}, again
}

// confirm tells the transport a message came from that core is done with
// keeping it: it is durable here, or it needed no keeping (a command).
func (c *Core) confirm(from turns.Origin, ref string) {
	if ref == "" {
		return
	}
	env, err := contracts.NewEnvelope(contracts.KindInboundAck, "", contracts.InboundAck{Ref: ref, Chat: from.Chat})
	if err == nil {
		env.To = from.Transport
		err = c.hub.Route(env)
	}
	if err != nil {
		c.log.Warn("the transport did not hear that its message is kept; it may deliver it again", "transport", from.Transport, "ref", ref, "err", err)
	}
}

// answer sends turn t's reply, out, where its messages came from. They
// are answered once the transport that delivers it holds it (package
// handoff: core keeps the reply until then, and sends it again); a turn
// with nothing to say, or for no transport, has them answered at once.
// The turn may end later (its worker still has to go).
func (c *Core) answer(ctx context.Context, t *turns.Turn, out contracts.Outbound) {
	c.media.Forget(t.Admission.Messages)
	from := t.Admission.Origin
	if out.Text != "" && from.Transport != "" {
		out.Chat = from.Chat
		c.replies.Reply(ctx, from.Transport, out, t.Admission.Messages)
		return
	}
	if out.Text != "" {
		c.say.reply(from, out)
	}
	if err := c.writes.note("record messages answered", c.store.Answered(ctx, t.Admission.Messages, c.clock.Now())); err != nil {
		c.log.Error("recording that the owner's messages are answered failed; the next start may answer them again",
			"turn", t.ID, "err", err)
	}
}

// leftBehind holds the messages an earlier core left unanswered, by
// transport, until that transport has joined the bus: their answers and
// the owner's note have somewhere to go then.
type leftBehind map[string][]state.Admitted

// loadLeftBehind reads what an earlier core left unanswered; it runs
// before the bus serves, so that a message a transport delivers again is
// either here or recognised as kept, never both.
func (c *Core) loadLeftBehind(ctx context.Context) {
	left, err := c.store.Unanswered(ctx)
	if err != nil {
		c.log.Error("reading the messages an earlier core left unanswered failed", "err", err)
		return
	}
	c.left = leftBehind{}
	unanswered := make([]int64, len(left))
	for i, m := range left {
		unanswered[i] = m.ID
	}
	c.media.Prune(unanswered)
	for _, m := range left {
		c.left[m.Transport] = append(c.left[m.Transport], m)
	}
	if len(left) > 0 {
		c.log.Warn("an earlier core left the owner's messages unanswered; taking them up as their transports join", "count", len(left))
	}
}

// takeUpLeftBehind answers what an earlier core left unanswered for one
// transport that has joined: it tells the owner what happened, and
// submits the messages again in their order and as they were grouped —
// the interrupted turn's messages as one turn, those that waited behind
// it as one catch-up; a message tried maxTries times already is let go,
// saying so.
func (c *Core) takeUpLeftBehind(ctx context.Context, transport string) {
	left := c.left[transport]
	delete(c.left, transport)
	byChat := map[string][]state.Admitted{}
	var chats []string
	for _, m := range left {
		if _, ok := byChat[m.Chat]; !ok {
			chats = append(chats, m.Chat)
		}
		byChat[m.Chat] = append(byChat[m.Chat], m)
	}
	for _, chat := range chats {
		from := turns.Origin{Transport: transport, Chat: chat}
		var again, letGo []string
		var giveUp []int64
		for _, m := range byChat[chat] {
			if m.Tries >= maxTries {
				letGo, giveUp = append(letGo, quoteMessage(m.Text)), append(giveUp, m.ID)
			} else {
				again = append(again, quoteMessage(m.Text))
			}
		}
		if len(letGo) > 0 {
			if err := c.writes.note("let go of messages", c.store.Answered(ctx, giveUp, c.clock.Now())); err != nil {
				c.log.Error("letting go of messages tried too often", "err", err)
			}
			c.say.Tell(approval.Audience(from), fmt.Sprintf("I was stopped %d times while thinking about %s, so I let it go; ask me again if you still want it.",
				maxTries, strings.Join(letGo, ", ")))
		}
		if len(again) == 0 {
			continue
		}
		c.say.Tell(approval.Audience(from), fmt.Sprintf("I was restarted before I could answer %s; thinking about it again now.", strings.Join(again, ", ")))
		c.log.Info("taking up messages an earlier core left unanswered", "transport", transport, "chat", chat, "count", len(again))
		for _, g := range asTurns(byChat[chat]) {
			c.submit(ctx, g.text, from, g.ids...)
		}
	}
}

// keptTurn is messages that go into one turn again.
type keptTurn struct {
	text string
	ids  []int64
}

// asTurns groups the messages to take up again as their turns had them:
// those one turn took up together stay together, and those no turn took
// up go together; messages tried maxTries times are left out.
func asTurns(left []state.Admitted) []keptTurn {
	var out []keptTurn
	group := map[string]int{} // a turn's id, or "" for none, to its place in out
	for _, m := range left {
		if m.Tries >= maxTries {
			continue
		}
		i, ok := group[m.Turn]
		if !ok {
			i = len(out)
			group[m.Turn] = i
			out = append(out, keptTurn{})
		}
		if out[i].text != "" {
			out[i].text += "\n"
		}
		out[i].text += m.Text
		out[i].ids = append(out[i].ids, m.ID)
	}
	return out
}

// quoteMessage is how the owner's note names one of their messages.
func quoteMessage(text string) string {
	return "“" + owner.Shorten(strings.Join(strings.Fields(text), " "), 60) + "”"
}

// submit offers a message, holding the admitted messages ids, to the
// turn machine: it starts a turn now or joins the pending slot. A stopping
// core starts no turn: what was admitted is kept for the next start.
func (c *Core) submit(ctx context.Context, text string, from turns.Origin, ids ...int64) {
	if c.draining {
		c.log.Info("stopping: the message is kept for the next start", "kept", len(ids) > 0)
		return
	}
	if adm, now := c.turns.Submit(text, from, ids...); now {
		c.startOwnersTurn(ctx, adm)
		return
	}
	c.log.Info("message joined the pending slot", "turn", c.turnID(), "pending", c.turns.Pending())
}

// pruneAnswered drops the records of messages answered long ago, daily.
func (c *Core) pruneAnswered(ctx context.Context) {
	if err := c.store.PruneAnswered(ctx, c.clock.Now().Add(-pruneAnsweredAfter)); err != nil {
		c.log.Error("pruning answered messages", "err", err)
	}
	c.clock.AfterFunc(24*time.Hour, func() { c.onLoop(c.pruneAnswered) })
}

// drain is the first part of a stop: the turn in flight may finish within
// the stop grace, with its results, requests and the broker's answers
// routed as ever; what the owner sends meanwhile is kept for the next
// start, and no turn starts. Real time, not core's clock: the grace
// bounds how long a stop takes, which systemd's TimeoutStopSec bounds in
// turn.
func (c *Core) drain(ctx context.Context) {
	c.draining = true
	grace := c.cfg.Timeouts.StopGrace.Duration
	if c.run == nil || grace <= 0 {
		return
	}
	c.log.Info("stopping: letting the turn in flight finish", "turn", c.run.turn.ID, "grace", grace)
	over := make(chan struct{})
	timer := time.AfterFunc(grace, func() { close(over) })
	defer timer.Stop()
	c.loop(ctx, over, func() bool { return c.run != nil })
	if c.run != nil {
		c.log.Warn("stopping: the turn in flight did not finish within the grace", "turn", c.run.turn.ID, "grace", grace)
	}
}

// reportLeft logs, at the end of a stop, what the next start takes up.
func (c *Core) reportLeft(ctx context.Context) {
	left, err := c.store.Unanswered(ctx)
	if err != nil {
		c.log.Error("stopping: could not read what is left unanswered", "err", err)
		return
	}
	if len(left) > 0 {
		c.log.Warn("stopping: the owner's messages left unanswered; the next start takes them up", "count", len(left))
	}
}
