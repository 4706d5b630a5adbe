package commands

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/mood"
	"shelldon/daemon/owner"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/daemon/turns"
)

// silent is an approval notifier that shows nothing: these tests read
// the commands' answers only.
type silent struct{}

func (silent) Ask(approval.Audience, contracts.ApprovalRequest) {}
func (silent) Settled(string, string)                           {}
func (silent) Tell(approval.Audience, string)                   {}

// idle is a turn machine with no turn in flight and n messages pending.
type idle struct{ n int }

func (idle) Current() *turns.Turn { return nil }
func (i idle) Pending() int       { return i.n }

type rig struct {
	h       *Handler
	store   *state.Store
	clk     *clock.Fake
	answers []contracts.Outbound
	said    []string // what /schedule and /restore were asked
}

var owned = turns.Origin{Transport: "telegram", Chat: "42"}

// newRig is a Handler over a real store and approval authority, on a
// fake clock; the other parts' answers are recorded stand-ins.
func newRig(t *testing.T) *rig {
	layout := statedir.Layout{Root: t.TempDir()}
	store, err := state.Open(layout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	clk := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	log := slog.New(slog.DiscardHandler)
	r := &rig{store: store, clk: clk}
	started := clk.Now()
	r.h = &Handler{
		Config: config.Default(), Store: store, Layout: layout, Clock: clk, Log: log, Turns: idle{n: 2},
		Auth:    approval.New(approval.Config{Store: store, Notify: silent{}, Clock: clk, Expiry: time.Hour, Log: log}),
		Reply:   func(_ turns.Origin, out contracts.Outbound) { r.answers = append(r.answers, out) },
		Started: func() time.Time { return started },
		Mood:    func() mood.State { return mood.State{Mood: "happy", Why: "a test", Since: started} },
		Budget:  func(context.Context) string { return "Budget: plenty." },
		Schedule: func(_ context.Context, arg string) string {
			r.said = append(r.said, "schedule "+arg)
			return "schedules"
		},
		Writes: func() owner.WriteFailures { return owner.WriteFailures{} },
		Tools:  func() owner.ToolFacts { return owner.ToolFacts{Builtin: []string{"read_file"}} },
		Restore: func(_ context.Context, name string) (string, bool) {
			r.said = append(r.said, "restore "+name)
			return "restored " + name, false
		},
	}
	return r
}

// say types text at the owner's chat and returns the answer, or fails if
// text was not taken as a command.
func (r *rig) say(t *testing.T, text string) contracts.Outbound {
	t.Helper()
	if !r.h.Answer(context.Background(), owned, contracts.Inbound{Chat: owned.Chat, Text: text}) {
		t.Fatalf("%q was not taken as a command", text)
	}
	return r.answers[len(r.answers)-1]
}

// TestHandlerAnswersOnlyCommands: a message for the model, a spoken one
// or a photo's caption is no command; an unknown command and a bare
// /restore are answered, refused, so a typo never reaches the model.
func TestHandlerAnswersOnlyCommands(t *testing.T) {
	r := newRig(t)
	for _, in := range []contracts.Inbound{{Text: "hello"}, {Text: "/status", Spoken: true}} {
		if r.h.Answer(context.Background(), owned, in) {
			t.Errorf("Answer(%+v) took it as a command", in)
		}
	}
	for _, text := range []string{"/statsu", RestoreCommand} {
		if out := r.say(t, text); !out.Refused {
			t.Errorf("%s answered %q, not refused", text, out.Text)
		}
	}
	r.say(t, RestoreCommand+" calc")
	r.say(t, "/schedule list")
	if got := strings.Join(r.said, ", "); got != "restore calc, schedule list" {
		t.Errorf("the parts were asked %q, want restore calc, schedule list", got)
	}
	if out := r.say(t, "/help"); !strings.Contains(out.Text, "/status") {
		t.Errorf("/help said %q, which names no /status", out.Text)
	}
}

// TestHandlerRevokesRules: /rules lists the rules in the store, /rules
// revoke N drops rule N, and a rule that is not there, or a misspelt
// revoke, is refused with how to say it.
func TestHandlerRevokesRules(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	if out := r.say(t, "/rules"); !strings.HasPrefix(out.Text, "No rules") {
		t.Errorf("/rules with none said %q", out.Text)
	}
	now := r.clk.Now()
	rule, err := r.store.Rules().Grant(ctx, state.Rule{Tool: "run_shell", Pattern: "git status", Words: "git status in the workspace", Granted: now, Expires: now.Add(24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if out := r.say(t, "/rules"); !strings.Contains(out.Text, fmt.Sprintf("%d. git status in the workspace", rule.ID)) {
		t.Errorf("/rules said %q, without the rule granted", out.Text)
	}
	for _, bad := range []string{"/rules revoke 99", "/rules drop 1", "/rules revoke x"} {
		if out := r.say(t, bad); !out.Refused {
			t.Errorf("%s answered %q, not refused", bad, out.Text)
		}
	}
	if out := r.say(t, fmt.Sprintf("/rules revoke %d", rule.ID)); out.Refused || !strings.Contains(out.Text, "revoked") {
		t.Errorf("revoking rule %d said %q", rule.ID, out.Text)
	}
	if left, err := r.store.Rules().All(ctx); err != nil || len(left) != 0 {
		t.Errorf("after revoking, the store holds %v (%v), want no rule", left, err)
	}
}

// TestHandlerShowsPendingAndStatus: /pending counts what waits in the
// authority, and refuses a page that is not a number; /status says the
// messages pending, the mood and the budget.
func TestHandlerShowsPendingAndStatus(t *testing.T) {
	r := newRig(t)
	if out := r.say(t, "/pending"); out.Text != "Nothing is waiting for your answer." {
		t.Errorf("/pending with nothing waiting said %q", out.Text)
	}
	p := approval.TokenCapPayload{Text: "hello", Today: 10, Cap: 5}
	if err := r.h.Auth.(*approval.Authority).Park(context.Background(), approval.Request{Key: approval.NewKey(), Kind: approval.TokenCap,
		Origin: approval.Audience(owned), Shown: approval.RenderTokenCap(p), Digest: approval.TokenCapDigest(p), TokenCap: &p}); err != nil {
		t.Fatal(err)
	}
	if out := r.say(t, "/pending"); out.Refused || !strings.Contains(out.Text, "One request is waiting") {
		t.Errorf("/pending with one waiting said %q", out.Text)
	}
	if out := r.say(t, "/pending two"); !out.Refused {
		t.Errorf("/pending two answered %q, not refused", out.Text)
	}
	out := r.say(t, "/status")
	for _, want := range []string{"happy", "Budget: plenty.", "2"} {
		if !strings.Contains(out.Text, want) {
			t.Errorf("/status said\n%s\nwithout %q", out.Text, want)
		}
	}
}
