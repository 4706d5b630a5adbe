package handoff

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
)

// sent is one reply the ledger routed.
type sent struct {
	transport string
	out       contracts.Outbound
}

// rig is a ledger over a real store, on a fake clock, whose routes the
// test reads; joined are the transports a route reaches.
type rig struct {
	store  *state.Store
	clock  *clock.Fake
	sent   []sent
	joined []string
}

func newRig(t *testing.T, root string) *rig {
	t.Helper()
	store, err := state.Open(statedir.Layout{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return &rig{store: store, clock: clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)), joined: []string{"telegram"}}
}

func (r *rig) ledger(store Store) *Ledger {
	return New(Config{Store: store, Clock: r.clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Send: func(transport string, out contracts.Outbound) error {
			if !slices.Contains(r.joined, transport) {
				return errors.New("no such transport joined")
			}
			r.sent = append(r.sent, sent{transport, out})
			return nil
		}})
}

// admit keeps a message of the owner's, as core does, and returns its id.
func (r *rig) admit(t *testing.T, text string) int64 {
	t.Helper()
	id, _, err := r.store.Intake().Admit(context.Background(), state.Admitted{Transport: "telegram", Chat: "42", Text: text, At: r.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// unanswered are the texts of the messages no reply answers yet, kept or
// delivered.
func (r *rig) unanswered(t *testing.T) []string {
	t.Helper()
	left, err := r.store.Intake().Unanswered(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range left {
		texts = append(texts, m.Text)
	}
	return texts
}

// TestAReplyIsTheOwnersUntilItsTransportHoldsIt: a reply goes with its
// key; a message it answers stays unanswered until the transport it is
// for confirms it — another transport's word counts for nothing — and a
// reply that waits goes again a minute after it was sent, and again when
// its transport joins, until it is confirmed.
func TestAReplyIsTheOwnersUntilItsTransportHoldsIt(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, t.TempDir())
	l := r.ledger(r.store.Replies())
	a, b := r.admit(t, "A"), r.admit(t, "B")
	l.Reply(ctx, "telegram", contracts.Outbound{Chat: "42", Text: "to A and B", Turn: "t1"}, []int64{a, b})
	if len(r.sent) != 1 || r.sent[0].out.Key != Key("t1", []int64{a, b}) || r.sent[0].out.Text != "to A and B" {
		t.Fatalf("routed %+v, want the reply with its key", r.sent)
	}
	key := r.sent[0].out.Key
	l.Confirmed(ctx, "cli", key)
	r.clock.Advance(ResendAfter - time.Second)
	l.Retry(ctx)
	if len(r.sent) != 1 {
		t.Errorf("sent again %d times within a minute", len(r.sent)-1)
	}
	r.clock.Advance(time.Second)
	l.Retry(ctx)
	l.Joined("telegram", r.clock.Now())
	l.Joined("cli", r.clock.Now())
	if len(r.sent) != 3 || r.sent[1].out.Key != key || r.sent[2].out.Key != key {
		t.Fatalf("after a minute and a join, routed %+v; want the reply twice more", r.sent)
	}
	// The messages the waiting reply answers are not for a turn again.
	if left := r.unanswered(t); len(left) != 0 {
		t.Errorf("messages left for a turn while their reply waits: %q", left)
	}
	l.Confirmed(ctx, "telegram", key)
	if kept, err := r.store.Replies().Kept(ctx); err != nil || len(kept) != 0 {
		t.Errorf("kept after the confirmation: %+v, %v", kept, err)
	}
	r.clock.Advance(ResendAfter)
	l.Retry(ctx)
	l.Joined("telegram", r.clock.Now())
	if len(r.sent) != 3 {
		t.Errorf("a confirmed reply was sent again: %+v", r.sent[3:])
	}
}

// TestAKeptReplyOutlivesARestart: a reply kept and not confirmed when
// core stopped goes, from the next core, to its transport when it joins,
// with the same key; once it confirms, the messages are answered.
func TestAKeptReplyOutlivesARestart(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	r := newRig(t, root)
	a := r.admit(t, "A")
	r.joined = nil // the reply reaches no transport: core stops first
	r.ledger(r.store.Replies()).Reply(ctx, "telegram", contracts.Outbound{Chat: "42", Text: "to A", Turn: "t1"}, []int64{a})
	r.store.Close()

	next := newRig(t, root)
	l := next.ledger(next.store.Replies())
	l.Load(ctx)
	l.Joined("cli", next.clock.Now())
	if len(next.sent) != 0 {
		t.Fatalf("another transport's join sent %+v", next.sent)
	}
	l.Joined("telegram", next.clock.Now())
	if len(next.sent) != 1 || next.sent[0].out.Text != "to A" || next.sent[0].out.Key != Key("t1", []int64{a}) {
		t.Fatalf("the join sent %+v, want the kept reply with its key", next.sent)
	}
	l.Confirmed(ctx, "telegram", next.sent[0].out.Key)
	left, err := next.store.Intake().Unanswered(ctx)
	if err != nil || len(left) != 0 {
		t.Errorf("unanswered once confirmed: %+v, %v", left, err)
	}
}

// unkeeping is a store whose disk is full for replies.
type unkeeping struct{ *state.Replies }

func (unkeeping) Keep(context.Context, state.KeptReply) error {
	return errors.New("database or disk is full")
}

// TestAReplyThatCannotBeKeptStillGoesUntilConfirmed: a reply the store
// cannot keep goes all the same, is held in memory and sent again until
// its transport confirms it, and then its messages are answered; past
// GiveUpAfter a reply is let go.
func TestAReplyThatCannotBeKeptStillGoesUntilConfirmed(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, t.TempDir())
	l := r.ledger(unkeeping{r.store.Replies()})
	a, b := r.admit(t, "A"), r.admit(t, "B")
	l.Reply(ctx, "telegram", contracts.Outbound{Chat: "42", Text: "to A", Turn: "t1"}, []int64{a})
	l.Reply(ctx, "telegram", contracts.Outbound{Chat: "42", Text: "to B", Turn: "t2"}, []int64{b})
	r.clock.Advance(ResendAfter)
	l.Retry(ctx)
	if len(r.sent) != 4 {
		t.Fatalf("routed %d times, want each reply twice", len(r.sent))
	}
	l.Confirmed(ctx, "telegram", r.sent[0].out.Key)
	if left := r.unanswered(t); !slices.Equal(left, []string{"B"}) {
		t.Errorf("unanswered after A's reply was confirmed: %q, want B", left)
	}
	r.clock.Advance(GiveUpAfter)
	l.Retry(ctx)
	if left := r.unanswered(t); len(left) != 0 {
		t.Errorf("unanswered after B's reply was given up on: %q, want none", left)
	}
	n := len(r.sent)
	r.clock.Advance(ResendAfter)
	l.Retry(ctx)
	if len(r.sent) != n {
		t.Errorf("a reply given up on was sent again: %+v", r.sent[n:])
	}
}

// TestARolledBackStoreDoesNotSilenceTheNextMessage: a state database
// that lost its write-ahead log (or was restored from its backup) hands
// out the ids of messages it forgot again. A transport remembers the
// keys it took for days; the reply to a new message under a reused id
// must not carry a key it already holds, or the transport drops it as a
// duplicate and the owner is never answered.
func TestARolledBackStoreDoesNotSilenceTheNextMessage(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	layout := statedir.Layout{Root: root}
	before := newRig(t, root)
	before.store.Close()
	saved, err := os.ReadFile(layout.DB())
	if err != nil {
		t.Fatal(err)
	}

	first := newRig(t, root)
	a := first.admit(t, "A")
	first.ledger(first.store.Replies()).Reply(ctx, "telegram", contracts.Outbound{Chat: "42", Text: "to A", Turn: "t1"}, []int64{a})
	taken := first.sent[0].out.Key // what the transport now holds
	first.store.Close()

	// The log is lost: the database is as it was before A.
	for _, f := range []string{layout.DB() + "-wal", layout.DB() + "-shm"} {
		os.Remove(f)
	}
	if err := os.WriteFile(layout.DB(), saved, 0o600); err != nil {
		t.Fatal(err)
	}
	next := newRig(t, root)
	b := next.admit(t, "B")
	if b != a {
		t.Fatalf("the rolled-back store gave B id %d, A had %d: the test no longer reuses an id", b, a)
	}
	next.ledger(next.store.Replies()).Reply(ctx, "telegram", contracts.Outbound{Chat: "42", Text: "to B", Turn: "t2"}, []int64{b})
	if got := next.sent[0].out.Key; got == taken {
		t.Errorf("the reply to B has key %q, which the transport took for A's reply: B is never answered", got)
	}
}
