package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"shelldon/daemon/statedir"
)

func inboxIDs(items []InboxItem) []int64 {
	var ids []int64
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	return ids
}

func update(id int64) InboxItem {
	return InboxItem{ID: id, Body: fmt.Appendf(nil, `{"update_id":%d}`, id)}
}

func TestInboxSurvivesReopen(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	ctx := context.Background()
	first := openStore(t, l)
	if err := first.Queues().Receive(ctx, "telegram", []InboxItem{update(7), update(8), update(9)}); err != nil {
		t.Fatal(err)
	}
	first.Close() // as a crash before any was handled

	second := openStore(t, l)
	if off, err := second.Queues().Offset(ctx, "telegram"); err != nil || off != 9 {
		t.Errorf("Offset after reopening = %d, %v, want 9", off, err)
	}
	items, err := second.Queues().Unhandled(ctx, "telegram", 10)
	if err != nil || !slices.Equal(inboxIDs(items), []int64{7, 8, 9}) {
		t.Fatalf("Unhandled after reopening = %v, %v, want [7 8 9]", inboxIDs(items), err)
	}
	if !bytes.Equal(items[1].Body, update(8).Body) {
		t.Errorf("update 8 body = %q, want %q", items[1].Body, update(8).Body)
	}
	for _, id := range []int64{7, 9} {
		if err := second.Queues().Handled(ctx, "telegram", id); err != nil {
			t.Fatal(err)
		}
	}
	second.Close()

	third := openStore(t, l)
	if items, err := third.Queues().Unhandled(ctx, "telegram", 10); err != nil || !slices.Equal(inboxIDs(items), []int64{8}) {
		t.Errorf("Unhandled after handling 7 and 9 and reopening = %v, %v, want [8]", inboxIDs(items), err)
	}
	if off, err := third.Queues().Offset(ctx, "telegram"); err != nil || off != 9 {
		t.Errorf("Offset after handling the highest = %d, %v, want 9 kept", off, err)
	}
}

func TestReceive(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		batches    [][]InboxItem
		wantOffset int64
		wantIDs    []int64
		wantBodies map[int64]string // bodies to check, by id
	}{
		{"none yet", nil, 0, nil, nil},
		{"empty batch", [][]InboxItem{{}}, 0, nil, nil},
		{"one batch", [][]InboxItem{{update(3), update(1), update(2)}}, 3, []int64{1, 2, 3}, nil},
		{"duplicate in a batch keeps the first", [][]InboxItem{{{ID: 5, Body: []byte("first")}, {ID: 5, Body: []byte("second")}}},
			5, []int64{5}, map[int64]string{5: "first"}},
		{"duplicate across batches keeps the first", [][]InboxItem{{{ID: 5, Body: []byte("first")}}, {{ID: 5, Body: []byte("again")}, update(6)}},
			6, []int64{5, 6}, map[int64]string{5: "first"}},
		{"a lower batch lowers the offset: the ids started again lower", [][]InboxItem{{update(10)}, {update(4)}}, 4, []int64{4, 10}, nil},
		{"no body", [][]InboxItem{{{ID: 1}}}, 1, []int64{1}, map[int64]string{1: ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t).Queues()
			for _, batch := range tt.batches {
				if err := s.Receive(ctx, "telegram", batch); err != nil {
					t.Fatalf("Receive(%v) = %v", inboxIDs(batch), err)
				}
			}
			if off, err := s.Offset(ctx, "telegram"); err != nil || off != tt.wantOffset {
				t.Errorf("Offset = %d, %v, want %d", off, err, tt.wantOffset)
			}
			items, err := s.Unhandled(ctx, "telegram", 100)
			if err != nil || !slices.Equal(inboxIDs(items), tt.wantIDs) {
				t.Fatalf("Unhandled = %v, %v, want %v", inboxIDs(items), err, tt.wantIDs)
			}
			for _, it := range items {
				if want, ok := tt.wantBodies[it.ID]; ok && string(it.Body) != want {
					t.Errorf("body of %d = %q, want %q", it.ID, it.Body, want)
				}
			}
			// Another transport's inbox is its own.
			if off, err := s.Offset(ctx, "other"); err != nil || off != 0 {
				t.Errorf("Offset(other) = %d, %v, want 0", off, err)
			}
			if items, err := s.Unhandled(ctx, "other", 100); err != nil || len(items) != 0 {
				t.Errorf("Unhandled(other) = %v, %v, want none", inboxIDs(items), err)
			}
		})
	}
}

func TestReceiveRefusesABadBatchWhole(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		transport string
		batch     []InboxItem
		wantText  string
	}{
		{"no transport", "", []InboxItem{update(11)}, "no transport"},
		{"zero id", "telegram", []InboxItem{update(11), {ID: 0}}, "update id 0"},
		{"negative id", "telegram", []InboxItem{{ID: -3}, update(12)}, "update id -3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t).Queues()
			if err := s.Receive(ctx, "telegram", []InboxItem{update(2)}); err != nil {
				t.Fatal(err)
			}
			err := s.Receive(ctx, tt.transport, tt.batch)
			if err == nil || !strings.Contains(err.Error(), tt.wantText) {
				t.Fatalf("Receive(%q, %v) = %v, want an error mentioning %q", tt.transport, inboxIDs(tt.batch), err, tt.wantText)
			}
			if off, _ := s.Offset(ctx, "telegram"); off != 2 {
				t.Errorf("Offset after a refused batch = %d, want 2", off)
			}
			if items, _ := s.Unhandled(ctx, "telegram", 10); !slices.Equal(inboxIDs(items), []int64{2}) {
				t.Errorf("Unhandled after a refused batch = %v, want [2]", inboxIDs(items))
			}
		})
	}
}

// TestReceiveIsOneTransaction: when the offset cannot be raised, the batch
// is not kept either, so the transport asks for it again rather than
// holding updates its server will send anew.
func TestReceiveIsOneTransaction(t *testing.T) {
	s := newStore(t).Queues()
	ctx := context.Background()
	if _, err := s.store.db.Exec(`CREATE TRIGGER offsets_fail BEFORE INSERT ON transport_offsets BEGIN SELECT RAISE(ABORT, 'disk full'); END`); err != nil {
		t.Fatal(err)
	}
	if err := s.Receive(ctx, "telegram", []InboxItem{update(1), update(2)}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Receive with the offset failing = %v, want the failure", err)
	}
	if items, err := s.Unhandled(ctx, "telegram", 10); err != nil || len(items) != 0 {
		t.Errorf("Unhandled after a failed Receive = %v, %v, want none kept", inboxIDs(items), err)
	}
}

func TestUnhandledLimit(t *testing.T) {
	s := newStore(t).Queues()
	ctx := context.Background()
	if err := s.Receive(ctx, "telegram", []InboxItem{update(30), update(10), update(20)}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		limit int
		want  []int64
	}{
		{-1, nil}, {0, nil}, {1, []int64{10}}, {2, []int64{10, 20}}, {5, []int64{10, 20, 30}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.limit), func(t *testing.T) {
			items, err := s.Unhandled(ctx, "telegram", tt.limit)
			if err != nil || !slices.Equal(inboxIDs(items), tt.want) {
				t.Errorf("Unhandled(%d) = %v, %v, want %v", tt.limit, inboxIDs(items), err, tt.want)
			}
		})
	}
	// Handling an update twice, or one never received, does nothing.
	for _, id := range []int64{10, 10, 99} {
		if err := s.Handled(ctx, "telegram", id); err != nil {
			t.Errorf("Handled(%d) = %v", id, err)
		}
	}
	if items, _ := s.Unhandled(ctx, "telegram", 5); !slices.Equal(inboxIDs(items), []int64{20, 30}) {
		t.Errorf("Unhandled after handling 10 = %v, want [20 30]", inboxIDs(items))
	}
}

func TestOutboxInOrder(t *testing.T) {
	s := newStore(t).Queues()
	ctx := context.Background()
	var ids []int64
	for i, transport := range []string{"telegram", "other", "telegram", "telegram"} {
		id, err := s.Enqueue(ctx, transport, "chat:1", "reply", fmt.Appendf(nil, "body %d", i), epoch.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if n, err := s.OutboxLen(ctx, "telegram"); err != nil || n != 3 {
		t.Errorf("OutboxLen(telegram) = %d, %v, want 3", n, err)
	}

	head, ok, err := s.NextOutbox(ctx, "telegram", "chat:1")
	if err != nil || !ok || head.ID != ids[0] || string(head.Body) != "body 0" || head.Kind != "reply" || head.Transport != "telegram" || head.Lane != "chat:1" ||
		head.Attempts != 0 || !head.Created.Equal(epoch) || !head.NotBefore.Equal(epoch) {
		t.Fatalf("NextOutbox = %+v, %v, %v, want body 0 created and due at %v", head, ok, err, epoch)
	}

	// A failed head stays the head, however far off its next attempt.
	later := epoch.Add(90*time.Second + 123*time.Millisecond)
	for want := 1; want <= 2; want++ {
		attempts, err := s.Postpone(ctx, head.ID, later)
		if err != nil || attempts != want {
			t.Errorf("Postpone #%d = %d, %v, want %d", want, attempts, err, want)
		}
	}
	again, ok, err := s.NextOutbox(ctx, "telegram", "chat:1")
	if err != nil || !ok || again.ID != head.ID || again.Attempts != 2 || !again.NotBefore.Equal(later) {
		t.Errorf("NextOutbox after two Postpones = %+v, %v, %v, want the same item, 2 attempts, due at %v", again, ok, err, later)
	}

	var sent []string
	for {
		item, ok, err := s.NextOutbox(ctx, "telegram", "chat:1")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		sent = append(sent, string(item.Body))
		if err := s.Sent(ctx, item.ID); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"body 0", "body 2", "body 3"}; !slices.Equal(sent, want) {
		t.Errorf("sent %q, want %q", sent, want)
	}
	if n, err := s.OutboxLen(ctx, "telegram"); err != nil || n != 0 {
		t.Errorf("OutboxLen(telegram) after sending all = %d, %v, want 0", n, err)
	}
	if other, ok, err := s.NextOutbox(ctx, "other", "chat:1"); err != nil || !ok || string(other.Body) != "body 1" {
		t.Errorf("NextOutbox(other) = %+v, %v, %v, want body 1 untouched", other, ok, err)
	}

	// A new item never takes the id of one sent, so a stale id names nothing.
	id, err := s.Enqueue(ctx, "telegram", "chat:1", "reply", []byte("late"), epoch)
	if err != nil || id <= ids[3] {
		t.Errorf("Enqueue after sending = %d, %v, want an id above %d", id, err, ids[3])
	}
	if err := s.Sent(ctx, ids[0]); err != nil {
		t.Errorf("Sent of an item already sent = %v, want nil", err)
	}
	if _, err := s.Postpone(ctx, ids[0], later); !errors.Is(err, ErrNoOutboxItem) {
		t.Errorf("Postpone of an item already sent = %v, want ErrNoOutboxItem", err)
	}
	if n, _ := s.OutboxLen(ctx, "telegram"); n != 1 {
		t.Errorf("OutboxLen after a stale Sent = %d, want the late item kept", n)
	}
}

func TestOutboxSurvivesReopen(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	ctx := context.Background()
	first := openStore(t, l)
	for _, body := range []string{"one", "two"} {
		if _, err := first.Queues().Enqueue(ctx, "telegram", "chat:1", "reply", []byte(body), epoch); err != nil {
			t.Fatal(err)
		}
	}
	first.Close()
	again := openStore(t, l)
	item, ok, err := again.Queues().NextOutbox(ctx, "telegram", "chat:1")
	if err != nil || !ok || string(item.Body) != "one" {
		t.Errorf("NextOutbox after reopening = %+v, %v, %v, want one", item, ok, err)
	}
}

// TestOutboxLanes: each lane goes in order, and none waits for another's
// head, however far off its next attempt.
func TestOutboxLanes(t *testing.T) {
	s := newStore(t).Queues()
	ctx := context.Background()
	for _, it := range []struct{ lane, body string }{{"chat:1", "a1"}, {"chat:2", "b1"}, {"chat:1", "a2"}, {"edit:1", "e1"}, {"chat:2", "b2"}} {
		if _, err := s.Enqueue(ctx, "telegram", it.lane, "reply", []byte(it.body), epoch); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Enqueue(ctx, "other", "chat:9", "reply", []byte("x"), epoch); err != nil {
		t.Fatal(err)
	}
	if lanes, err := s.OutboxLanes(ctx, "telegram"); err != nil || !slices.Equal(lanes, []string{"chat:1", "chat:2", "edit:1"}) {
		t.Errorf("OutboxLanes = %q, %v, want chat:1, chat:2 and edit:1", lanes, err)
	}
	stuck, _, err := s.NextOutbox(ctx, "telegram", "chat:2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Postpone(ctx, stuck.ID, epoch.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, lane := range []string{"chat:1", "edit:1"} {
		for {
			item, ok, err := s.NextOutbox(ctx, "telegram", lane)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			sent = append(sent, string(item.Body))
			if err := s.Sent(ctx, item.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if want := []string{"a1", "a2", "e1"}; !slices.Equal(sent, want) {
		t.Errorf("sent %q past the stuck lane, want %q", sent, want)
	}
	if head, ok, err := s.NextOutbox(ctx, "telegram", "chat:2"); err != nil || !ok || head.ID != stuck.ID || head.Attempts != 1 {
		t.Errorf("NextOutbox(chat:2) = %+v, %v, %v, want b1 still its head", head, ok, err)
	}
	if lanes, err := s.OutboxLanes(ctx, "telegram"); err != nil || !slices.Equal(lanes, []string{"chat:2"}) {
		t.Errorf("OutboxLanes after sending = %q, %v, want only chat:2", lanes, err)
	}
}

// TestHoldCountsNoAttempt: a wait the server asked for, or an outage,
// moves the next attempt without counting a failed one.
func TestHoldCountsNoAttempt(t *testing.T) {
	s := newStore(t).Queues()
	ctx := context.Background()
	id, err := s.Enqueue(ctx, "telegram", "chat:1", "reply", []byte("hi"), epoch)
	if err != nil {
		t.Fatal(err)
	}
	later := epoch.Add(7*time.Second + 500*time.Microsecond)
	if err := s.Hold(ctx, id, later); err != nil {
		t.Fatal(err)
	}
	item, _, err := s.NextOutbox(ctx, "telegram", "chat:1")
	if err != nil || item.Attempts != 0 || !item.NotBefore.Equal(epoch.Add(7*time.Second+time.Millisecond)) {
		t.Errorf("after Hold: %+v, %v; want no attempt counted and the wait rounded up to the millisecond", item, err)
	}
	if err := s.Sent(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := s.Hold(ctx, id, later); !errors.Is(err, ErrNoOutboxItem) {
		t.Errorf("Hold of an item sent = %v, want ErrNoOutboxItem", err)
	}
}

// TestGiveUpCountsUndelivered: every reply given up on is counted in the
// lane named, until the owner is told of it; one given up on while the
// owner was being told stays counted.
func TestGiveUpCountsUndelivered(t *testing.T) {
	s := newStore(t).Queues()
	ctx := context.Background()
	var ids []int64
	for _, lane := range []string{"chat:1", "chat:1", "", "edit:1"} {
		id, err := s.Enqueue(ctx, "telegram", lane, "reply", []byte("x"), epoch)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for i, tell := range []string{"chat:1", "chat:1", "chat:1", ""} {
		if err := s.GiveUp(ctx, ids[i], tell); err != nil {
			t.Fatalf("GiveUp(%d, %q) = %v", ids[i], tell, err)
		}
	}
	// Given up on already: nothing more is counted.
	if err := s.GiveUp(ctx, ids[0], "chat:1"); err != nil {
		t.Errorf("GiveUp of an item gone = %v, want nil", err)
	}
	if n, err := s.OutboxLen(ctx, "telegram"); err != nil || n != 0 {
		t.Errorf("OutboxLen after giving up on all = %d, %v, want 0", n, err)
	}
	if n, err := s.Undelivered(ctx, "telegram", "chat:1"); err != nil || n != 3 {
		t.Errorf("Undelivered(chat:1) = %d, %v, want 3", n, err)
	}
	if n, err := s.Undelivered(ctx, "other", "chat:1"); err != nil || n != 0 {
		t.Errorf("Undelivered(other) = %d, %v, want 0", n, err)
	}
	if lanes, err := s.OutboxLanes(ctx, "telegram"); err != nil || !slices.Equal(lanes, []string{"chat:1"}) {
		t.Errorf("OutboxLanes with only a count = %q, %v, want chat:1: the owner must still be told", lanes, err)
	}
	if err := s.ToldUndelivered(ctx, "telegram", "chat:1", 2); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Undelivered(ctx, "telegram", "chat:1"); err != nil || n != 1 {
		t.Errorf("Undelivered after telling of 2 = %d, %v, want 1", n, err)
	}
	if err := s.ToldUndelivered(ctx, "telegram", "chat:1", 1); err != nil {
		t.Fatal(err)
	}
	if lanes, err := s.OutboxLanes(ctx, "telegram"); err != nil || len(lanes) != 0 {
		t.Errorf("OutboxLanes once told of all = %q, %v, want none", lanes, err)
	}
}

// TestGiveUpIsOneTransaction: an item is never gone without being counted.
func TestGiveUpIsOneTransaction(t *testing.T) {
	s := newStore(t).Queues()
	ctx := context.Background()
	id, err := s.Enqueue(ctx, "telegram", "chat:1", "reply", []byte("x"), epoch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.store.db.Exec(`CREATE TRIGGER undelivered_fail BEFORE INSERT ON transport_undelivered BEGIN SELECT RAISE(ABORT, 'disk full'); END`); err != nil {
		t.Fatal(err)
	}
	if err := s.GiveUp(ctx, id, "chat:1"); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("GiveUp with the count failing = %v, want the failure", err)
	}
	if n, err := s.OutboxLen(ctx, "telegram"); err != nil || n != 1 {
		t.Errorf("OutboxLen after a failed GiveUp = %d, %v, want the item kept", n, err)
	}
}

func TestEnqueueRefuses(t *testing.T) {
	s := newStore(t).Queues()
	ctx := context.Background()
	tests := []struct {
		name, transport, kind string
		body                  []byte
		wantIs                error
		wantText              string
	}{
		{"too big", "telegram", "reply", make([]byte, MaxOutboxBytes+1), ErrOutboxItemTooBig, fmt.Sprint(MaxOutboxBytes + 1)},
		{"no transport", "", "reply", []byte("x"), nil, "no transport"},
		{"no kind", "telegram", "", []byte("x"), nil, "no kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Enqueue(ctx, tt.transport, "chat:1", tt.kind, tt.body, epoch)
			if err == nil || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Enqueue(%q, %q, %d bytes) = %v, want an error wrapping %v mentioning %q", tt.transport, tt.kind, len(tt.body), err, tt.wantIs, tt.wantText)
			}
		})
	}
	if n, _ := s.OutboxLen(ctx, "telegram"); n != 0 {
		t.Fatalf("OutboxLen after refusals = %d, want 0", n)
	}
	for _, body := range [][]byte{make([]byte, MaxOutboxBytes), nil} {
		if _, err := s.Enqueue(ctx, "telegram", "chat:1", "reply", body, epoch); err != nil {
			t.Errorf("Enqueue of %d bytes = %v, want it taken", len(body), err)
		}
	}
}

func TestApprovalMessages(t *testing.T) {
	s := newStore(t).Queues()
	ctx := context.Background()
	msg := func(turn string, id int64, at time.Time) ApprovalMessage {
		return ApprovalMessage{Transport: "telegram", Turn: turn, Chat: "42", MessageID: id, HTML: fmt.Sprintf("<b>approve %s?</b> #%d", turn, id), At: at}
	}
	record := func(m ApprovalMessage) {
		t.Helper()
		if err := s.RecordApprovalMessage(ctx, m); err != nil {
			t.Fatalf("RecordApprovalMessage(%+v) = %v", m, err)
		}
	}
	record(msg("t1", 1, epoch))
	record(msg("t1", 2, epoch.Add(time.Minute)))
	record(msg("t2", 5, epoch))
	want := []ApprovalMessage{msg("t1", 1, epoch), msg("t1", 2, epoch.Add(time.Minute))}
	if got, err := s.ApprovalMessages(ctx, "telegram", "t1"); err != nil || !slices.Equal(got, want) {
		t.Errorf("ApprovalMessages(t1) = %+v, %v, want %+v", got, err, want)
	}
	// The key asked again: what showed it before goes, not what shows it now.
	if n, err := s.ForgetApprovalMessages(ctx, "telegram", "t1", epoch.Add(time.Minute)); err != nil || n != 1 {
		t.Errorf("ForgetApprovalMessages(t1, before the second) = %d, %v, want 1", n, err)
	}
	if got, _ := s.ApprovalMessages(ctx, "telegram", "t1"); !slices.Equal(got, want[1:]) {
		t.Errorf("ApprovalMessages(t1) after forgetting = %+v, want %+v", got, want[1:])
	}
	if got, _ := s.ApprovalMessages(ctx, "telegram", "t2"); !slices.Equal(got, []ApprovalMessage{msg("t2", 5, epoch)}) {
		t.Errorf("ApprovalMessages(t2) = %+v, want its one message untouched", got)
	}
	// Every request's, for the retention: another transport's stay.
	if err := s.RecordApprovalMessage(ctx, ApprovalMessage{Transport: "other", Turn: "t2", Chat: "1", MessageID: 1, At: epoch}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.ForgetApprovalMessages(ctx, "telegram", "", epoch.Add(time.Hour)); err != nil || n != 2 {
		t.Errorf("ForgetApprovalMessages(every request) = %d, %v, want 2", n, err)
	}
	if got, _ := s.ApprovalMessages(ctx, "other", "t2"); len(got) != 1 {
		t.Errorf("another transport's messages = %+v, want kept", got)
	}
}

func TestApprovalsRefuseBadInput(t *testing.T) {
	s := newStore(t).Queues()
	ctx := context.Background()
	tests := []struct {
		name     string
		err      error
		wantText string
	}{
		{"record without turn", s.RecordApprovalMessage(ctx, ApprovalMessage{Transport: "telegram"}), "no turn"},
		{"record without transport", s.RecordApprovalMessage(ctx, ApprovalMessage{Turn: "t1"}), "no transport"},
		{"count a stranger without transport", s.CountStranger(ctx, "", "bob", epoch), "no transport"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil || !strings.Contains(tt.err.Error(), tt.wantText) {
				t.Errorf("%s = %v, want an error mentioning %q", tt.name, tt.err, tt.wantText)
			}
		})
	}
	if got, _ := s.ApprovalMessages(ctx, "telegram", ""); len(got) != 0 {
		t.Errorf("a refused call left %+v behind", got)
	}
}

func TestStrangers(t *testing.T) {
	s := newStore(t).Queues()
	ctx := context.Background()
	if updates, senders, err := s.StrangerTotal(ctx); err != nil || updates != 0 || senders != 0 {
		t.Errorf("StrangerTotal of a new store = %d, %d, %v, want 0, 0", updates, senders, err)
	}
	long := strings.Repeat("é", maxSenderRunes+50)
	counts := []struct {
		transport, sender string
		at                time.Duration
	}{
		{"telegram", "alice", 0},
		{"telegram", "bob", time.Second},
		{"telegram", "alice", 2 * time.Second},
		{"other", "alice", 3 * time.Second},
		{"telegram", long, 4 * time.Second},
		{"telegram", long + "x", 5 * time.Second}, // the same sender, once clipped
	}
	for _, c := range counts {
		if err := s.CountStranger(ctx, c.transport, c.sender, epoch.Add(c.at)); err != nil {
			t.Fatal(err)
		}
	}
	clipped := strings.Repeat("é", maxSenderRunes)
	want := []Stranger{
		{"telegram", clipped, 2, epoch.Add(5 * time.Second)},
		{"other", "alice", 1, epoch.Add(3 * time.Second)},
		{"telegram", "alice", 2, epoch.Add(2 * time.Second)},
		{"telegram", "bob", 1, epoch.Add(time.Second)},
	}
	tests := []struct {
		limit int
		want  []Stranger
	}{
		{0, nil}, {-1, nil}, {2, want[:2]}, {10, want},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.limit), func(t *testing.T) {
			got, err := s.Strangers(ctx, tt.limit)
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("Strangers(%d) = %+v, %v, want %+v", tt.limit, got, err, tt.want)
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if g.Transport != w.Transport || g.Sender != w.Sender || g.Count != w.Count || !g.Last.Equal(w.Last) {
					t.Errorf("Strangers(%d)[%d] = %+v, want %+v", tt.limit, i, g, w)
				}
			}
		})
	}
	if updates, senders, err := s.StrangerTotal(ctx); err != nil || updates != 6 || senders != 4 {
		t.Errorf("StrangerTotal = %d, %d, %v, want 6 updates from 4 senders", updates, senders, err)
	}
}

func TestReadOnlyTransport(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	ctx := context.Background()
	writer := openStore(t, l)
	if err := writer.Queues().Receive(ctx, "telegram", []InboxItem{update(4)}); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Queues().Enqueue(ctx, "telegram", "chat:1", "reply", []byte("hi"), epoch); err != nil {
		t.Fatal(err)
	}
	if err := writer.Queues().RecordApprovalMessage(ctx, ApprovalMessage{Transport: "telegram", Turn: "t1", Chat: "1", MessageID: 3, At: epoch}); err != nil {
		t.Fatal(err)
	}
	if err := writer.Queues().CountStranger(ctx, "telegram", "bob", epoch); err != nil {
		t.Fatal(err)
	}
	reader, err := OpenReadOnly(l)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()

	if off, err := reader.Queues().Offset(ctx, "telegram"); err != nil || off != 4 {
		t.Errorf("read-only Offset = %d, %v, want 4", off, err)
	}
	if n, err := reader.Queues().OutboxLen(ctx, "telegram"); err != nil || n != 1 {
		t.Errorf("read-only OutboxLen = %d, %v, want 1", n, err)
	}
	if msgs, err := reader.Queues().ApprovalMessages(ctx, "telegram", "t1"); err != nil || len(msgs) != 1 {
		t.Errorf("read-only ApprovalMessages = %+v, %v, want the one recorded", msgs, err)
	}
	if updates, _, err := reader.Queues().StrangerTotal(ctx); err != nil || updates != 1 {
		t.Errorf("read-only StrangerTotal = %d, %v, want 1", updates, err)
	}

	_, enqueueErr := reader.Queues().Enqueue(ctx, "telegram", "chat:1", "reply", []byte("x"), epoch)
	_, postponeErr := reader.Queues().Postpone(ctx, 1, epoch)
	_, forgetErr := reader.Queues().ForgetApprovalMessages(ctx, "telegram", "", epoch.Add(time.Hour))
	writes := map[string]error{
		"Receive":                reader.Queues().Receive(ctx, "telegram", []InboxItem{update(5)}),
		"Handled":                reader.Queues().Handled(ctx, "telegram", 4),
		"Enqueue":                enqueueErr,
		"Postpone":               postponeErr,
		"Hold":                   reader.Queues().Hold(ctx, 1, epoch),
		"Sent":                   reader.Queues().Sent(ctx, 1),
		"GiveUp":                 reader.Queues().GiveUp(ctx, 1, "chat:1"),
		"ToldUndelivered":        reader.Queues().ToldUndelivered(ctx, "telegram", "chat:1", 1),
		"RecordApprovalMessage":  reader.Queues().RecordApprovalMessage(ctx, ApprovalMessage{Transport: "telegram", Turn: "t1"}),
		"ForgetApprovalMessages": forgetErr,
		"CountStranger":          reader.Queues().CountStranger(ctx, "telegram", "bob", epoch),
	}
	for name, err := range writes {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("read-only %s = %v, want ErrReadOnly", name, err)
		}
	}
	if msgs, _ := writer.Queues().ApprovalMessages(ctx, "telegram", "t1"); len(msgs) != 1 {
		t.Errorf("messages after the refused writes = %+v, want the one recorded", msgs)
	}
}

// TestUpgradeToTransportTables opens a database at schema version 5, as
// the release before the transport tables left it, with today's code.
func TestUpgradeToTransportTables(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	ctx := context.Background()
	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = migrations[:5]
	before := openStore(t, l)
	if _, err := before.Tools().Strike(ctx, "greet", "boom", epoch); err != nil {
		t.Fatal(err)
	}
	if _, err := before.db.Exec(`SELECT 1 FROM transport_inbox`); err == nil {
		t.Fatal("a version 5 database already has the transport tables; the test proves nothing")
	}
	before.Close()
	migrations = saved

	s := openStore(t, l)
	if v := userVersion(t, s.db.DB); v != len(migrations) {
		t.Errorf("user_version after the upgrade = %d, want %d", v, len(migrations))
	}
	if hs, err := s.Tools().Health(ctx); err != nil || len(hs) != 1 || hs[0].Strikes != 1 {
		t.Errorf("Tools().Health after the upgrade = %+v, %v, want greet's strike kept", hs, err)
	}
	if err := s.Queues().Receive(ctx, "telegram", []InboxItem{update(1)}); err != nil {
		t.Errorf("Receive after the upgrade = %v", err)
	}
	if _, err := s.Queues().Enqueue(ctx, "telegram", "chat:1", "reply", []byte("hi"), epoch); err != nil {
		t.Errorf("Enqueue after the upgrade = %v", err)
	}
	if err := s.Queues().RecordApprovalMessage(ctx, ApprovalMessage{Transport: "telegram", Turn: "t1", Chat: "42", MessageID: 9, HTML: "?"}); err != nil {
		t.Errorf("RecordApprovalMessage after the upgrade = %v", err)
	}
	if err := s.Queues().CountStranger(ctx, "telegram", "bob", epoch); err != nil {
		t.Errorf("CountStranger after the upgrade = %v", err)
	}
}

// TestUpgradeToOutboxLanes opens a database at schema version 8, whose
// outbox was one queue, with today's code: the items queued then are in
// one lane, named by the empty string, in their order.
func TestUpgradeToOutboxLanes(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	ctx := context.Background()
	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = migrations[:8]
	before := openStore(t, l)
	for _, body := range []string{"first", "second"} {
		if _, err := before.db.Exec(`INSERT INTO transport_outbox (transport, kind, body, not_before, created_at) VALUES ('telegram', 'message', ?, 0, 0)`, body); err != nil {
			t.Fatal(err)
		}
	}
	before.Close()
	migrations = saved

	s := openStore(t, l)
	if lanes, err := s.Queues().OutboxLanes(ctx, "telegram"); err != nil || !slices.Equal(lanes, []string{""}) {
		t.Fatalf("OutboxLanes after the upgrade = %q, %v, want the one lane ''", lanes, err)
	}
	if head, ok, err := s.Queues().NextOutbox(ctx, "telegram", ""); err != nil || !ok || string(head.Body) != "first" {
		t.Errorf("NextOutbox('') after the upgrade = %+v, %v, %v, want the first item queued", head, ok, err)
	}
	if _, err := s.Queues().Enqueue(ctx, "telegram", "chat:1", "message", []byte("new"), epoch); err != nil {
		t.Errorf("Enqueue after the upgrade = %v", err)
	}
}
