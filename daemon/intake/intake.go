// Package intake takes the owner's messages in: it keeps each in the
// state database before anything is done with it, tells its transport
// so, offers it to the turn machine (a turn now, or the pending slot of
// the catch-up turn), and marks it answered only once its turn has
// replied; a core that starts takes up what an earlier one left
// unanswered — after a stop, a crash or a power cut alike. The owner's
// voice notes' transcripts and photos (package media) are kept with
// their message until it is answered.
package intake

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"shelldon/beneath"
	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/media"
	"shelldon/daemon/mood"
	"shelldon/daemon/owner"
	"shelldon/daemon/state"
	"shelldon/daemon/turns"
)

// maxTries is how many turns may take up one message before a starting
// core stops trying it: a message whose turn stopped core twice is let go
// (and the owner told), so that it cannot stop every core that starts.
const maxTries = 2

// pruneAnsweredAfter is how long an answered message's record is kept, so
// that a transport delivering it again (Telegram keeps an update a day)
// is recognised rather than answered twice.
const pruneAnsweredAfter = 48 * time.Hour

// Turns is what intake asks of the turn machine ([turns.Machine]).
type Turns interface {
	Submit(text string, from turns.Origin, ids ...int64) (turns.Admission, bool)
	Current() *turns.Turn
	Pending() int
}

// Intake takes the owner's messages in. It is used from core's loop only.
type Intake struct {
	// Store keeps the messages admitted until a turn answers them.
	Store *state.Intake
	Media *media.Keeper
	Turns Turns
	Clock clock.Clock
	Log   *slog.Logger
	// Workspace is where what the owner wrote beyond a turn's size is
	// kept, for the model to read.
	Workspace string
	// Failed notes a failed write to the state for /status and returns
	// its error.
	Failed func(what string, err error) error
	// Route sends an envelope on the bus: a message's acknowledgement.
	Route func(contracts.Envelope) error
	// Hand gives a turn's reply to the transport that delivers it, which
	// marks the messages answered once that transport holds it (package
	// handoff).
	Hand func(ctx context.Context, transport string, out contracts.Outbound, messages []int64)
	// Reply answers at once, where nothing keeps the reply; Tell says one
	// line to the owner.
	Reply func(to turns.Origin, out contracts.Outbound)
	Tell  func(to approval.Audience, text string)
	// Feel tells the mood that the owner wrote.
	Feel func(mood.Event)
	// Start starts a turn of the owner's messages in the slot the caller
	// holds (the token cap may ask the owner first).
	Start func(ctx context.Context, adm turns.Admission)
	// Stopping reports that core is stopping: no turn starts, and what
	// was admitted is kept for the next start.
	Stopping func() bool
	// OnLoop hands work from a timer back to core's loop.
	OnLoop func(func(context.Context))

	// left holds the messages an earlier core left unanswered, by
	// transport, until that transport has joined the bus: their answers
	// and the owner's note have somewhere to go then.
	left map[string][]state.Admitted
}

// Take takes in a message of the owner's, from, that is no command: cut
// to what one turn reads, kept, and offered to the turn machine.
func (i *Intake) Take(ctx context.Context, from turns.Origin, in contracts.Inbound) {
	if text, cut := turns.CutMessage(in.Text); cut {
		i.Tell(approval.Audience(from), fmt.Sprintf("Your message was %d KiB, so I read only its first %d KiB.", len(in.Text)>>10, turns.MaxMessageBytes>>10))
		in.Text = text
	}
	kept, again := i.Admit(ctx, from, in)
	if again {
		i.Log.Info("a transport delivered a message again that is kept already", "transport", from.Transport, "ref", in.Ref)
		return
	}
	for _, id := range kept {
		i.Media.Keep(id, in)
	}
	i.Feel(mood.OwnerMessage)
	i.Submit(ctx, in.Text, from, kept...)
}

// Admit keeps the owner's message in the state database and tells its
// transport so, when the transport keeps it until then (in.Ref). It
// returns the id it is kept under (none when it could not be kept: it is
// still answered, but a stop first would lose it), and whether the
// message was kept before: a transport delivered it again, and it is
// already answered or on its way to be.
func (i *Intake) Admit(ctx context.Context, from turns.Origin, in contracts.Inbound) (kept []int64, again bool) {
	id, again, err := i.Store.Admit(ctx, state.Admitted{
		Transport: from.Transport, Chat: from.Chat, Ref: in.Ref, Text: in.Text, At: i.Clock.Now(),
	})
	if err := i.Failed("keep the owner's message", err); err != nil {
		// Not confirmed, so a transport that keeps its messages keeps
		// this one: across a stop, it is delivered again.
		i.Log.Error("could not keep the owner's message in the state database; answering it anyway, but a stop before the answer loses it",
			"err", err, "transport", from.Transport)
		return nil, false
	}
	i.Confirm(from, in.Ref)
	return []int64{id}, again
}

// Confirm tells the transport a message came from that core is done with
// keeping it: it is durable here, or it needed no keeping (a command).
func (i *Intake) Confirm(from turns.Origin, ref string) {
	if ref == "" {
		return
	}
	env, err := contracts.NewEnvelope(contracts.KindInboundAck, "", contracts.InboundAck{Ref: ref, Chat: from.Chat})
	if err == nil {
		env.To = from.Transport
		err = i.Route(env)
	}
	if err != nil {
		i.Log.Warn("the transport did not hear that its message is kept; it may deliver it again", "transport", from.Transport, "ref", ref, "err", err)
	}
}

// Answer sends turn t's reply, out, where its messages came from. They
// are answered once the transport that delivers it holds it (package
// handoff: core keeps the reply until then, and sends it again); a turn
// with nothing to say, or for no transport, has them answered at once.
// The turn may end later (its worker still has to go).
func (i *Intake) Answer(ctx context.Context, t *turns.Turn, out contracts.Outbound) {
	i.Media.Forget(t.Admission.Messages)
	from := t.Admission.Origin
	if out.Text != "" && from.Transport != "" {
		out.Chat = from.Chat
		i.Hand(ctx, from.Transport, out, t.Admission.Messages)
		return
	}
	if out.Text != "" {
		i.Reply(from, out)
	}
	if err := i.Answered(ctx, t.Admission.Messages); err != nil {
		i.Log.Error("recording that the owner's messages are answered failed; the next start may answer them again",
			"turn", t.ID, "err", err)
	}
}

// Answered records that the owner's messages ids wait for no answer
// (answered, or held by a request of the owner's now).
func (i *Intake) Answered(ctx context.Context, ids []int64) error {
	return i.Failed("record messages answered", i.Store.Answered(ctx, ids, i.Clock.Now()))
}

// Load reads what an earlier core left unanswered; it runs before the
// bus serves, so that a message a transport delivers again is either here
// or recognised as kept, never both.
func (i *Intake) Load(ctx context.Context) {
	left, err := i.Store.Unanswered(ctx)
	if err != nil {
		i.Log.Error("reading the messages an earlier core left unanswered failed", "err", err)
		return
	}
	i.left = map[string][]state.Admitted{}
	unanswered := make([]int64, len(left))
	for n, m := range left {
		unanswered[n] = m.ID
	}
	i.Media.Prune(unanswered)
	for _, m := range left {
		i.left[m.Transport] = append(i.left[m.Transport], m)
	}
	if len(left) > 0 {
		i.Log.Warn("an earlier core left the owner's messages unanswered; taking them up as their transports join", "count", len(left))
	}
}

// Joined answers what an earlier core left unanswered for one transport
// that has joined: it tells the owner what happened, and submits the
// messages again in their order and as they were grouped — the
// interrupted turn's messages as one turn, those that waited behind it
// as one catch-up; a message tried maxTries times already is let go,
// saying so.
func (i *Intake) Joined(ctx context.Context, transport string) {
	left := i.left[transport]
	delete(i.left, transport)
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
				letGo, giveUp = append(letGo, Quote(m.Text)), append(giveUp, m.ID)
			} else {
				again = append(again, Quote(m.Text))
			}
		}
		if len(letGo) > 0 {
			if err := i.Failed("let go of messages", i.Store.Answered(ctx, giveUp, i.Clock.Now())); err != nil {
				i.Log.Error("letting go of messages tried too often", "err", err)
			}
			i.Tell(approval.Audience(from), fmt.Sprintf("I was stopped %d times while thinking about %s, so I let it go; ask me again if you still want it.",
				maxTries, strings.Join(letGo, ", ")))
		}
		if len(again) == 0 {
			continue
		}
		i.Tell(approval.Audience(from), fmt.Sprintf("I was restarted before I could answer %s; thinking about it again now.", strings.Join(again, ", ")))
		i.Log.Info("taking up messages an earlier core left unanswered", "transport", transport, "chat", chat, "count", len(again))
		for _, g := range asTurns(byChat[chat]) {
			i.Submit(ctx, g.text, from, g.ids...)
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
		n, ok := group[m.Turn]
		if !ok {
			n = len(out)
			group[m.Turn] = n
			out = append(out, keptTurn{})
		}
		if out[n].text != "" {
			out[n].text += "\n"
		}
		out[n].text += m.Text
		out[n].ids = append(out[n].ids, m.ID)
	}
	return out
}

// Quote is how the owner's note names one of their messages.
func Quote(text string) string {
	return "“" + owner.Shorten(strings.Join(strings.Fields(text), " "), 60) + "”"
}

// Submit offers a message, holding the admitted messages ids, to the
// turn machine: it starts a turn now or joins the pending slot. A
// stopping core starts no turn: what was admitted is kept for the next
// start.
func (i *Intake) Submit(ctx context.Context, text string, from turns.Origin, ids ...int64) {
	if i.Stopping() {
		i.Log.Info("stopping: the message is kept for the next start", "kept", len(ids) > 0)
		return
	}
	if adm, now := i.Turns.Submit(text, from, ids...); now {
		i.Start(ctx, adm)
		return
	}
	var turn string
	if t := i.Turns.Current(); t != nil {
		turn = t.ID
	}
	i.Log.Info("message joined the pending slot", "turn", turn, "pending", i.Turns.Pending())
}

// Prune drops the records of messages answered long ago, daily.
func (i *Intake) Prune(ctx context.Context) {
	if err := i.Store.PruneAnswered(ctx, i.Clock.Now().Add(-pruneAnsweredAfter)); err != nil {
		i.Log.Error("pruning answered messages", "err", err)
	}
	i.Clock.AfterFunc(24*time.Hour, func() { i.OnLoop(i.Prune) })
}

// ReportLeft logs, at the end of a stop, what the next start takes up.
func (i *Intake) ReportLeft(ctx context.Context) {
	left, err := i.Store.Unanswered(ctx)
	if err != nil {
		i.Log.Error("stopping: could not read what is left unanswered", "err", err)
		return
	}
	if len(left) > 0 {
		i.Log.Warn("stopping: the owner's messages left unanswered; the next start takes them up", "count", len(left))
	}
}

// Overflow keeps what the owner wrote during a turn beyond what one turn
// takes as a file in the workspace, beneath it without following a link,
// and says where, for the model.
func (i *Intake) Overflow(text string) string {
	name := fmt.Sprintf("inbox/while-busy-%s.txt", i.Clock.Now().UTC().Format("20060102T150405.000Z"))
	err := func() error {
		ws, err := beneath.Open(i.Workspace)
		if err != nil {
			return err
		}
		defer ws.Close()
		if err := ws.MkdirAll("inbox", 0o755); err != nil {
			return err
		}
		return ws.WriteFile(name, []byte(text), 0o644)
	}()
	if err != nil {
		i.Log.Error("keeping what the owner wrote beyond a turn's size", "err", err, "bytes", len(text))
		return fmt.Sprintf("\n\n[The owner wrote %d KiB more while I was busy, which I could not keep (%v).]", len(text)>>10, err)
	}
	return fmt.Sprintf("\n\n[The owner wrote %d KiB more while I was busy: it is in my workspace at %s; read it with read_file.]", len(text)>>10, name)
}
