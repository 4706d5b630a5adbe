package transporttest

import (
	"fmt"
	"strings"
	"testing"

	"shelldon/contracts"
)

// aMessageReachesCoreOnceAndIsLetGoOnceKept: what the owner says reaches
// core once, as said, from their chat, under a ref; once core has
// confirmed it, a core that restarts does not get it again.
func aMessageReachesCoreOnceAndIsLetGoOnceKept(t *testing.T, r *rig) {
	const text = "hello, shelldon: what is on today?"
	r.says(t, text)
	r.kept(t)
	r.core.Restart(t)
	r.coreGot(t, 1, "across a restart after core confirmed it", text)
}

// aMessageCoreDidNotKeepGoesToTheNextCore: a message core never
// confirmed (it stopped first) goes to the core that comes next, under
// the same ref, so that core can tell it from a new one; and only then.
func aMessageCoreDidNotKeepGoesToTheNextCore(t *testing.T, r *rig) {
	const text = "a message no core confirmed"
	r.core.unconfirmed.Store(true)
	first := r.says(t, text)
	r.core.Stop()
	r.core.unconfirmed.Store(false)
	from := r.core.count()
	r.core.Start(t)
	if again := r.inbound(t, from, text, "at the next core"); again.Ref != first.Ref {
		t.Errorf("%s: the next core got %q under ref %q, want the first's %q so it can know it again", r.Name, text, again.Ref, first.Ref)
	}
	r.coreGot(t, 2, "once for each core", text)
}

// aMessageWhileCoreIsAwayGoesOnceItIsBack: what the owner says while
// core is away (restarting) reaches core once it is back, once.
func aMessageWhileCoreIsAwayGoesOnceItIsBack(t *testing.T, r *rig) {
	const text = "are you there?"
	r.says(t, "first, a word while core is there")
	r.core.Stop()
	from := r.core.count()
	r.Owner.Say(t, text)
	r.core.Start(t)
	r.inbound(t, from, text, "once core is back")
	r.coreGot(t, 1, "across core's restart", text)
}

// aReplyIsShownOnceHoweverOftenCoreSendsIt: a reply core keeps until the
// transport holds it (one with a key) is confirmed, and shown once
// though core sends it again, before and after a restart of its own; a
// reply without a key is shown as it comes.
func aReplyIsShownOnceHoweverOftenCoreSendsIt(t *testing.T, r *rig) {
	const text, key = "Here is the answer you asked for.", "reply-1"
	reply := contracts.Outbound{Chat: r.Chat, Text: text, Key: key, Turn: "t1"}
	for i, restart := range []bool{false, false, true} {
		if restart {
			r.core.Restart(t)
		}
		from := r.core.count()
		r.core.route(t, contracts.KindOutbound, reply)
		r.core.next(t, fmt.Sprintf("the transport's word that it holds reply %s (sent %d times)", key, i+1), from, replyHeld(key))
	}
	r.core.route(t, contracts.KindOutbound, contracts.Outbound{Chat: r.Chat, Text: "And one without a key."})
	r.sees(t, "And one without a key.")
	if n := strings.Count(r.Owner.Shown(), text); n != 1 {
		t.Errorf("%s: the reply sent three times with key %s shows %d times, want once; the owner sees:\n%s", r.Name, key, n, lastLines(r.Owner.Shown()))
	}
}

// anAnswerIsOneDecision: a request shows what it asks (and the rule it
// offers, in its words); the owner's answer is one decision on it,
// approving, granting the rule or not as they answered, from their chat,
// bound to the request as shown; answering again is no second decision,
// nor is an answer once core has settled it, which the owner sees
// settled.
func anAnswerIsOneDecision(t *testing.T, r *rig, answer Answer) {
	req := r.request("c0ffee00d00d0001")
	req.Always = "run_shell of exactly `rm -rf build/c0ffee00d00d0001`"
	r.askAndSee(t, req)
	r.sees(t, req.Always)
	from := r.core.count()
	r.Owner.Answer(t, req, answer)
	got := r.core.next(t, fmt.Sprintf("a decision on %s", req.Turn), from, decisionOn(req.Turn))
	var d contracts.Decision
	if err := got.env.Decode(&d); err != nil {
		t.Fatal(err)
	}
	approve, always := answer != Deny, answer == Always
	if d.Approve != approve || d.Always != always || d.Chat != r.Chat || (d.Digest != "" && d.Digest != req.Digest) {
		t.Errorf("%s: the owner's answer (%s) became %+v; want approve=%v, always=%v, from chat %q, with no digest or %q",
			r.Name, answer, d, approve, always, r.Chat, req.Digest)
	}
	r.Owner.Answer(t, req, answer)
	r.noDecisionSince(t, got.at+1, req.Turn, "a second answer on the same request")

	outcome := contracts.ApprovalDenied
	if approve {
		outcome = contracts.ApprovalApproved
	}
	r.core.settle(t, req.Turn, outcome)
	r.sees(t, outcomeMarks[outcome])
	other := Deny
	if answer == Deny {
		other = Approve
	}
	from = r.core.count()
	r.Owner.Answer(t, req, other)
	r.noDecisionSince(t, from, req.Turn, "an answer on a request core settled")
}

// anAnswerIsForTheRequestItWasGivenOn: with two requests waiting, an
// answer on one is a decision on that one alone, and the other still
// takes its own.
func anAnswerIsForTheRequestItWasGivenOn(t *testing.T, r *rig) {
	first, second := r.request("f1257000000000aa"), r.request("5ec0d000000000bb")
	r.askAndSee(t, first)
	r.askAndSee(t, second)
	from := r.core.count()
	r.Owner.Answer(t, second, Deny)
	got := r.core.next(t, fmt.Sprintf("a decision on %s", second.Turn), from, decisionOn(second.Turn))
	var d contracts.Decision
	if err := got.env.Decode(&d); err != nil || d.Approve {
		t.Errorf("%s: denying %s became %s (%v), want its denial", r.Name, second.Turn, got.env.Body, err)
	}
	r.noDecisionSince(t, from, first.Turn, "an answer on another request")
	r.core.settle(t, second.Turn, contracts.ApprovalDenied)
	r.sees(t, outcomeMarks[contracts.ApprovalDenied])
	from = r.core.count()
	r.Owner.Answer(t, first, Approve)
	got = r.core.next(t, fmt.Sprintf("a decision on %s", first.Turn), from, decisionOn(first.Turn))
	if err := got.env.Decode(&d); err != nil || !d.Approve {
		t.Errorf("%s: approving %s became %s (%v), want its approval", r.Name, first.Turn, got.env.Body, err)
	}
}

// coresWordsShowAsTheyAre: what core sends, the model's words among it,
// shows as the text it is, never as the client's markup: in a reply and
// in a request.
func coresWordsShowAsTheyAre(t *testing.T, r *rig) {
	const reply = "<b>not bold</b> & <a href=\"x\">no link</a> &amp; no entity"
	r.core.route(t, contracts.KindOutbound, contracts.Outbound{Chat: r.Chat, Text: reply})
	r.sees(t, reply)
	req := r.request("3a2c0de000000001")
	req.Detail = "echo '<i>not italic</i>' > page.html && cat page.html"
	r.askAndSee(t, req)
}

// aSettledRequestShowsItsOutcomeAndTakesNoAnswer: a request core settled
// without an answer from here (it expired, was answered on another
// transport, was replaced) shows what it came to, and an answer after
// that is no decision.
func aSettledRequestShowsItsOutcomeAndTakesNoAnswer(t *testing.T, r *rig) {
	for i, outcome := range []string{contracts.ApprovalExpired, contracts.ApprovalApproved, contracts.ApprovalReplaced} {
		req := r.request(fmt.Sprintf("5e771ed0000000%02d", i))
		r.askAndSee(t, req)
		before := strings.Count(r.Owner.Shown(), outcomeMarks[outcome])
		r.core.settle(t, req.Turn, outcome)
		r.waitShown(t, fmt.Sprintf("request %s settled as %s (%q)", req.Turn, outcome, outcomeMarks[outcome]), func(shown string) bool {
			return strings.Count(shown, outcomeMarks[outcome]) > before
		})
		from := r.core.count()
		r.Owner.Answer(t, req, Approve)
		r.noDecisionSince(t, from, req.Turn, fmt.Sprintf("an approval of a request %s", outcome))
	}
}

// oversizedInputIsBoundedAndSaidSo: a message past the transport's bound
// reaches core cut to it, or not at all, and the owner is told, with the
// bound; core stays up, and the owner's next message reaches it.
func oversizedInputIsBoundedAndSaidSo(t *testing.T, r *rig) {
	if r.InputBound <= 0 {
		t.Fatalf("%s: the target has no InputBound; every transport bounds what it hands core", r.Name)
	}
	huge := strings.Repeat("0123456789abcdef", 2*r.InputBound/16+1)
	from := r.core.count()
	r.Owner.Say(t, huge)
	bound := fmt.Sprintf("%d KiB", r.InputBound>>10)
	r.sees(t, bound)
	r.says(t, "a message of a sensible size")
	for _, got := range r.core.all(from, func(env contracts.Envelope) bool { return env.Kind == contracts.KindInbound }) {
		var in contracts.Inbound
		if err := got.env.Decode(&in); err != nil {
			t.Fatal(err)
		}
		if len(in.Text) > r.InputBound || in.Text != "a message of a sensible size" && !strings.HasPrefix(huge, in.Text) {
			t.Errorf("%s: a message of %d bytes reached core as %d bytes (%q); want at most its first %d, or nothing",
				r.Name, len(huge), len(in.Text), shorten(in.Text), r.InputBound)
		}
	}
}

// aTurnsProgressIsShown: what a turn of the owner's is doing shows,
// each step once, and another chat's progress not at all; a transport
// that takes it away once the turn settles does.
func aTurnsProgressIsShown(t *testing.T, r *rig) {
	const elsewhere, step = "someone else's step", "reading notes.md…"
	r.core.route(t, contracts.KindProgress, contracts.Progress{Chat: "another-chat", Turn: "t0", Line: elsewhere, Steps: 1})
	r.core.route(t, contracts.KindProgress, contracts.Progress{Chat: r.Chat, Turn: "t1", Line: step, Steps: 1})
	r.core.route(t, contracts.KindProgress, contracts.Progress{Chat: r.Chat, Turn: "t1", Line: step, Steps: 1})
	r.sees(t, step)
	shown := r.Owner.Shown()
	if n := strings.Count(shown, step); n != 1 {
		t.Errorf("%s: the step told twice shows %d times, want once; the owner sees:\n%s", r.Name, n, lastLines(shown))
	}
	if strings.Contains(shown, elsewhere) {
		t.Errorf("%s: another chat's progress shows here:\n%s", r.Name, lastLines(shown))
	}
	r.core.route(t, contracts.KindOutbound, contracts.Outbound{Chat: r.Chat, Turn: "t1", Text: "Read it: all fine."})
	r.core.route(t, contracts.KindProgress, contracts.Progress{Chat: r.Chat, Turn: "t1", Line: step, Steps: 1, Settled: true})
	r.sees(t, "Read it: all fine.")
	if r.ProgressTakenAway {
		r.waitShown(t, fmt.Sprintf("the step %q taken away once the turn settled", step), func(shown string) bool { return !strings.Contains(shown, step) })
	}
}

// comesBackAfterARestart: after the transport restarts, the owner's
// messages reach core, each once, and core's replies reach the owner.
func comesBackAfterARestart(t *testing.T, r *rig) {
	const before, after = "said before the restart", "said after the restart"
	r.says(t, before)
	r.kept(t)
	r.restart(t)
	r.says(t, after)
	r.core.route(t, contracts.KindOutbound, contracts.Outbound{Chat: r.Chat, Text: "Welcome back."})
	r.sees(t, "Welcome back.")
	r.coreGot(t, 1, "across the transport's restart", before, after)
}

// aMessageCoreDidNotKeepOutlivesARestart: a durable transport that stops
// before core confirmed a message hands it to core again after its
// restart, under the same ref.
func aMessageCoreDidNotKeepOutlivesARestart(t *testing.T, r *rig) {
	const text = "kept by the transport, not yet by core"
	r.core.unconfirmed.Store(true)
	first := r.says(t, text)
	r.core.unconfirmed.Store(false)
	from := r.core.count()
	r.restart(t)
	if again := r.inbound(t, from, text, "after the transport's restart"); again.Ref != first.Ref {
		t.Errorf("%s: after the restart core got %q under ref %q, want the first's %q", r.Name, text, again.Ref, first.Ref)
	}
}

// aRequestOutlivesARestart: a request a durable transport showed before
// its restart is answered after it, once.
func aRequestOutlivesARestart(t *testing.T, r *rig) {
	req := r.request("0be1a5ed00000001")
	r.askAndSee(t, req)
	r.restart(t)
	from := r.core.count()
	r.Owner.Answer(t, req, Approve)
	got := r.core.next(t, fmt.Sprintf("a decision on %s after the restart", req.Turn), from, decisionOn(req.Turn))
	var d contracts.Decision
	if err := got.env.Decode(&d); err != nil || !d.Approve {
		t.Errorf("%s: the approval after the restart became %s (%v), want an approval", r.Name, got.env.Body, err)
	}
	r.noDecisionSince(t, got.at+1, req.Turn, "the one answer after the restart")
}
