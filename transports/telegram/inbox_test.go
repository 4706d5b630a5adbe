package telegram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/state"
	"shelldon/transports/telegram/telegramtest"
)

// errDiskFull stands for any failure to store a batch of updates.
var errDiskFull = errors.New("disk full")

// holds tells whether a batch holds an update whose body has marker.
func holds(items []state.InboxItem, marker string) bool {
	return slices.ContainsFunc(items, func(it state.InboxItem) bool { return bytes.Contains(it.Body, []byte(marker)) })
}

// failingUpdates refuses, fail times, to store a batch holding marker.
type failingUpdates struct {
	updateStore
	marker string
	mu     sync.Mutex
	fail   int
}

func (f *failingUpdates) Receive(ctx context.Context, transport string, items []state.InboxItem) error {
	f.mu.Lock()
	refuse := f.fail > 0 && holds(items, f.marker)
	if refuse {
		f.fail--
	}
	f.mu.Unlock()
	if refuse {
		return errDiskFull
	}
	return f.updateStore.Receive(ctx, transport, items)
}

// dyingUpdates stops the transport while it stores the batch holding
// marker: before the batch is stored (a crash before the commit), or
// right after it (a crash before the next getUpdates tells Telegram).
type dyingUpdates struct {
	updateStore
	marker string
	stored bool
	kill   func()
	api    *telegramtest.Server
	// dead gets what Telegram had confirmed when the batch came to be
	// stored, once the transport is stopping.
	dead chan int64
}

func (d *dyingUpdates) Receive(ctx context.Context, transport string, items []state.InboxItem) error {
	if !holds(items, d.marker) {
		return d.updateStore.Receive(ctx, transport, items)
	}
	confirmed := d.api.Confirmed()
	err := errDiskFull
	if d.stored {
		err = d.updateStore.Receive(ctx, transport, items)
	}
	d.kill()
	d.dead <- confirmed
	return err
}

// expectOnce checks that core gets the owner's text once: it comes, and
// the next thing core gets is what the owner says next.
func (r *rig) expectOnce(t *testing.T, text string) {
	t.Helper()
	var in contracts.Inbound
	r.nextCore(t, contracts.KindInbound, &in)
	if in.Text != text {
		t.Fatalf("core got %q, want %q", in.Text, text)
	}
	if next := r.say(t, owner, "and then"); next.Text != "and then" {
		t.Errorf("core got %q after %q, want it once and then the next message", next.Text, text)
	}
}

// TestStoreFailureRedeliversUpdate: a batch of updates the store refuses
// is not confirmed to Telegram, which hands it over again; once stored,
// it is handled once.
func TestStoreFailureRedeliversUpdate(t *testing.T) {
	const text = "kept at last"
	r := newRig(t, func(r *rig) {
		r.updates = func(u updateStore) updateStore { return &failingUpdates{updateStore: u, marker: text, fail: 2} }
	})
	id := r.api.SendText(owner, text)
	r.expectOnce(t, text)
	if n := r.api.Delivered(id); n != 3 {
		t.Errorf("the update was delivered %d times, want 3: twice while the store failed, then once stored", n)
	}
}

// TestStopBetweenStoreAndConfirm: the transport is stopped while it stores
// a batch, before or after the store, and always before the next
// getUpdates; a new transport on the same store handles the update once.
func TestStopBetweenStoreAndConfirm(t *testing.T) {
	const text = "across the crash"
	for _, tc := range []struct {
		name          string
		stored        bool
		wantDelivered int
	}{
		// Not stored: Telegram was not told either, and hands it over again.
		{"before the store", false, 2},
		// Stored: the stored offset says not to take it again.
		{"after the store", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dying *dyingUpdates
			r := newRig(t, func(r *rig) {
				dying = &dyingUpdates{marker: text, stored: tc.stored, kill: func() { r.cancel() }, api: r.api, dead: make(chan int64, 1)}
				r.updates = func(u updateStore) updateStore {
					dying.updateStore = u
					return dying
				}
			})
			id := r.api.SendText(owner, text)
			select {
			case confirmed := <-dying.dead:
				if confirmed >= id {
					t.Errorf("Telegram had confirmed up to %d when update %d came to be stored, want it told only after", confirmed, id)
				}
			case <-time.After(waitLimit):
				t.Fatalf("update %d never came to be stored", id)
			}
			r.stop()
			if confirmed := r.api.Confirmed(); confirmed >= id {
				t.Errorf("Telegram had confirmed up to %d when the transport died, want update %d unconfirmed", confirmed, id)
			}

			r.updates = nil
			r.start(t)
			r.expectOnce(t, text)
			if n := r.api.Delivered(id); n != tc.wantDelivered {
				t.Errorf("the update was delivered %d times, want %d", n, tc.wantDelivered)
			}
		})
	}
}

// TestAMessageIsKeptUntilCoreConfirmsIt: the owner's message stays in the
// transport's inbox after it was written to core, until core confirms it
// kept it. A core that got it and died before confirming (its successor
// has a new connection), and a transport stopped meanwhile, both get it
// passed again; once confirmed, it is never passed again.
func TestAMessageIsKeptUntilCoreConfirmsIt(t *testing.T) {
	const text = "do not lose me"
	r := newRig(t)
	r.unconfirmed = true
	r.api.SendText(owner, text)
	var in contracts.Inbound
	r.nextCore(t, contracts.KindInbound, &in)
	select {
	case env := <-r.inbox:
		t.Fatalf("while core has it, unconfirmed, on the same connection, it was passed again: %s %s", env.Kind, env.Body)
	case <-time.After(300 * time.Millisecond):
	}

	// Core dies without confirming; the next one gets it again.
	r.stopCore()
	r.startCore(t, r.socket)
	var again contracts.Inbound
	r.nextCore(t, contracts.KindInbound, &again)
	if again.Text != text || again.Ref != in.Ref {
		t.Fatalf("after a core restart core got %+v, want %+v passed again", again, in)
	}

	// So does a transport that restarts before core confirmed.
	r.stop()
	r.start(t)
	r.nextCore(t, contracts.KindInbound, &again)
	if again.Text != text || again.Ref != in.Ref {
		t.Fatalf("after a transport restart core got %+v, want %+v passed again", again, in)
	}

	r.unconfirmed = false
	r.confirm(t, again)
	r.stop()
	r.start(t)
	if next := r.say(t, owner, "and then"); next.Text != "and then" {
		t.Errorf("after core confirmed %q, core got %q, want the next message", text, next.Text)
	}
}

// TestUpdateIDsThatStartAgainLowerAreTaken: after a week without updates
// Telegram chooses the next update id at random, often below the ones the
// bot has seen. The owner's next message is still taken and handed to
// core, where a poller that always sent its offset made Telegram forget
// it unseen.
func TestUpdateIDsThatStartAgainLowerAreTaken(t *testing.T) {
	r := newRig(t)
	first := r.api.SendText(owner, "before the quiet week")
	var next contracts.Inbound
	if r.nextCore(t, contracts.KindInbound, &next); next.Text != "before the quiet week" {
		t.Fatalf("core got %q", next.Text)
	}
	// The week: the transport has long told Telegram it holds the first.
	for deadline := time.Now().Add(10 * time.Second); r.api.Confirmed() < first; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Telegram was not told the first update is held (confirmed up to %d, want %d)", r.api.Confirmed(), first)
		}
	}
	r.api.StartIDsAgainAt(17)
	if next = r.say(t, owner, "after the quiet week"); next.Text != "after the quiet week" {
		t.Errorf("core got %q, want the owner's message with its new, lower update id", next.Text)
	}
	if next = r.say(t, owner, "and the next"); next.Text != "and the next" {
		t.Errorf("core got %q, want the next message too", next.Text)
	}
}

// TestAConfirmationDuringAReadHandsNothingOverTwice: the inbox read the
// store (the owner's message still unhandled there), then core's
// confirmation came and marked it handled before the inbox looked at what
// it read; the message must not go to core a second time (it did, under
// load, as a "/start" core got twice).
func TestAConfirmationDuringAReadHandsNothingOverTwice(t *testing.T) {
	var p passed
	p.add(7, ownerMessage{chat: 42, id: 3})
	p.reading() // the inbox reads update 7, still unhandled in the store
	p.settle(7) // core confirms it: the store marks it handled
	if !p.has(7) {
		t.Fatal("update 7, confirmed after the read that listed it, would be handed over again")
	}
	p.reading() // the next read no longer lists it
	if p.has(7) || p.count() != 0 {
		t.Errorf("after the next read: has(7) = %v, count = %d; want both forgotten", p.has(7), p.count())
	}
}

// TestAnOversizedUpdateHoldsUpNothing: a Bot API server (self-hosted, or
// in trouble) hands the transport one text update of 5 MiB. It is
// refused where it is read, confirmed to the server like any other, and
// the owner is told; the owner's next message reaches core. It was once
// stored whole, failed to reach core ("frame too large") every few
// seconds at the head of the inbox, forever, and held every message
// after it.
func TestAnOversizedUpdateHoldsUpNothing(t *testing.T) {
	r := newRig(t)
	big := r.api.SendText(owner, strings.Repeat("x", 5<<20))
	if in := r.say(t, owner, "after it"); in.Text != "after it" {
		t.Errorf("core got %.40q, want the message after the oversized one", in.Text)
	}
	note := r.api.WaitMessage(t, owner, hasText("dropped it unread"))
	for _, want := range []string{"5.0 MiB", "256 KiB", "smaller pieces"} {
		if !strings.Contains(note.Text, want) {
			t.Errorf("the owner was told %q, want it to say %q", note.Text, want)
		}
	}
	eventually(t, "the oversized update was confirmed to the server", func() bool { return r.api.Confirmed() >= big })
	if items, err := r.store.Queues().Unhandled(context.Background(), TransportName, 10); err != nil || len(items) > 0 {
		t.Errorf("the inbox holds %d updates (%v), want none", len(items), err)
	}
}

// TestAHugeGetUpdatesAnswerIsReadInPieces: 100 messages of 175 KiB wait,
// so the server's getUpdates answer is 17.5 MiB. The transport reads it
// as a stream, keeps what fits its bound, and takes the rest in the next
// answers: every message reaches core, once, in order. The answer was
// once cut at 16 MiB, unreadable as JSON, and asked for again, forever.
func TestAHugeGetUpdatesAnswerIsReadInPieces(t *testing.T) {
	r := newRig(t)
	const n = 100
	text := strings.Repeat("y", 175<<10)
	r.api.SetDown(true) // they all wait for one answer
	for i := range n {
		r.api.SendText(owner, fmt.Sprintf("%03d %s", i, text))
	}
	r.api.SetDown(false)
	for i := range n {
		var in contracts.Inbound
		r.nextCore(t, contracts.KindInbound, &in)
		if want := fmt.Sprintf("%03d ", i); !strings.HasPrefix(in.Text, want) || len(in.Text) != len(want)+len(text) {
			t.Fatalf("message %d reached core as %.10q… (%d bytes), want %q and %d bytes", i, in.Text, len(in.Text), want, len(want)+len(text))
		}
	}
}

// TestAMessageTooLongForABusFrameIsRefused: with bus.max_frame at its
// least (64 KiB), a message of 100 KiB — within an update's bound — can
// never reach core. It is refused with a word to the owner, where it was
// once tried again every few seconds, forever, ahead of every message
// after it.
func TestAMessageTooLongForABusFrameIsRefused(t *testing.T) {
	r := newRig(t, func(r *rig) { r.configure = func(c *Config) { c.MaxFrame = 64 << 10 } })
	r.api.SendText(owner, strings.Repeat("v", 100<<10))
	if in := r.say(t, owner, "after it"); in.Text != "after it" {
		t.Errorf("core got %.40q, want the message after the long one", in.Text)
	}
	r.api.WaitMessage(t, owner, hasText("Your message of 100 KiB is too long to pass on to my core"))
}

// TestALongPollThatBringsNothingIsAChore: between the owner's messages
// the long poll, every poll_timeout for months, is all the process does,
// and each one that ends with nothing is told to Idle (core gives back
// what it ran). The poll that brings a message is not, nor the call that
// confirms it, which comes back at once as the message's turn starts.
func TestALongPollThatBringsNothingIsAChore(t *testing.T) {
	const pollTimeout = time.Second
	idle := make(chan time.Time, 16)
	hold := make(chan struct{})
	first := true // the poll's own goroutine reads and writes it
	r := newRig(t, func(r *rig) {
		r.configure = func(c *Config) {
			c.PollTimeout = pollTimeout
			c.Idle = func() {
				select {
				case idle <- time.Now():
				default:
				}
				if first {
					first = false
					<-hold
				}
			}
		}
	})
	select {
	case <-idle:
	case <-time.After(waitLimit):
		t.Fatalf("no long poll that ended with nothing was told to Idle in %v (polls of %v)", waitLimit, pollTimeout)
	}
	// While the poll is held, the owner writes: the next poll brings it.
	r.api.SendText(owner, "hello")
	close(hold)
	var in contracts.Inbound
	r.nextCore(t, contracts.KindInbound, &in)
	delivered := time.Now()
	select {
	case at := <-idle:
		// The next chore is the poll after the confirmation, a whole
		// timeout later; one told for the message's poll or for the
		// confirmation would come at once.
		if gap := at.Sub(delivered); gap < pollTimeout/2 {
			t.Errorf("Idle was told %v after the owner's message reached core, want a poll's timeout (%v) later: the poll that brought it, or the confirmation, was taken for a chore", gap, pollTimeout)
		}
	case <-time.After(waitLimit):
		t.Fatalf("no poll after the owner's message was told to Idle in %v", waitLimit)
	}
}
