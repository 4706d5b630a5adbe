package telegram

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/testhost"
	"shelldon/transports/telegram/telegramtest"
)

// friend is a second allowed user, with a chat of their own.
const friend = 43

func texts(msgs []telegramtest.Message) []string {
	var got []string
	for _, m := range msgs {
		got = append(got, m.Text)
	}
	return got
}

func (r *rig) reply(t *testing.T, chat int64, text string) {
	t.Helper()
	r.route(t, contracts.KindOutbound, contracts.Outbound{Chat: strconv.FormatInt(chat, 10), Text: text})
}

// TestOneChatFailingHoldsUpNoOther: Telegram answers 500, for good, to the
// command menu, the typing hint and every message to one chat. The other
// chat's replies still arrive, in order; the failing chat's replies are
// dropped once they failed three times, with a log line; and once
// Telegram takes that chat's messages again its owner is told how many
// were lost, before what comes next. The clock is a fake one, so that the
// failing chat's retries wait for the test and cannot be what let the
// other chat through.
func TestOneChatFailingHoldsUpNoOther(t *testing.T) {
	clk := clock.NewFake(time.Now())
	book := newLogBook()
	ctx := context.Background()
	r := newRig(t, func(r *rig) {
		r.allowed = []int64{owner, friend}
		r.giveUp = GiveUp{Attempts: 3}
		r.clock, r.log = clk, slog.New(book)
		r.api.Fail(telegramtest.Fault{Method: "setMyCommands", Status: http.StatusInternalServerError})
		r.api.Fail(telegramtest.Fault{Method: "sendChatAction", Status: http.StatusInternalServerError})
	})
	r.api.Fail(telegramtest.Fault{Method: "sendMessage", Chat: friend, Status: http.StatusInternalServerError})

	r.reply(t, friend, "lost one")
	r.reply(t, friend, "lost two")
	book.wait(t, "sending failed; will retry", "lane=chat:43", "failed_attempts=1")
	r.route(t, contracts.KindActivity, contracts.Activity{Chat: strconv.Itoa(owner), Turn: "t1", Busy: true})
	r.reply(t, owner, "first")
	r.reply(t, owner, "second")
	r.api.WaitMessage(t, owner, hasText("second"))
	if got := texts(r.api.Messages(owner)); strings.Join(got, "|") != "first|second" {
		t.Errorf("the owner got %q, want first and second, in order", got)
	}
	for _, c := range r.api.Calls("setMyCommands") {
		if c.Status != http.StatusInternalServerError {
			t.Errorf("setMyCommands answered %d, want only 500s", c.Status)
		}
	}
	if head, ok, err := r.store.Queues().NextOutbox(ctx, TransportName, chatLane(friend)); err != nil || !ok || head.Attempts != 1 {
		t.Fatalf("the friend's lane = %+v, %v, %v; want its first reply still queued, failed once", head, ok, err)
	}

	// Time passes: the friend's replies fail past the bound.
	eventually(t, "the friend's replies were given up on", func() bool {
		clk.Advance(time.Second)
		n, err := r.store.Queues().Undelivered(ctx, TransportName, chatLane(friend))
		return err == nil && n == 2
	})
	if lines := book.matching("ERROR", "gave up sending; dropped", "lane=chat:43", "failed 3 times"); len(lines) != 2 {
		t.Errorf("log lines for the dropped replies: %q, want one for each", lines)
	}
	book.wait(t, "telling the owner of the replies given up on failed; will retry", "chat=43")
	if msgs := r.api.Messages(friend); len(msgs) != 0 {
		t.Fatalf("the friend got %q while Telegram failed their chat", texts(msgs))
	}

	r.api.Heal("sendMessage", friend)
	eventually(t, "the friend was told of the lost replies", func() bool {
		clk.Advance(time.Second)
		return len(r.api.Messages(friend)) > 0
	})
	r.reply(t, friend, "back again")
	r.api.WaitMessage(t, friend, hasText("back again"))
	if got, want := texts(r.api.Messages(friend)), []string{fmt.Sprintf(undeliveredFmt, 2), "back again"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the friend got %q, want %q", got, want)
	}
	if n, err := r.store.Queues().Undelivered(ctx, TransportName, chatLane(friend)); err != nil || n != 0 {
		t.Errorf("Undelivered after telling = %d, %v, want 0: told once", n, err)
	}
	r.reply(t, owner, "third")
	r.api.WaitMessage(t, owner, hasText("third"))
	if got := texts(r.api.Messages(owner)); strings.Join(got, "|") != "first|second|third" {
		t.Errorf("the owner got %q, want first, second and third, in order", got)
	}
}

// TestMissingSetMyCommandsIsTolerated: a Bot API server without
// setMyCommands is no trouble: replies flow, and the menu is left as it is
// with a note, not an error.
func TestMissingSetMyCommandsIsTolerated(t *testing.T) {
	for _, fault := range []telegramtest.Fault{
		{Method: "setMyCommands", Status: http.StatusNotFound},
		{Method: "setMyCommands", Status: http.StatusBadRequest, Description: "Bad Request: method not found"},
	} {
		t.Run(strconv.Itoa(fault.Status), func(t *testing.T) {
			book := newLogBook()
			r := newRig(t, func(r *rig) {
				r.log = slog.New(book)
				r.api.Fail(fault)
			})
			r.reply(t, owner, "menu or not")
			r.api.WaitMessage(t, owner, hasText("menu or not"))
			book.wait(t, "INFO", "has no setMyCommands")
			if lines := book.matching("ERROR"); len(lines) != 0 {
				t.Errorf("errors logged for a server without the method: %q", lines)
			}
			eventually(t, "the outbox emptied", func() bool {
				n, err := r.store.Queues().OutboxLen(context.Background(), TransportName)
				return err == nil && n == 0
			})
		})
	}
}

// TestRateLimitHoldsOnlyItsChat: a 429 on one chat holds that chat for the
// time Telegram asked, and no other chat at all; the wait counts no
// failed attempt.
func TestRateLimitHoldsOnlyItsChat(t *testing.T) {
	book := newLogBook()
	r := newRig(t, func(r *rig) {
		r.allowed = []int64{owner, friend}
		r.log = slog.New(book)
	})
	r.api.Fail(telegramtest.Fault{Method: "sendMessage", Chat: friend, Status: http.StatusTooManyRequests,
		Description: "Too Many Requests: retry after 300", RetryAfter: 300})
	r.reply(t, friend, "in five minutes")
	book.wait(t, "sending failed; will retry", "lane=chat:43")
	asked := time.Now()
	r.reply(t, owner, "now")
	r.api.WaitMessage(t, owner, hasText("now"))
	head, ok, err := r.store.Queues().NextOutbox(context.Background(), TransportName, chatLane(friend))
	if err != nil || !ok || head.Attempts != 0 || head.NotBefore.Before(asked.Add(290*time.Second)) {
		t.Errorf("the friend's lane = %+v, %v, %v; want its reply held for the five minutes asked, no failed attempt counted", head, ok, err)
	}
}

// TestAClockSetBackHoldsNoChat: a reply Telegram asked to wait five
// minutes for (429) was held to a time read off a clock a year ahead;
// then the clock is set right, a year back. The reply, and those queued
// behind it in its chat, go once the longest wait the outbox ever asks
// for has passed, where they once waited the year (and the hour of a
// clock an hour ahead held the chat that hour).
func TestAClockSetBackHoldsNoChat(t *testing.T) {
	for _, ahead := range []time.Duration{time.Hour, 365 * 24 * time.Hour} {
		t.Run(ahead.String(), func(t *testing.T) {
			clk := clock.NewFake(time.Now().Add(ahead))
			book := newLogBook()
			r := newRig(t, func(r *rig) { r.clock, r.log = clk, slog.New(book) })
			r.api.Fail(telegramtest.Fault{Method: "sendMessage", Chat: owner, Status: http.StatusTooManyRequests,
				Description: "Too Many Requests: retry after 300", RetryAfter: 300})
			r.reply(t, owner, "held by the clock")
			book.wait(t, "sending failed; will retry", "lane=chat:42")
			r.api.Heal("sendMessage", owner)
			clk.Step(-ahead)
			r.reply(t, owner, "after it")
			eventually(t, "both replies were sent", func() bool {
				if len(r.api.Messages(owner)) < 2 {
					if d, ok := clk.Next(); ok && d <= maxRetryAfter {
						clk.Advance(d)
					}
					return false
				}
				return true
			})
			if got := texts(r.api.Messages(owner)); strings.Join(got, "|") != "held by the clock|after it" {
				t.Errorf("the owner got %q, want both replies in order", got)
			}
		})
	}
}

// TestWhatCouldNotBeQueuedComesOnceThereIsRoom fills the state's disk (a
// small tmpfs) past the store's reserve while replies come from core,
// the first with a file of 512 KiB, more than any room SQLite's log
// has: the store cannot queue it, nor what comes after it in its chat,
// and the transport holds them; once there is room again they are
// queued and sent, in order, before what comes after, without a
// restart. Once such a reply was logged "it is lost".
func TestWhatCouldNotBeQueuedComesOnceThereIsRoom(t *testing.T) {
	dir := testhost.SmallDisk(t, 6<<20, 0o700)
	book := newLogBook()
	r := newRig(t, func(r *rig) {
		store, err := state.Open(statedir.Layout{Root: dir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		r.store, r.log = store, slog.New(book)
	})
	ctx := context.Background()
	// The disk full, then the room of the reserve the store let go of.
	testhost.FillDisk(t, filepath.Join(dir, "filler"))
	long := strings.Repeat("a long answer ", state.MaxHistoryEntryBytes/14)
	for i := 0; r.store.DiskFull() == nil; i++ {
		if i == 200 {
			t.Fatal("the store never found the disk full")
		}
		if err := r.store.History().Append(ctx, "t1", "assistant", long, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	testhost.FillDisk(t, filepath.Join(dir, "reserve's room"))

	r.route(t, contracts.KindOutbound, contracts.Outbound{Chat: strconv.Itoa(owner), Text: "held one",
		File: bytes.Repeat([]byte("a line of the file\n"), maxFile/19), FileName: "big.txt"})
	r.reply(t, owner, "held two")
	book.wait(t, "it is held", "held=2")
	for _, name := range []string{"filler", "reserve's room"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the log:\n%s", strings.Join(book.matching(""), "\n"))
		}
	})
	r.api.WaitMessage(t, owner, hasText("held two"))
	r.reply(t, owner, "after")
	r.api.WaitMessage(t, owner, hasText("after"))
	var got []string
	for _, m := range r.api.Messages(owner) {
		if m.Document != nil {
			m.Text = "(a file)"
		}
		got = append(got, m.Text)
	}
	if want := []string{"held one", "(a file)", "held two", "after"}; !slices.Equal(got, want) {
		t.Errorf("the owner got %q, want %q", got, want)
	}
}
