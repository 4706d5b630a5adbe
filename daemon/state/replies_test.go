package state

import (
	"context"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/statedir"
)

// TestAKeptReplysMessagesAreAnsweredOnceDelivered: the messages a kept
// reply answers are not taken up again after a restart (their reply goes
// again instead), and are answered only once the reply is delivered; a
// reply that could not be kept answers the messages it names.
func TestAKeptReplysMessagesAreAnsweredOnceDelivered(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	s := openStore(t, l)
	ctx := context.Background()
	var ids []int64
	for _, text := range []string{"A", "B", "C"} {
		id, _, err := s.Intake().Admit(ctx, Admitted{Transport: "telegram", Chat: "42", Text: text, At: epoch})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	reply := KeptReply{Key: "m1.2", Transport: "telegram", Reply: contracts.Outbound{Chat: "42", Text: "to A and B", Key: "m1.2"},
		Messages: ids[:2], At: epoch}
	if err := s.Replies().Keep(ctx, reply); err != nil {
		t.Fatal(err)
	}
	s.Close() // a restart
	s = openStore(t, l)
	kept, err := s.Replies().Kept(ctx)
	if err != nil || len(kept) != 1 || kept[0].Key != "m1.2" || kept[0].Reply.Text != "to A and B" || len(kept[0].Messages) != 2 {
		t.Fatalf("Replies().Kept after a restart = %+v, %v; want the reply to A and B", kept, err)
	}
	if left, err := s.Intake().Unanswered(ctx); err != nil || len(left) != 1 || left[0].Text != "C" {
		t.Fatalf("Unanswered with A and B's reply kept = %+v, %v; want C alone", left, err)
	}
	if err := s.Replies().Delivered(ctx, "m1.2", nil, epoch.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.Replies().Delivered(ctx, "m3", ids[2:], epoch.Add(time.Second)); err != nil { // never kept: a full disk
		t.Fatal(err)
	}
	if left, err := s.Intake().Unanswered(ctx); err != nil || len(left) != 0 {
		t.Errorf("Unanswered after both were delivered = %+v, %v; want none", left, err)
	}
	if kept, err := s.Replies().Kept(ctx); err != nil || len(kept) != 0 {
		t.Errorf("Replies().Kept after delivery = %+v, %v; want none", kept, err)
	}
}

// TestATransportTakesAReplyOnce: a reply taken under a key is queued
// whole, in one go; the same key again queues nothing, until the key is
// older than KeepKeysFor.
func TestATransportTakesAReplyOnce(t *testing.T) {
	s := openStore(t, statedir.Layout{Root: t.TempDir()})
	ctx := context.Background()
	items := []OutboxEntry{{Lane: "chat:42", Kind: "message", Body: []byte("one")}, {Lane: "chat:42", Kind: "message", Body: []byte("two")}}
	for i, want := range []bool{true, false} {
		taken, err := s.Queues().TakeReply(ctx, "telegram", "m5", items, epoch.Add(time.Duration(i)*time.Minute))
		if err != nil || taken != want {
			t.Fatalf("TakeReply #%d = %v, %v; want %v", i+1, taken, err, want)
		}
	}
	if n, err := s.Queues().OutboxLen(ctx, "telegram"); err != nil || n != 2 {
		t.Errorf("the outbox holds %d items (%v), want the reply's 2 once", n, err)
	}
	if taken, err := s.Queues().TakeReply(ctx, "telegram", "m5", items, epoch.Add(KeepKeysFor+time.Minute)); err != nil || !taken {
		t.Errorf("TakeReply past KeepKeysFor = %v, %v; want the key forgotten", taken, err)
	}
	if _, err := s.Queues().TakeReply(ctx, "telegram", "m6", []OutboxEntry{{Lane: "chat:42", Kind: "message", Body: make([]byte, MaxOutboxBytes+1)}}, epoch); err == nil {
		t.Error("TakeReply took an item past MaxOutboxBytes")
	}
	if n, err := s.Queues().OutboxLen(ctx, "telegram"); err != nil || n != 4 {
		t.Errorf("the outbox holds %d items (%v), want 4: a refused batch queues nothing", n, err)
	}
}
