package intake

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/media"
	"shelldon/daemon/mood"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/daemon/turns"
)

type rig struct {
	in      *Intake
	store   *state.Store
	acks    []string // the refs acknowledged
	started []string // the turns started: their text and message ids
	told    []string // what the owner was told
	handed  []string // the replies handed to a transport
	felt    []mood.Event
}

var phone = turns.Origin{Transport: "telegram", Chat: "42"}

// newRig is an Intake over a real store and turn machine, on a fake
// clock; the other parts are recorded stand-ins.
func newRig(t *testing.T, store *state.Store) *rig {
	layout := statedir.Layout{Root: t.TempDir()}
	if store == nil {
		var err error
		if store, err = state.Open(layout); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
	}
	clk := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	log := slog.New(slog.DiscardHandler)
	r := &rig{store: store}
	r.in = &Intake{
		Store: store.Intake(), Media: media.New(t.TempDir(), func(_ string, err error) error { return err }, log),
		Turns: turns.New(clk, time.Minute, time.Second, func(turns.Event) {}), Clock: clk, Log: log, Workspace: t.TempDir(),
		Failed: func(_ string, err error) error { return err },
		Route: func(env contracts.Envelope) error {
			var ack contracts.InboundAck
			if err := env.Decode(&ack); err != nil {
				return err
			}
			r.acks = append(r.acks, env.To+"/"+ack.Ref)
			return nil
		},
		Hand: func(_ context.Context, transport string, out contracts.Outbound, messages []int64) {
			r.handed = append(r.handed, fmt.Sprintf("%s %q %v", transport, out.Text, messages))
		},
		Reply: func(turns.Origin, contracts.Outbound) {},
		Tell:  func(_ approval.Audience, text string) { r.told = append(r.told, text) },
		Feel:  func(ev mood.Event) { r.felt = append(r.felt, ev) },
		Start: func(_ context.Context, adm turns.Admission) {
			r.started = append(r.started, fmt.Sprintf("%q %v", adm.Text, adm.Messages))
		},
		Stopping: func() bool { return false },
		OnLoop:   func(func(context.Context)) {},
	}
	return r
}

func (r *rig) unanswered(t *testing.T) []string {
	t.Helper()
	left, err := r.store.Intake().Unanswered(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range left {
		out = append(out, m.Text)
	}
	return out
}

// TestIntakeKeepsBeforeConfirming: a message is in the store before its
// transport hears it is kept, and starts a turn; the same message
// delivered again (a transport's retry) starts none; a message during a
// turn waits in the pending slot; once answered, none is left.
func TestIntakeKeepsBeforeConfirming(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	r.in.Route = func(env contracts.Envelope) error {
		if got := r.unanswered(t); len(got) == 0 {
			t.Error("the transport heard its message is kept before it was")
		}
		r.acks = append(r.acks, env.To)
		return nil
	}
	r.in.Take(ctx, phone, contracts.Inbound{Chat: phone.Chat, Ref: "u1", Text: "hello"})
	r.in.Take(ctx, phone, contracts.Inbound{Chat: phone.Chat, Ref: "u1", Text: "hello"})
	r.in.Take(ctx, phone, contracts.Inbound{Chat: phone.Chat, Ref: "u2", Text: "and this"})
	if got := strings.Join(r.started, "; "); got != `"hello" [1]` {
		t.Errorf("turns started: %s, want only hello's", got)
	}
	if n := r.in.Turns.Pending(); n != 1 {
		t.Errorf("%d messages pending, want 1", n)
	}
	if len(r.acks) != 3 || len(r.felt) != 2 {
		t.Errorf("acknowledged %d times and felt %d messages, want 3 and 2", len(r.acks), len(r.felt))
	}
	turn := &turns.Turn{ID: "T1", Admission: turns.Admission{Origin: turns.Origin{}, Messages: []int64{1, 2}}}
	r.in.Answer(ctx, turn, contracts.Outbound{Text: "hi"}) // no transport: answered at once
	if got := r.unanswered(t); len(got) != 0 {
		t.Errorf("after the answer, %q are unanswered", got)
	}
}

// TestIntakeHandsRepliesToTheirTransport: a reply for a transport goes
// to the hand-off, which marks the messages answered once the transport
// holds it: until then they stay the owner's.
func TestIntakeHandsRepliesToTheirTransport(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	r.in.Take(ctx, phone, contracts.Inbound{Chat: phone.Chat, Ref: "u1", Text: "hello"})
	r.in.Answer(ctx, &turns.Turn{ID: "T1", Admission: turns.Admission{Origin: phone, Messages: []int64{1}}}, contracts.Outbound{Text: "hi"})
	if got := strings.Join(r.handed, "; "); got != `telegram "hi" [1]` {
		t.Errorf("handed %s", got)
	}
	if got := r.unanswered(t); len(got) != 1 {
		t.Errorf("unanswered %q before the transport holds the reply, want hello", got)
	}
}

// TestIntakeTakesUpWhatWasLeft, as a crash: what an earlier core left
// unanswered is taken up once its transport joins, grouped as its turns
// had it; a message whose turn stopped core maxTries times is let go,
// with the owner told, so that it cannot stop every core that starts.
func TestIntakeTakesUpWhatWasLeft(t *testing.T) {
	before := newRig(t, nil)
	ctx := context.Background()
	for n, text := range []string{"crash me", "first", "second", "third"} {
		before.in.Take(ctx, phone, contracts.Inbound{Chat: phone.Chat, Ref: fmt.Sprint(n), Text: text})
	}
	store := before.store
	for range maxTries {
		if err := store.Intake().TakeUp(ctx, "T0", []int64{1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Intake().TakeUp(ctx, "T1", []int64{2, 3}); err != nil {
		t.Fatal(err)
	}
	// Core stops here; the next one starts over the same store.
	r := newRig(t, store)
	r.in.Load(ctx)
	r.in.Joined(ctx, "terminal") // nothing of its
	if len(r.started)+len(r.told) != 0 {
		t.Fatalf("another transport's joining took up %q, told %q", r.started, r.told)
	}
	r.in.Joined(ctx, phone.Transport)
	if got := strings.Join(r.started, "; "); got != `"first\nsecond" [2 3]` {
		t.Errorf("took up %s, want first and second as their turn had them", got)
	}
	if n := r.in.Turns.Pending(); n != 1 {
		t.Errorf("%d pending, want third waiting as the catch-up", n)
	}
	if len(r.told) != 2 || !strings.Contains(r.told[0], "let it go") || !strings.Contains(r.told[0], "crash me") {
		t.Errorf("the owner was told %q, want crash me let go, then the rest taken up", r.told)
	}
	if got := r.unanswered(t); strings.Join(got, ",") != "first,second,third" {
		t.Errorf("unanswered %q, want crash me let go", got)
	}
}
