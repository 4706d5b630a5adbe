package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"shelldon/bus"
	"shelldon/clock"
	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/launch"
	"shelldon/daemon/mood"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/panel/moment"
	"shelldon/testhost"
)

// brainRig is a core on a fake clock whose workers are goroutines of the
// test: each answers "did: <text>" with the ops the test gives it, so the
// scheduler, the budget and the mood can be driven through days in
// milliseconds.
type brainRig struct {
	t      *testing.T
	clk    *clock.Fake
	store  *state.Store
	cfg    config.Config
	inputs chan contracts.TurnInput
	send   func(text string)
	snaps  chan contracts.Snapshot

	mu   sync.Mutex
	ops  func(contracts.TurnInput) []contracts.Op
	gate chan struct{} // when set, workers wait for it before answering
	// face and thought are what the workers' answers pick for the panel.
	face, thought string
	// usage is what each worker says its turn's model calls cost.
	usage contracts.UsageByProvider
	// told are the envelopes core sent the transport.
	told chan contracts.Envelope
	conn *bus.Conn
	core *Core
}

// A Monday morning, in UTC so the test reads the same anywhere.
var brainStart = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

func newBrain(t *testing.T, edit func(*config.Config), prepare func(*state.Store)) *brainRig {
	t.Helper()
	prev := time.Local
	time.Local = time.UTC
	t.Cleanup(func() { time.Local = prev })
	dir := testhost.ShortDir(t)
	cfg := config.Default()
	cfg.StateDir, cfg.Socket = dir, filepath.Join(dir, "bus.sock")
	cfg.Schedule.Cooldown.Duration = 0
	if edit != nil {
		edit(&cfg)
	}
	store, err := state.Open(statedir.Layout{Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if prepare != nil {
		prepare(store)
	}
	b := &brainRig{t: t, clk: clock.NewFake(brainStart), store: store, cfg: cfg,
		inputs: make(chan contracts.TurnInput, 64), snaps: make(chan contracts.Snapshot, 256), told: make(chan contracts.Envelope, 256)}
	worker := inProcessLauncher{work: func(ctx context.Context, spec launch.Spec) {
		conn, in, err := joinAsWorker(ctx, cfg.Socket, turnOf(spec))
		if err != nil {
			return
		}
		defer conn.Close()
		b.inputs <- in
		b.mu.Lock()
		gate, ops, face, thought, usage := b.gate, b.ops, b.face, b.thought, b.usage
		b.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				return
			}
		}
		res := contracts.Result{OK: true, Payload: "did: " + in.Text, Face: face, Thought: thought, Usage: usage}
		if ops != nil {
			res.Ops = ops(in)
		}
		env, _ := contracts.NewEnvelope(contracts.KindResult, in.Turn, res)
		conn.Send(env)
	}}
	// Core's account goes to the test's output, shown when a test fails.
	b.core, _ = serveCoreOf(t, Options{Config: cfg, Store: store, Launcher: worker, WorkerArgv: []string{"worker"}, Clock: b.clk,
		Log: slog.New(slog.NewTextHandler(t.Output(), nil))})
	conn := listen(t, cfg.Socket, contracts.RoleTransport, func(env contracts.Envelope) {
		select {
		case b.told <- env:
		default:
		}
	})
	b.conn = conn
	listen(t, cfg.Socket, contracts.RolePanel, func(env contracts.Envelope) {
		var s contracts.Snapshot
		if env.Decode(&s) == nil {
			select {
			case b.snaps <- s:
			default:
			}
		}
	})
	b.send = func(text string) {
		env, _ := contracts.NewEnvelope(contracts.KindInbound, "", contracts.Inbound{Chat: "owner", Text: text})
		if err := conn.Send(env); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// turn waits for the next turn's input.
func (b *brainRig) turn(what string) contracts.TurnInput {
	b.t.Helper()
	return receive(b.t, b.inputs, "no turn started: "+what)
}

// receive waits for ch's next value; after 10 s the test fails, saying
// failure.
func receive[T any](t *testing.T, ch <-chan T, failure string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal(failure)
		var zero T
		return zero
	}
}

// eventually waits for cond, which core's loop makes true in its own time.
func (b *brainRig) eventually(what string, cond func() bool) {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			b.t.Fatalf("waited in vain: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// turnsOf counts the finished turns of a kind.
func (b *brainRig) turnsOf(kind string) int {
	b.t.Helper()
	turns, err := b.store.Turns().Recent(context.Background(), 1000)
	if err != nil {
		b.t.Fatal(err)
	}
	n := 0
	for _, t := range turns {
		if t.Kind == kind && !t.Ended.IsZero() {
			n++
		}
	}
	return n
}

func (b *brainRig) noTurn(what string) {
	b.t.Helper()
	select {
	case in := <-b.inputs:
		b.t.Fatalf("%s: a turn started: %+v", what, in)
	default:
	}
}

// answering has the workers pick face and thought for their replies.
func (b *brainRig) answering(face, thought string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.face, b.thought = face, thought
}

// nextSnapshot waits for the next frame core asks the panel for.
func (b *brainRig) nextSnapshot(what string) contracts.Snapshot {
	b.t.Helper()
	return receive(b.t, b.snaps, "the panel was sent nothing: "+what)
}

// schedule has the next turn's worker propose op.
func (b *brainRig) proposing(op contracts.OpBody) {
	b.mu.Lock()
	defer b.mu.Unlock()
	once := true
	b.ops = func(contracts.TurnInput) []contracts.Op {
		if once {
			once = false
			return []contracts.Op{{Body: op}}
		}
		return nil
	}
}

func (b *brainRig) schedules() []state.Scheduled {
	b.t.Helper()
	all, err := b.store.Schedules().All(context.Background())
	if err != nil {
		b.t.Fatal(err)
	}
	return all
}

// advanceUntil moves the fake clock a minute at a time, no further than
// limit, until cond holds: for what the mood's reflex makes true on its
// own ticks, which a loaded machine's loop may take late.
func (b *brainRig) advanceUntil(what string, limit time.Time, cond func() bool) {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			b.t.Fatalf("waited in vain (fake clock at %v): %s", b.clk.Now(), what)
		}
		if b.clk.Now().Before(limit) {
			b.clk.Advance(time.Minute)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// advanceTo moves the fake clock to at, a minute at a time, without
// waiting for core's loop: timers that fall due on the way are acted on
// together, late. A test that needs a timer set before the clock moves
// settles first.
func (b *brainRig) advanceTo(at time.Time) {
	for b.clk.Now().Before(at) {
		b.clk.Advance(min(time.Minute, at.Sub(b.clk.Now())))
	}
}

// scheduled waits until the one schedule a turn proposed is stored and
// core's loop has set its timer, which it does after storing it: on a
// slow machine (qemu in make test-cross) the clock moved first.
func (b *brainRig) scheduled() {
	b.t.Helper()
	b.eventually("the schedule is stored", func() bool { return len(b.schedules()) == 1 })
	// The turn that set it ends before the clock moves on: one due while
	// it runs would join its pending slot as a catch-up turn instead.
	b.eventually("the turn that set it ended", func() bool {
		recent, err := b.store.Turns().Recent(context.Background(), 1000)
		if err != nil {
			b.t.Fatal(err)
		}
		return !slices.ContainsFunc(recent, func(t state.TurnRecord) bool { return t.Ended.IsZero() })
	})
	b.settle()
}

// settle waits until core's loop has done everything handed to it so far
// (its work queue is first in, first out).
func (b *brainRig) settle() {
	b.t.Helper()
	done := make(chan struct{})
	b.core.onLoop(func(context.Context) { close(done) })
	receive(b.t, (<-chan struct{})(done), "core's loop did not come round")
}

func TestAReminderSetInChatFiresOnceAtItsTime(t *testing.T) {
	b := newBrain(t, nil, nil)
	b.proposing(contracts.Schedule{When: "in 20m", Text: "remind me to stretch"})
	b.send("remind me to stretch in 20 minutes")
	b.turn("the owner's message")
	b.scheduled()

	b.advanceTo(brainStart.Add(19 * time.Minute))
	b.noTurn("a minute before the reminder")
	b.advanceTo(brainStart.Add(20 * time.Minute))
	in := b.turn("the reminder")
	if in.Text != "remind me to stretch" || !in.Scheduled {
		t.Errorf("the reminder's turn got %+v, want the scheduled text", in)
	}
	b.eventually("the one-off is gone", func() bool { return len(b.schedules()) == 0 })
	b.eventually("the reminder's turn ended", func() bool { return b.turnsOf(KindScheduled) == 1 })
	b.advanceTo(brainStart.Add(48 * time.Hour))
	b.noTurn("two days later")
	if n := b.turnsOf(KindScheduled); n != 1 {
		t.Errorf("%d scheduled turns, want 1", n)
	}
}

func TestARecurringCheckInFiresEachDay(t *testing.T) {
	b := newBrain(t, nil, nil)
	b.proposing(contracts.Schedule{When: "09:00", Every: "day", Text: "say good morning"})
	b.send("say good morning every day at nine")
	b.turn("the owner's message")
	b.scheduled()
	for day := range 3 {
		b.advanceTo(brainStart.Add(time.Duration(day)*24*time.Hour + time.Hour)) // 09:00
		in := b.turn(fmt.Sprintf("day %d's check-in", day+1))
		if in.Text != "say good morning" || !in.Scheduled {
			t.Fatalf("day %d: %+v", day+1, in)
		}
		b.eventually("the turn ended", func() bool { return b.turnsOf(KindScheduled) == day+1 })
	}
	if next := b.schedules()[0].Next; !next.Equal(brainStart.Add(3*24*time.Hour + time.Hour)) {
		t.Errorf("next check-in at %v, want Thursday 09:00", next)
	}
}

func TestDowntimeAcrossThreeDueTimesFiresOnce(t *testing.T) {
	b := newBrain(t, nil, func(s *state.Store) {
		// Set an hourly check-in that was due at 05:00, 06:00 and 07:00
		// while core was down.
		if _, err := s.Schedules().Add(context.Background(), state.Scheduled{Text: "hourly check-in", Next: brainStart.Add(-3 * time.Hour),
			Every: "1h0m0s", Transport: "test", Chat: "owner", Created: brainStart.Add(-4 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	})
	b.turn("the missed check-in")
	b.eventually("the turn ended", func() bool { return b.turnsOf(KindScheduled) == 1 })
	b.noTurn("after the one catch-up run")
	if next := b.schedules()[0].Next; !next.Equal(brainStart.Add(time.Hour)) {
		t.Errorf("next check-in at %v, want the first one ahead (09:00)", next)
	}
}

func TestTheBudgetStopsTheFourthSelfDrivenTurnAndResetsAtMidnight(t *testing.T) {
	b := newBrain(t, func(c *config.Config) { c.Schedule.DailyBudget = 3 }, func(s *state.Store) {
		if _, err := s.Schedules().Add(context.Background(), state.Scheduled{Text: "check the plants", Next: brainStart.Add(time.Hour),
			Every: "1h0m0s", Transport: "test", Chat: "owner", Created: brainStart}); err != nil {
			t.Fatal(err)
		}
	})
	for hour := 1; hour <= 3; hour++ {
		b.advanceTo(brainStart.Add(time.Duration(hour) * time.Hour))
		b.turn(fmt.Sprintf("self-driven turn %d", hour))
		b.eventually("the turn ended", func() bool { return b.turnsOf(KindScheduled) == hour })
	}
	b.advanceTo(brainStart.Add(4 * time.Hour))
	b.eventually("the fourth is skipped and the schedule moves on", func() bool {
		return b.schedules()[0].Next.Equal(brainStart.Add(5 * time.Hour))
	})
	b.noTurn("the fourth self-driven turn of a three-turn budget")
	// The owner is not budgeted.
	b.send("are you there?")
	if in := b.turn("the owner's message"); in.Scheduled {
		t.Errorf("the owner's turn was marked scheduled: %+v", in)
	}
	b.eventually("the owner's turn ended", func() bool { return b.turnsOf("chat") == 1 })
	// Past midnight the budget is fresh: the 00:00 check-in runs.
	midnight := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	b.advanceTo(midnight)
	if in := b.turn("a self-driven turn after midnight"); !in.Scheduled || in.Text != "check the plants" {
		t.Errorf("after midnight: %+v", in)
	}
	// Counted by their start: the turn after midnight may have ended
	// by now too.
	turns, err := b.store.Turns().Recent(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	firstDay := 0
	for _, turn := range turns {
		if turn.Kind == KindScheduled && turn.Started.Before(midnight) {
			firstDay++
		}
	}
	if firstDay != 3 {
		t.Errorf("%d self-driven turns on the first day, want the budget's 3", firstDay)
	}
}

func TestADueTurnDuringABusyTurnCoalesces(t *testing.T) {
	// The owner's turn outlasts the eleven minutes the clock moves: with
	// the usual 30 s it timed out on the way whenever the loop came round
	// between two moves, and the first due text became a turn of its own.
	longTurn := func(c *config.Config) {
		c.Timeouts.Worker.Duration, c.Timeouts.Reap.Duration, c.Timeouts.Turn.Duration = 15*time.Minute, 16*time.Minute, 17*time.Minute
		c.Worker.CPUSeconds = 16 * 60
	}
	b := newBrain(t, longTurn, func(s *state.Store) {
		for i, text := range []string{"water the plants", "feed the cat"} {
			if _, err := s.Schedules().Add(context.Background(), state.Scheduled{Text: text, Next: brainStart.Add(10*time.Minute + time.Duration(i)*time.Second),
				Transport: "test", Chat: "owner", Created: brainStart}); err != nil {
				t.Fatal(err)
			}
		}
	})
	gate := make(chan struct{})
	b.mu.Lock()
	b.gate = gate
	b.mu.Unlock()
	b.send("a long question")
	b.turn("the owner's long turn")
	b.advanceTo(brainStart.Add(11 * time.Minute))
	b.eventually("both due schedules are handled", func() bool { return len(b.schedules()) == 0 })
	b.mu.Lock()
	b.gate = nil
	b.mu.Unlock()
	close(gate)
	in := b.turn("the follow-up")
	if in.Text != "water the plants\nfeed the cat" {
		t.Errorf("follow-up text %q, want both due texts in one turn", in.Text)
	}
	b.eventually("the follow-up ended", func() bool { return b.turnsOf("catch-up") == 1 })
	b.noTurn("after the one follow-up")
}

func TestOwnerTurnsIgnoreTheBudget(t *testing.T) {
	b := newBrain(t, func(c *config.Config) { c.Schedule.DailyBudget = 0 }, func(s *state.Store) {
		if _, err := s.Schedules().Add(context.Background(), state.Scheduled{Text: "nag", Next: brainStart.Add(time.Minute),
			Transport: "test", Chat: "owner", Created: brainStart}); err != nil {
			t.Fatal(err)
		}
	})
	b.advanceTo(brainStart.Add(2 * time.Minute))
	b.eventually("the self-driven turn is skipped", func() bool { return len(b.schedules()) == 0 })
	b.noTurn("with no budget")
	for i := range 3 {
		b.send(fmt.Sprintf("message %d", i))
		b.turn("an owner's turn")
		b.eventually("it ended", func() bool { return b.turnsOf("chat") == i+1 })
	}
}

func TestMoodFollowsEventsDriftsAndIsKept(t *testing.T) {
	b := newBrain(t, func(c *config.Config) { c.Mood.Lonely.Duration = time.Hour }, nil)
	b.send("hello!")
	in := b.turn("the owner's message")
	if in.Mood == "" || in.Mood == "sleeping" {
		t.Errorf("the turn was told the mood %q", in.Mood)
	}
	b.eventually("the turn ended", func() bool { return b.turnsOf("chat") == 1 })
	kept := b.keptMood
	if s := kept(); s.LastChat != brainStart {
		t.Errorf("kept mood %+v, want the chat at %v", s, brainStart)
	}
	// Hours of silence: the reflex ticks drift the pet to bored, then sad,
	// and the panel shows it as the at-rest face.
	b.advanceTo(brainStart.Add(3 * time.Hour))
	b.advanceUntil("lonely", brainStart.Add(5*time.Hour), func() bool { return kept().Mood == "sad" })
	b.eventually("the panel shows the mood", func() bool {
		for {
			select {
			case s := <-b.snaps:
				if s.Ambient && s.Face == "sad" && s.Word == "sad" {
					return true
				}
			default:
				return false
			}
		}
	})
	// Night: the pet sleeps.
	b.advanceTo(time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC))
	b.advanceUntil("asleep at night", time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC), func() bool { return kept().Mood == "sleeping" })
	if why := kept().Why; !strings.Contains(why, "night") {
		t.Errorf("why = %q, want it to mention the night", why)
	}
}

// TestThePanelTellsOneStory follows the frames core asks the panel for
// around one reply: the strip's word always names the face on show (a
// sad reply under a happy mood is "sad" until its dwell ends), and the
// idle frame after it speaks to the owner, not in the mood's reasons.
func TestThePanelTellsOneStory(t *testing.T) {
	b := newBrain(t, nil, nil)
	b.answering("sad", "poor cat")
	b.send("my cat is ill")
	b.turn("the owner's message")
	want := []struct{ face, word, caption string }{{"thinking", "thinking", "let me think…"}, {"sad", "sad", "poor cat"}}
	for _, w := range want {
		var s contracts.Snapshot
		for s.Face != w.face {
			s = b.nextSnapshot(w.face)
		}
		if s.Word != w.word || s.Caption != w.caption {
			t.Errorf("the %s frame says %q with the caption %q, want %q with %q", s.Face, s.Word, s.Caption, w.word, w.caption)
		}
	}
	b.eventually("the turn ended", func() bool { return b.turnsOf("chat") == 1 })
	// The dwell's timer is set on the loop after the turn is recorded; on
	// a slow machine (qemu in make test-cross) the clock moved first.
	b.settle()
	b.advanceTo(brainStart.Add(2 * time.Minute))
	var idle contracts.Snapshot
	for !idle.Ambient {
		idle = b.nextSnapshot("the mood's face after the dwell")
	}
	kept := b.keptMood()
	if want := moment.Idle(kept.Mood); idle.Face != kept.Mood || idle.Word != want.Word || idle.Caption != want.Caption || idle.Caption == kept.Why {
		t.Errorf("the idle frame shows %q, says %q with the caption %q, want the mood %q, %q and the words for the owner %q rather than the mood's reason %q",
			idle.Face, idle.Word, idle.Caption, kept.Mood, want.Word, want.Caption, kept.Why)
	}
}

// keptMood is the mood core keeps in its store.
func (b *brainRig) keptMood() mood.State {
	b.t.Helper()
	raw, ok, err := b.store.Get(context.Background(), moodKey)
	if err != nil || !ok {
		b.t.Fatalf("mood not kept: %v", err)
	}
	var s mood.State
	if err := json.Unmarshal(raw, &s); err != nil {
		b.t.Fatal(err)
	}
	return s
}
