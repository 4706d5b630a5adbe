package telegram

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/transports/telegram/telegramtest"
)

func (r *rig) progress(t *testing.T, chat int64, turn, line string, settled bool) {
	t.Helper()
	r.route(t, contracts.KindProgress, contracts.Progress{Chat: strconv.FormatInt(chat, 10), Turn: turn, Line: line, Settled: settled})
}

// barrier waits until the transport has handled everything core sent so
// far: it handles core's envelopes in order, and a reply to the friend's
// chat shows when it got that far.
func (r *rig) barrier(t *testing.T, n int) {
	t.Helper()
	text := "barrier " + strconv.Itoa(n)
	r.reply(t, friend, text)
	r.api.WaitMessage(t, friend, hasText(text))
}

// statusMessages are the status messages the bot sent to chat, deleted
// ones too, in the order sent.
func (r *rig) statusMessages(chat int64) []telegramtest.Call {
	var out []telegramtest.Call
	for _, c := range r.api.Calls("sendMessage") {
		if c.Params["chat_id"] == strconv.FormatInt(chat, 10) && strings.HasPrefix(c.Params["text"], statusPrefix) {
			out = append(out, c)
		}
	}
	return out
}

// advanceUntil moves clk on in small steps until cond holds, and says how
// far it moved.
func advanceUntil(t *testing.T, clk *clock.Fake, what string, cond func() bool) time.Duration {
	t.Helper()
	var moved time.Duration
	eventually(t, what, func() bool {
		if cond() {
			return true
		}
		clk.Advance(100 * time.Millisecond)
		moved += 100 * time.Millisecond
		return false
	})
	return moved
}

func statusRig(t *testing.T, opts ...rigOption) (*rig, *clock.Fake) {
	clk := clock.NewFake(time.Now())
	r := newRig(t, append([]rigOption{func(r *rig) {
		r.allowed = []int64{owner, friend}
		r.clock = clk
	}}, opts...)...)
	return r, clk
}

// TestASlowTurnShowsOneStatusMessage: a turn whose tool step takes a
// while gets one status message, once it has been at work for
// statusAfter; lines that come faster than statusEvery are skipped for
// the latest, which an edit shows; and when the reply comes the status
// message is deleted.
func TestASlowTurnShowsOneStatusMessage(t *testing.T) {
	r, clk := statusRig(t)
	r.progress(t, owner, "t1", "reading notes.md…", false)
	r.barrier(t, 1)
	waited := advanceUntil(t, clk, "a status message", func() bool { return len(r.statusMessages(owner)) > 0 })
	if waited < statusAfter {
		t.Errorf("the status message came after %v, want no sooner than %v", waited, statusAfter)
	}
	status := r.api.WaitMessage(t, owner, hasText(statusPrefix+"reading notes.md…"))

	r.progress(t, owner, "t1", "running `pytest -q`…", false)
	r.progress(t, owner, "t1", "running `pytest -q`… 12 passed", false)
	r.barrier(t, 2)
	advanceUntil(t, clk, "the status edited", func() bool { return len(r.api.Calls("editMessageText")) > 0 })
	r.api.WaitMessage(t, owner, func(m telegramtest.Message) bool {
		return m.ID == status.ID && m.Text == statusPrefix+"running `pytest -q`… 12 passed"
	})
	clk.Advance(10 * statusEvery)
	r.barrier(t, 3)
	if n := len(r.api.Calls("editMessageText")); n != 1 {
		t.Errorf("the status was edited %d times, want once: the line between was skipped for the latest", n)
	}

	r.reply(t, owner, "12 tests pass.")
	r.progress(t, owner, "t1", "done (2 steps)", true)
	r.api.WaitMessage(t, owner, hasText("12 tests pass."))
	eventually(t, "the status message deleted", func() bool { return slices.Contains(r.api.Deleted(owner), status.ID) })
	if got := texts(r.api.Messages(owner)); len(got) != 1 || got[0] != "12 tests pass." {
		t.Errorf("the owner's chat shows %q, want only the reply", got)
	}
	if n := len(r.statusMessages(owner)); n != 1 {
		t.Errorf("%d status messages were sent, want one for the turn", n)
	}
}

// TestAQuickTurnShowsNoStatus: a turn whose reply comes within
// statusAfter of its first step shows no status message.
func TestAQuickTurnShowsNoStatus(t *testing.T) {
	r, clk := statusRig(t)
	r.progress(t, owner, "t1", "reading notes.md…", false)
	r.barrier(t, 1)
	clk.Advance(statusAfter - 500*time.Millisecond)
	r.reply(t, owner, "Your notes say: buy milk.")
	r.progress(t, owner, "t1", "done (1 step)", true)
	r.api.WaitMessage(t, owner, hasText("Your notes say: buy milk."))
	// The settling handled before the clock moves on: core sends it right
	// after the reply, well within statusAfter (seen in CI: moved on
	// before it was handled, the clock fired the status timer first).
	r.barrier(t, 2)
	clk.Advance(time.Minute)
	r.barrier(t, 3)
	if got := r.statusMessages(owner); len(got) != 0 {
		t.Errorf("a quick turn sent status messages %+v, want none", got)
	}
	// A turn that ran no tool gets no progress from core at all; its
	// settling alone shows nothing either.
	r.progress(t, owner, "t2", "done (0 steps)", true)
	r.barrier(t, 4)
	clk.Advance(time.Minute)
	r.barrier(t, 5)
	if got := r.statusMessages(owner); len(got) != 0 {
		t.Errorf("a settled turn never shown sent status messages %+v, want none", got)
	}
}

// TestARefusedStatusEditDelaysNoReply: Telegram refuses the status's edits
// (a 429 asking for a long wait, a 500). The reply still comes at once,
// without the clock moving; the edit is dropped, not retried; and the
// status is deleted after the reply.
func TestARefusedStatusEditDelaysNoReply(t *testing.T) {
	for _, fault := range []telegramtest.Fault{
		{Method: "editMessageText", Status: http.StatusTooManyRequests, Description: "Too Many Requests: retry after 60", RetryAfter: 60},
		{Method: "editMessageText", Status: http.StatusInternalServerError},
	} {
		t.Run(strconv.Itoa(fault.Status), func(t *testing.T) {
			book := newLogBook()
			r, clk := statusRig(t, func(r *rig) { r.log = slog.New(book) })
			r.progress(t, owner, "t1", "fetching https://example.com/…", false)
			r.barrier(t, 1)
			advanceUntil(t, clk, "a status message", func() bool { return len(r.statusMessages(owner)) > 0 })
			status := r.api.WaitMessage(t, owner, hasText(statusPrefix+"fetching https://example.com/…"))
			r.api.Fail(fault)
			r.progress(t, owner, "t1", "fetching https://example.com/… done", false)
			r.barrier(t, 2)
			advanceUntil(t, clk, "the edit tried", func() bool { return len(r.api.Calls("editMessageText")) > 0 })
			book.wait(t, "a status line was dropped")

			r.reply(t, owner, "The page says hello.")
			r.api.WaitMessage(t, owner, hasText("The page says hello."))
			clk.Advance(2 * time.Minute)
			r.barrier(t, 3)
			if n := len(r.api.Calls("editMessageText")); n != 1 {
				t.Errorf("the refused edit was made %d times, want once: dropped, not retried", n)
			}
			r.progress(t, owner, "t1", "done (1 step)", true)
			eventually(t, "the status message deleted", func() bool { return slices.Contains(r.api.Deleted(owner), status.ID) })
		})
	}
}

// TestARestartDeletesTheStatusLeftShowing: the transport stops while a
// turn's status shows; the next start deletes it rather than leave it
// saying "running…" for ever.
func TestARestartDeletesTheStatusLeftShowing(t *testing.T) {
	r, clk := statusRig(t)
	r.progress(t, owner, "t1", "running `pytest -q`…", false)
	r.barrier(t, 1)
	advanceUntil(t, clk, "a status message", func() bool { return len(r.statusMessages(owner)) > 0 })
	status := r.api.WaitMessage(t, owner, hasText(statusPrefix+"running `pytest -q`…"))
	// The server has the message before the transport has its id back:
	// the stop comes once the transport remembers it.
	eventually(t, "the status remembered", func() bool {
		raw, _, err := r.store.Get(context.Background(), statusKey)
		var byChat map[string]int64
		return err == nil && json.Unmarshal(raw, &byChat) == nil && byChat[strconv.FormatInt(owner, 10)] == status.ID
	})
	r.stop()
	if slices.Contains(r.api.Deleted(owner), status.ID) {
		t.Fatal("the status was deleted by the stop; the test shows nothing")
	}
	r.start(t)
	eventually(t, "the status left showing deleted", func() bool { return slices.Contains(r.api.Deleted(owner), status.ID) })
}
