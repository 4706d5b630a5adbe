package transporttest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"shelldon/contracts"
)

// Owner is the owner's side of one transport under test, through the
// transport's own test peer: what they do, and what they see.
type Owner interface {
	// Say has the owner send text as a message.
	Say(t *testing.T, text string)
	// Shown is what the owner's client shows now, as text: the bot's
	// messages in their current state, the terminal's screen.
	Shown() string
	// Answer has the owner give answer to req the way the transport
	// offers (a button tapped, an answer typed). Asked again, or once the
	// request is settled, the owner answers all the same, as a second tap
	// or a stale client would: what the transport makes of that is the
	// suite's to check.
	Answer(t *testing.T, req contracts.ApprovalRequest, answer Answer)
	// Restart stops the transport and starts it again over what it keeps.
	Restart(t *testing.T)
}

// Answer is what the owner may answer a request.
type Answer int

// The answers to a request.
const (
	Deny Answer = iota
	Approve
	// Always approves, and grants the rule the request offers
	// ([contracts.ApprovalRequest.Always]).
	Always
)

func (a Answer) String() string { return [...]string{"deny", "approve", "always"}[a] }

// Target is one transport under test, as the suite drives it.
type Target struct {
	Owner Owner
	// Chat names the owner's conversation on the bus, as the transport
	// fills [contracts.Inbound.Chat] ("cli", a Telegram chat id).
	Chat string
	// InputBound is the most bytes of one message the transport hands
	// core. A longer message is cut there or refused, and the owner told
	// so in words that name the bound in KiB.
	InputBound int
}

// Impl is one row of a transport table: a name, how to start the
// transport on core's socket (with the owner's peer ready, cleaned up at
// the test's end; the suite waits for it to join), and what it promises
// beyond what every transport does.
type Impl struct {
	Name string
	New  func(t *testing.T, core *Core) Target
	// ProgressTakenAway says the transport takes a turn's progress off
	// the owner's screen once the turn has settled (the bot deletes its
	// status message); a terminal prints a line a step, which stays.
	ProgressTakenAway bool
	// Durable says the transport keeps what it holds across its own
	// restart: a message core did not confirm goes to core after it, and
	// a request shown before it is answered after it.
	Durable bool
}

// Run runs the suite against each transport of impls, each in a subtest
// named after it, each case with a core and a transport of its own.
func Run(t *testing.T, impls []Impl) {
	for _, impl := range impls {
		t.Run(impl.Name, func(t *testing.T) {
			for _, c := range []struct {
				name string
				test func(*testing.T, *rig)
				// only, when set, says whether the transport promises
				// the behaviour.
				only func(Impl) bool
			}{
				{"AMessageReachesCoreOnceAndIsLetGoOnceKept", aMessageReachesCoreOnceAndIsLetGoOnceKept, nil},
				{"AMessageCoreDidNotKeepGoesToTheNextCore", aMessageCoreDidNotKeepGoesToTheNextCore, nil},
				{"AMessageWhileCoreIsAwayGoesOnceItIsBack", aMessageWhileCoreIsAwayGoesOnceItIsBack, nil},
				{"AReplyIsShownOnceHoweverOftenCoreSendsIt", aReplyIsShownOnceHoweverOftenCoreSendsIt, nil},
				{"AnApprovalIsOneDecision", func(t *testing.T, r *rig) { anAnswerIsOneDecision(t, r, Approve) }, nil},
				{"ADenialIsOneDecision", func(t *testing.T, r *rig) { anAnswerIsOneDecision(t, r, Deny) }, nil},
				{"AnAlwaysGrantsTheRuleOffered", func(t *testing.T, r *rig) { anAnswerIsOneDecision(t, r, Always) }, nil},
				{"AnAnswerIsForTheRequestItWasGivenOn", anAnswerIsForTheRequestItWasGivenOn, nil},
				{"CoresWordsShowAsTheyAre", coresWordsShowAsTheyAre, nil},
				{"ASettledRequestShowsItsOutcomeAndTakesNoAnswer", aSettledRequestShowsItsOutcomeAndTakesNoAnswer, nil},
				{"OversizedInputIsBoundedAndSaidSo", oversizedInputIsBoundedAndSaidSo, nil},
				{"ATurnsProgressIsShown", aTurnsProgressIsShown, nil},
				{"ComesBackAfterARestart", comesBackAfterARestart, nil},
				{"AMessageCoreDidNotKeepOutlivesARestart", aMessageCoreDidNotKeepOutlivesARestart, func(i Impl) bool { return i.Durable }},
				{"ARequestOutlivesARestart", aRequestOutlivesARestart, func(i Impl) bool { return i.Durable }},
			} {
				if c.only != nil && !c.only(impl) {
					continue // not promised by this transport: see Impl
				}
				t.Run(c.name, func(t *testing.T) {
					core := newCore(t)
					target := impl.New(t, core)
					core.waitJoins(t, 1)
					r := &rig{Target: target, Impl: impl, core: core}
					// What the transport did as it started (a greeting the
					// owner sent) is behind it once a message is through.
					r.barrier(t)
					c.test(t, r)
				})
			}
		})
	}
}

// rig is one case's core and transport.
type rig struct {
	Target
	Impl
	core     *Core
	barriers int
	notes    int
}

// restart restarts the transport and waits until it has joined core
// again.
func (r *rig) restart(t *testing.T) {
	t.Helper()
	r.core.mu.Lock()
	joins := r.core.joins
	r.core.mu.Unlock()
	r.Owner.Restart(t)
	r.core.waitJoins(t, joins+1)
}

// kept waits until the transport has taken core's confirmation of what
// the owner said: core's next word, sent after the confirmation on the
// same connection, is on the owner's screen.
func (r *rig) kept(t *testing.T) {
	t.Helper()
	r.notes++
	note := fmt.Sprintf("(noted, %d)", r.notes)
	r.core.route(t, contracts.KindOutbound, contracts.Outbound{Chat: r.Chat, Text: note})
	r.sees(t, note)
}

// waitShown waits until the owner's client shows what ok accepts.
func (r *rig) waitShown(t *testing.T, what string, ok func(shown string) bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(waitLimit)
	for !ok(r.Owner.Shown()) {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: waited %v for the owner to see %s; they see:\n%s", r.Name, waitLimit, what, lastLines(r.Owner.Shown()))
		}
	}
}

// sees waits until the owner's client shows text.
func (r *rig) sees(t *testing.T, text string) {
	t.Helper()
	r.waitShown(t, fmt.Sprintf("%q", text), func(shown string) bool { return strings.Contains(shown, text) })
}

// says has the owner say text and returns the message core got, from the
// owner's chat, with a ref core can confirm it by.
func (r *rig) says(t *testing.T, text string) contracts.Inbound {
	t.Helper()
	from := r.core.count()
	r.Owner.Say(t, text)
	return r.inbound(t, from, text, "at core")
}

// inbound waits for the owner's message text among what core got from
// from on (where says when that is), and checks where it says it comes
// from.
func (r *rig) inbound(t *testing.T, from int, text, where string) contracts.Inbound {
	t.Helper()
	got := r.core.next(t, fmt.Sprintf("the owner's message %q %s (the owner sees:\n%s\n)", shorten(text), where, lastLines(r.Owner.Shown())), from, message(text))
	var in contracts.Inbound
	if err := got.env.Decode(&in); err != nil {
		t.Fatal(err)
	}
	if got.env.From != contracts.RoleTransport || in.Chat != r.Chat {
		t.Errorf("%s: core got %q from %s in chat %q, want it from a transport in the owner's chat %q", r.Name, shorten(text), got.env.From, in.Chat, r.Chat)
	}
	if in.Ref == "" {
		t.Errorf("%s: core got %q without a ref, so it can neither confirm it nor know it again", r.Name, shorten(text))
	}
	return in
}

// barrier has the owner say a message and waits until core has it: what
// the owner did before reached core before it, on the transport's one
// connection, so whatever did not come by then is not coming. It returns
// where the message is among what core got.
func (r *rig) barrier(t *testing.T) int {
	t.Helper()
	r.barriers++
	text := fmt.Sprintf("and now for something else (%d)", r.barriers)
	from := r.core.count()
	r.Owner.Say(t, text)
	return r.core.next(t, fmt.Sprintf("the owner's message %q", text), from, message(text)).at
}

// coreGot checks that core got each of the owner's messages of texts
// times times in all (what should be, in words), once whatever else was
// coming is there.
func (r *rig) coreGot(t *testing.T, times int, should string, texts ...string) {
	t.Helper()
	r.barrier(t)
	for _, text := range texts {
		if n := len(r.core.all(0, message(text))); n != times {
			t.Errorf("%s: core got %q %d times, want %d (%s)", r.Name, shorten(text), n, times, should)
		}
	}
}

// request is a request as core parks it for the owner's chat.
func (r *rig) request(key string) contracts.ApprovalRequest {
	return contracts.ApprovalRequest{Turn: key, Chat: r.Chat, Tool: "run_shell", Note: "runs a command in the sandbox",
		Detail: "rm -rf build/" + key, Expires: time.Now().Add(time.Hour), Digest: "digest-of-" + key, Approving: "running run_shell"}
}

// askAndSee asks the owner req and waits until they see what it asks.
func (r *rig) askAndSee(t *testing.T, req contracts.ApprovalRequest) {
	t.Helper()
	r.core.ask(t, req)
	r.waitShown(t, fmt.Sprintf("the request %s: its tool and %q", req.Turn, req.Detail), func(shown string) bool {
		return strings.Contains(shown, req.Tool) && strings.Contains(shown, req.Detail)
	})
}

// noDecisionSince checks that core got no decision on key from from on,
// once the owner's next message is at core.
func (r *rig) noDecisionSince(t *testing.T, from int, key, after string) {
	t.Helper()
	upTo := r.barrier(t)
	for _, d := range r.core.all(from, decisionOn(key)) {
		if d.at < upTo {
			t.Errorf("%s: after %s, core got a decision %s, want none", r.Name, after, d.env.Body)
		}
	}
}

// outcomeMarks are how every transport shows what a settled request came
// to, whatever else it says.
var outcomeMarks = map[string]string{
	contracts.ApprovalApproved: "✅ Approved",
	contracts.ApprovalDenied:   "❌ Denied",
	contracts.ApprovalExpired:  "⌛ Expired",
	contracts.ApprovalReplaced: "↻ Replaced",
}

// lastLines is the end of what the owner sees, for a failing test's
// message.
func lastLines(shown string) string {
	if strings.TrimSpace(shown) == "" {
		return "\t(nothing)"
	}
	lines := strings.Split(shown, "\n")
	if len(lines) > 40 {
		lines = append([]string{fmt.Sprintf("[%d lines above]", len(lines)-40)}, lines[len(lines)-40:]...)
	}
	for i, l := range lines {
		lines[i] = "\t" + shorten(l)
	}
	return strings.Join(lines, "\n")
}
