package turns

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"shelldon/clock"
)

const (
	testT = 30 * time.Second
	testR = 28 * time.Second
)

// machine is a Machine on a fake clock whose timer events are collected
// instead of posted to a loop.
type machine struct {
	*Machine
	clk    *clock.Fake
	events []Event
}

func newMachine() *machine {
	m := &machine{clk: clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))}
	m.Machine = New(m.clk, testT, testR, func(ev Event) { m.events = append(m.events, ev) })
	return m
}

// advance moves the clock and returns the events its timers posted.
func (m *machine) advance(d time.Duration) []Event {
	m.events = nil
	m.clk.Advance(d)
	return m.events
}

func TestSubmitAdmitsOneAndCoalescesTheRest(t *testing.T) {
	m := newMachine()
	adm, now := m.Submit("first", Origin{Transport: "cli"})
	if !now || adm.Text != "first" || adm.Kind() != KindChat {
		t.Fatalf("Submit(first) = %+v, %v; want it admitted at once", adm, now)
	}
	for i := range 3 {
		if _, now := m.Submit(fmt.Sprintf("m%d", i), Origin{Transport: "tg", Chat: "7"}); now {
			t.Fatalf("Submit(m%d) admitted a second turn while one runs", i)
		}
	}
	if m.Pending() != 3 {
		t.Errorf("Pending() = %d, want 3", m.Pending())
	}
	next, ok := m.Release()
	if !ok || next.Text != "m0\nm1\nm2" || next.Kind() != KindCatchUp || next.Origin.Chat != "7" {
		t.Fatalf("Release() = %+v, %v; want one catch-up turn of all pending texts", next, ok)
	}
	if _, now := m.Submit("during catch-up", Origin{}); now {
		t.Fatal("the catch-up turn must hold the slot")
	}
	if next, ok := m.Release(); !ok || next.Text != "during catch-up" {
		t.Fatalf("Release() = %+v, %v", next, ok)
	}
	if _, ok := m.Release(); ok {
		t.Fatal("Release() with nothing pending returned a turn")
	}
	if m.Claim() != true || m.Claim() != false {
		t.Fatal("Claim() must take a free slot once")
	}
	if _, now := m.Submit("later", Origin{}); now {
		t.Fatal("a claimed slot admitted a message")
	}
}

// TestAMarkedTextMarksItsTurnAndItsCatchUp: a due schedule set by a
// marked turn starts a marked turn; while a turn runs, it marks the
// catch-up it joins, whatever the owner's messages beside it; the next
// catch-up, of the owner's messages alone, is not marked.
func TestAMarkedTextMarksItsTurnAndItsCatchUp(t *testing.T) {
	m := newMachine()
	const page = "https://example.com/page"
	if adm, now := m.SubmitMarked("write the page's words", Origin{}, page); !now || adm.Outside != page {
		t.Fatalf("SubmitMarked = %+v, %v; want a turn started with the mark", adm, now)
	}
	m.Submit("the owner's words", Origin{}, 1)
	m.SubmitMarked("write the page's words", Origin{}, page)
	m.Submit("more of the owner's words", Origin{}, 2)
	if next, _ := m.Release(); next.Outside != page {
		t.Errorf("the catch-up with a marked text = %+v, want it marked %q", next, page)
	}
	m.Submit("the owner alone", Origin{}, 3)
	if next, _ := m.Release(); next.Outside != "" {
		t.Errorf("the next catch-up, of the owner's words alone, is marked %q", next.Outside)
	}
}

func TestAResultIsAcceptedOnceAndOnlyForTheOpenTurn(t *testing.T) {
	m := newMachine()
	adm, _ := m.Submit("hi", Origin{})
	turn := m.Begin(adm)
	if _, err := m.Accept("someone-else"); !errors.Is(err, ErrFenced) {
		t.Errorf("Accept(unknown) = %v, want ErrFenced", err)
	}
	if got, err := m.Accept(turn.ID); err != nil || got != turn {
		t.Fatalf("Accept(open turn) = %v, %v", got, err)
	}
	if _, err := m.Accept(turn.ID); !errors.Is(err, ErrFenced) {
		t.Errorf("a second Accept of the same turn = %v, want ErrFenced", err)
	}
	if m.Finished() != nil {
		t.Fatal("a turn whose worker still runs is not finished")
	}
	step := m.On(Event{Kind: Exited, Turn: turn.ID})
	if step.Finished != turn || step.Degrade != "" {
		t.Fatalf("On(exit after a result) = %+v, want the turn finished without degrading", step)
	}
	if m.Current() != nil {
		t.Error("a finished turn is still current")
	}
	if _, err := m.Accept(turn.ID); err == nil || !errors.Is(err, ErrFenced) {
		t.Errorf("Accept(closed turn) = %v, want ErrFenced", err)
	}
	// The timer of a finished turn is stopped: no timeout comes later.
	if evs := m.advance(2 * testT); len(evs) != 0 {
		t.Errorf("a finished turn's timers fired: %+v", evs)
	}
}

// TestATurnIsOverOnceWhatItKeepsIsWritten: a turn whose result is being
// kept off the loop is not over when its worker leaves — the slot is not
// handed on, and the next turn would not read what it kept — but when
// it is written.
func TestATurnIsOverOnceWhatItKeepsIsWritten(t *testing.T) {
	m := newMachine()
	adm, _ := m.Submit("remember this", Origin{})
	turn := m.Begin(adm)
	if _, err := m.Accept(turn.ID); err != nil {
		t.Fatal(err)
	}
	m.Keeping(turn)
	m.On(Event{Kind: Left, Turn: turn.ID})
	if step := m.On(Event{Kind: Exited, Turn: turn.ID}); step.Finished != nil {
		t.Fatal("a turn was over while what it keeps was still being written")
	}
	if _, now := m.Submit("next", Origin{}); now {
		t.Fatal("the next turn started before what the last one keeps was written")
	}
	if m.Kept(turn) != turn {
		t.Fatal("Kept did not end the turn whose worker is gone")
	}
}

func TestNoResultWithinTDegradesKillsAndAbandons(t *testing.T) {
	m := newMachine()
	adm, _ := m.Submit("hi", Origin{})
	turn := m.Begin(adm)
	if evs := m.advance(testT - time.Millisecond); len(evs) != 0 {
		t.Fatalf("events before T: %+v", evs)
	}
	evs := m.advance(time.Millisecond)
	if len(evs) != 1 || evs[0] != (Event{Kind: Timeout, Turn: turn.ID}) {
		t.Fatalf("events at T = %+v, want the timeout", evs)
	}
	step := m.On(evs[0])
	if step.Degrade != OutcomeTimeout || !step.Kill || step.Finished != nil {
		t.Fatalf("On(timeout) = %+v, want degrade, kill, not finished", step)
	}
	if _, err := m.Accept(turn.ID); !errors.Is(err, ErrFenced) {
		t.Error("a result after T was accepted")
	}
	// The worker will not die: one reap deadline later the slot is let go.
	evs = m.advance(testR)
	if len(evs) != 1 || evs[0].Kind != Abandon {
		t.Fatalf("events a reap after the kill = %+v, want Abandon", evs)
	}
	if step := m.On(evs[0]); step.Finished != turn || step.Degrade != "" {
		t.Fatalf("On(abandon) = %+v, want the turn finished, degraded once only", step)
	}
	if _, ok := m.Release(); ok || m.Busy() {
		t.Fatal("the slot was not freed after an abandoned turn")
	}
}

func TestAWorkerGoneWithoutAResultCrashesOnlyOnceItsConnectionIsGone(t *testing.T) {
	m := newMachine()
	adm, _ := m.Submit("hi", Origin{})
	turn := m.Begin(adm)
	if step := m.On(Event{Kind: Exited, Turn: turn.ID}); step.Degrade != "" || step.Finished != nil {
		t.Fatalf("On(exit) with the connection still open = %+v: a result may still be on its way", step)
	}
	// Its result was in the socket after all.
	if _, err := m.Accept(turn.ID); err != nil {
		t.Fatalf("Accept after the exit = %v", err)
	}
	if m.Finished() != turn {
		t.Fatal("a turn with a result and no worker is finished")
	}

	adm, _ = m.Submit("again", Origin{})
	m.Release()
	m.Claim()
	turn = m.Begin(adm)
	m.On(Event{Kind: Exited, Turn: turn.ID})
	step := m.On(Event{Kind: Left, Turn: turn.ID})
	if step.Degrade != OutcomeCrashed || step.Finished != turn {
		t.Fatalf("On(left after exit, no result) = %+v, want crashed and finished", step)
	}
}

func TestEventsOfOtherTurnsChangeNothing(t *testing.T) {
	m := newMachine()
	adm, _ := m.Submit("hi", Origin{})
	turn := m.Begin(adm)
	for _, kind := range []EventKind{Timeout, Exited, Left, Abandon} {
		if step := m.On(Event{Kind: kind, Turn: "old-turn"}); step != (Step{}) {
			t.Errorf("On(%v of another turn) = %+v, want nothing", kind, step)
		}
	}
	if m.Current() != turn || !m.fence.isOpen(turn.ID) {
		t.Error("another turn's events touched the turn in flight")
	}
}

func TestASpawnFailureSettlesAndFinishesAtOnce(t *testing.T) {
	m := newMachine()
	adm, _ := m.Submit("hi", Origin{})
	turn := m.Begin(adm)
	if !m.Settle(turn, "spawn-failed", "no worker") {
		t.Fatal("Settle on an open turn = false")
	}
	if m.Settle(turn, "other", "twice") {
		t.Error("a second Settle won over the first")
	}
	m.Gone(turn)
	if m.Finished() != turn || turn.Outcome != "spawn-failed" {
		t.Fatalf("finished %+v, want the spawn failure", turn)
	}
}

func TestFenceRemembersOnlyRecentTurns(t *testing.T) {
	var f fence
	for i := range closedMemory + 1 {
		id := fmt.Sprint(i)
		f.open(id)
		f.close(id)
	}
	if f.wasClosed("0") || !f.wasClosed(fmt.Sprint(closedMemory)) {
		t.Fatal("the closed set is not bounded to the most recent ids")
	}
}

// TestWhatArrivesDuringATurnIsBounded: a burst during a turn becomes one
// catch-up turn of at most MaxCatchUpBytes, the rest handed over as
// overflow (never split inside a character); one message is cut to
// MaxMessageBytes.
func TestWhatArrivesDuringATurnIsBounded(t *testing.T) {
	m := newMachine()
	adm, _ := m.Submit("first", Origin{})
	m.Begin(adm)
	msg := strings.Repeat("é", 30<<10) // 60 KiB
	for range 100 {
		m.Submit(msg, Origin{Chat: "7"})
	}
	next, ok := m.Release()
	if !ok || len(next.Text) > MaxCatchUpBytes || !utf8.ValidString(next.Text) || !utf8.ValidString(next.Overflow) {
		t.Fatalf("Release = %d bytes (valid %v) and %d over, want at most %d bytes, valid, the rest as overflow", len(next.Text), utf8.ValidString(next.Text), len(next.Overflow), MaxCatchUpBytes)
	}
	if got := len(next.Text) + len(next.Overflow); got != 100*len(msg)+99 {
		t.Errorf("catch-up and overflow hold %d bytes, want all %d of the burst", got, 100*len(msg)+99)
	}
	cut, was := CutMessage(strings.Repeat("é", MaxMessageBytes))
	if !was || len(cut) > MaxMessageBytes || !utf8.ValidString(cut) {
		t.Errorf("CutMessage of %d bytes = %d bytes (cut %v, valid %v)", 2*MaxMessageBytes, len(cut), was, utf8.ValidString(cut))
	}
	if same, was := CutMessage("short"); was || same != "short" {
		t.Errorf("CutMessage(short) = %q, %v", same, was)
	}
}
