package panel

import (
	"context"
	"errors"
	"image"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/hub"
	"shelldon/daemon/hub/hubtest"
	"shelldon/faces"
	"shelldon/giveback"
	"shelldon/panel/moment"
	"shelldon/panel/render"
)

const waitLimit = 10 * time.Second

// shown is one frame a display got.
type shown struct {
	frame   *render.Frame
	partial bool
}

// recorder is a display that keeps what it is asked to do.
type recorder struct {
	mu     sync.Mutex
	frames []shown
	sleeps int
	fail   error
	added  chan struct{}
}

func newRecorder() *recorder { return &recorder{added: make(chan struct{}, 64)} }

func (r *recorder) Show(img image.Image, partial bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.frames = append(r.frames, shown{img.(*render.Frame), partial})
	select {
	case r.added <- struct{}{}:
	default:
	}
	return nil
}

func (r *recorder) Sleep() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sleeps++
	return nil
}

func (*recorder) Close() error { return nil }
func (*recorder) Name() string { return "recorder" }

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.frames)
}

func (r *recorder) last() shown {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.frames[len(r.frames)-1]
}

// waitFor waits until the display got a frame equal to want.
func (r *recorder) waitFor(t *testing.T, want *render.Frame, what string) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		if r.count() > 0 && r.last().frame.Equal(want) {
			return
		}
		select {
		case <-r.added:
		case <-deadline:
			t.Fatalf("the display never showed %s", what)
		}
	}
}

func caption(text string) render.Scene {
	return render.Scene{Face: "(^‿^)", Caption: text, Status: render.Status{Name: "shelldon"}}
}

func TestRefreshPolicy(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	d := newRecorder()
	r := &refresher{display: d, clock: clk, policy: Policy{FullEvery: 3, FullAfter: 5 * time.Minute, SleepAfter: 3 * time.Minute}}
	steps := []struct {
		name    string
		advance time.Duration
		scene   render.Scene
		want    string // "full", "partial", "unchanged"
	}{
		{"the first frame is full", 0, caption("a"), "full"},
		{"an identical frame is not sent", 0, caption("a"), "unchanged"},
		{"a small change is partial", 10 * time.Second, caption("b"), "partial"},
		{"and another", 10 * time.Second, caption("c"), "partial"},
		{"and a third", 10 * time.Second, caption("d"), "partial"},
		{"then a full one against ghosting", 10 * time.Second, caption("e"), "full"},
		{"partial again", 10 * time.Second, caption("f"), "partial"},
		{"after the sleep, full", 4 * time.Minute, caption("g"), "full"},
		{"partial", time.Minute, caption("h"), "partial"},
		{"partial, not yet full_after", time.Minute + 50*time.Second, caption("i"), "partial"},
		{"full once the last full one is old", 2*time.Minute + 30*time.Second, caption("j"), "full"},
	}
	// The sleep step: every frame re-arms the timer, so only the long
	// pause lets it fire; full_after is then counted from the wake.
	for _, step := range steps {
		before := d.count()
		clk.Advance(step.advance)
		if err := r.show(step.scene); err != nil {
			t.Fatal(err)
		}
		got := "unchanged"
		if d.count() > before {
			got = "full"
			if d.last().partial {
				got = "partial"
			}
		}
		if got != step.want {
			t.Errorf("%s: %s refresh, want %s", step.name, got, step.want)
		}
	}
	if d.sleeps != 1 {
		t.Errorf("the display slept %d times, want once", d.sleeps)
	}
	want := Counts{Drawn: 10, Full: 4, Partial: 6, Unchanged: 1, Sleeps: 1}
	if got := r.stats(); got != want {
		t.Errorf("counts = %+v, want %+v", got, want)
	}
}

func TestAFailedFrameIsNotTakenAsShown(t *testing.T) {
	clk := clock.NewFake(time.Now())
	d := newRecorder()
	r := &refresher{display: d, clock: clk, policy: Policy{FullEvery: 10, FullAfter: time.Hour, SleepAfter: time.Hour}}
	d.fail = errors.New("SPI gone")
	if err := r.show(caption("a")); err == nil {
		t.Fatal("show on a failing display: no error")
	}
	d.fail = nil
	if err := r.show(caption("a")); err != nil || d.count() != 1 || d.last().partial {
		t.Errorf("after a failure the same frame: err %v, %d frames, want it sent in full", err, d.count())
	}
}

// start is the fake clock's noon.
var start = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// offline is a panel on a fake clock that is not connected to any core:
// the tests hand it core's snapshots and tell it when core goes.
func offline(t *testing.T, clk *clock.Fake) (*Panel, *recorder) {
	t.Helper()
	d := newRecorder()
	p, err := New(Options{Socket: "unused", Display: d, Clock: clk, AwayAfter: 5 * time.Second,
		Policy: Policy{FullEvery: 10, FullAfter: time.Hour, SleepAfter: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	return p, d
}

// snapshot is m as core's presence sends it.
func snapshot(m moment.Moment, status contracts.PanelStatus, ambient bool) contracts.Snapshot {
	return contracts.Snapshot{Face: m.Face, Glyphs: m.Glyphs, Word: m.Word, Caption: m.Caption, Ambient: ambient, Status: status}
}

func TestReactionHoldsAgainstTheMood(t *testing.T) {
	clk := clock.NewFake(start)
	p, d := offline(t, clk)
	reaction := snapshot(moment.Reply(faces.Builtin(), "happy", "lunch!"), contracts.PanelStatus{}, false)
	reaction.HoldUntil = start.Add(time.Minute)
	mood := snapshot(moment.Idle("bored"), contracts.PanelStatus{}, true)
	scene := func(s contracts.Snapshot) *render.Frame {
		return render.Render(render.Scene{Face: s.Glyphs, Caption: s.Caption, Status: render.Status{Name: "shelldon", Word: s.Word, Figures: &render.Figures{}}})
	}
	p.take(reaction)
	if !d.last().frame.Equal(scene(reaction)) {
		t.Fatal("the reaction was not shown")
	}
	clk.Advance(10 * time.Second)
	p.take(mood)
	if n := d.count(); n != 1 {
		t.Fatalf("the mood drifted over a held reaction: %d frames", n)
	}
	clk.Advance(50 * time.Second)
	if !d.last().frame.Equal(scene(mood)) {
		t.Error("the mood did not show once the dwell ended")
	}
	// A turn's own face never waits.
	p.take(reaction)
	thinking := snapshot(moment.Thinking(), contracts.PanelStatus{}, false)
	p.take(thinking)
	if !d.last().frame.Equal(scene(thinking)) {
		t.Error("a turn's face waited for a reaction's dwell")
	}
}

// TestASnapshotHeldBackIsAChore: core's minute check sends the strip's
// figures while a reaction holds the screen; the panel keeps the
// snapshot for the dwell's end, and what taking it ran goes back at once
// (a chore), not when the dwell ends up to a minute later. On this
// machine the panel held 1.6 MB of its binary that long.
func TestASnapshotHeldBackIsAChore(t *testing.T) {
	chores := 0
	afterChore = func() { chores++ }
	t.Cleanup(func() { afterChore = giveback.AfterChore })
	clk := clock.NewFake(start)
	p, d := offline(t, clk)
	reaction := snapshot(moment.Reply(faces.Builtin(), "happy", "lunch!"), contracts.PanelStatus{}, false)
	reaction.HoldUntil = start.Add(time.Minute)
	p.take(reaction)
	clk.Advance(10 * time.Second)
	chores = 0
	p.take(snapshot(moment.Idle("bored"), contracts.PanelStatus{TurnsToday: 3}, true))
	if d.count() != 1 {
		t.Fatalf("the mood drifted over a held reaction: %d frames", d.count())
	}
	if chores != 1 {
		t.Errorf("taking a snapshot held back for the dwell told %d chores, want 1", chores)
	}
	// A snapshot that looks as the shown one draws nothing, but making
	// its scene ran the drawing's code: a chore too.
	clk.Advance(time.Minute)
	frames := d.count()
	chores = 0
	p.mu.Lock()
	p.drawLocked(false)
	p.mu.Unlock()
	if d.count() != frames || chores != 1 {
		t.Errorf("an unchanged scene drew %d frames and told %d chores, want 0 and 1", d.count()-frames, chores)
	}
}

// runPanel runs a panel of opts until the test ends; done has what Run
// returned, and is given it back by a reader, for the cleanup.
func runPanel(t *testing.T, opts Options) (done chan error) {
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return done
}

func TestCoreRestartReconnects(t *testing.T) {
	clk := clock.NewFake(time.Now())
	d := newRecorder()
	happy := snapshot(moment.Reply(faces.Builtin(), "happy", "hello"), contracts.PanelStatus{Name: "shelldon", TurnsToday: 3}, false)
	// Core sends its face to a panel that joins, as the real one does.
	joined := make(chan struct{}, 4)
	onJoin := func(*hub.Peer) { joined <- struct{}{} }
	show := func(h *hub.Hub) {
		t.Helper()
		env, _ := contracts.NewEnvelope(contracts.KindSnapshot, "", happy)
		if err := h.Route(env); err != nil {
			t.Fatal(err)
		}
	}
	first, socket, stop := hubtest.Serve(t, "", hub.Config{Core: make(chan contracts.Envelope, 8), OnJoin: onJoin})
	runPanel(t, Options{Socket: socket, Display: d, Clock: clk, AwayAfter: 5 * time.Second,
		Policy: Policy{FullEvery: 10, FullAfter: time.Hour, SleepAfter: time.Hour}})
	withCore := render.Render(render.Scene{Face: "(^‿^)", Caption: "hello", Status: render.Status{Name: "shelldon", Word: "happy", Figures: &render.Figures{TurnsToday: 3}}})
	select {
	case <-joined:
	case <-time.After(waitLimit):
		t.Fatal("the panel did not join core's bus")
	}
	show(first)
	d.waitFor(t, withCore, "core's face")

	stop() // core goes away
	asleep := moment.Away()
	away := render.Render(render.Scene{Face: asleep.Glyphs, Caption: asleep.Caption, Status: render.Status{Name: "shelldon", Word: "away", Away: true}})
	// The away wait runs on the fake clock: move it until the panel has
	// noticed the loss, then past the wait.
	deadline := time.After(waitLimit)
	for !d.last().frame.Equal(away) {
		clk.Advance(time.Second)
		select {
		case <-d.added:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatal("the panel never showed the pet asleep while core was away")
		}
	}

	// The panel redials on the fake clock too: move it on until it has
	// found core back.
	second, _, _ := hubtest.Serve(t, socket, hub.Config{Core: make(chan contracts.Envelope, 8), OnJoin: onJoin})
	deadline = time.After(waitLimit)
	for rejoined := false; !rejoined; {
		clk.Advance(maxRedial)
		select {
		case <-joined:
			rejoined = true
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatal("the panel did not join core's bus again once core was back")
		}
	}
	show(second)
	d.waitFor(t, withCore, "core's face after core came back")
}

// TestAnUnchangedLookDrawsNothing: snapshots that differ only in what
// the frame does not show (the memory within its megabyte, the uptime
// within its hour, the hold of a reaction) are not drawn again, let alone
// sent to the display.
func TestAnUnchangedLookDrawsNothing(t *testing.T) {
	clk := clock.NewFake(start)
	p, d := offline(t, clk)
	status := contracts.PanelStatus{Name: "shelldon", Since: start.Add(-3 * time.Hour), TurnsToday: 2, Memory: 23<<20 + 1000}
	happy := snapshot(moment.Reply(faces.Builtin(), "happy", "hello"), status, false)
	p.take(happy)
	if got := p.Counts(); got.Drawn != 1 || d.count() != 1 {
		t.Fatalf("the first snapshot: %+v, %d frames shown; want it drawn and shown", got, d.count())
	}
	clk.Advance(10 * time.Minute)
	again := happy
	again.Status.Memory = 23<<20 + 5000
	again.HoldUntil = clk.Now().Add(time.Minute)
	p.take(again)
	if got := p.Counts(); got.Drawn != 1 || d.count() != 1 {
		t.Errorf("a snapshot that looks the same: %+v, %d frames shown; want nothing drawn", got, d.count())
	}
	more := again
	more.Status.TurnsToday = 3
	p.take(more)
	if got := p.Counts(); got.Drawn != 2 || d.count() != 2 {
		t.Errorf("a snapshot with another turn count: %+v, %d frames shown; want it drawn and shown", got, d.count())
	}
}

// TestAwayTellsNothingStale: while core is away the panel shows the pet
// asleep and away, and nothing core last said of itself: the same frame
// whatever mood and figures core had before it went.
func TestAwayTellsNothingStale(t *testing.T) {
	awayFrame := func(last contracts.Snapshot) *render.Frame {
		clk := clock.NewFake(start)
		p, d := offline(t, clk)
		p.take(last)
		p.coreGone()
		clk.Advance(5 * time.Second)
		return d.last().frame
	}
	excited := awayFrame(snapshot(moment.Idle("excited"), contracts.PanelStatus{Name: "shelldon", Since: start.Add(-3 * time.Hour), TurnsToday: 3, Memory: 23 << 20}, true))
	sad := awayFrame(snapshot(moment.Idle("sad"), contracts.PanelStatus{Name: "shelldon", Since: start.Add(-26 * time.Hour), TurnsToday: 12, Memory: 900 << 20}, true))
	if !excited.Equal(sad) {
		t.Errorf("the away frame after an excited core differs from the one after a sad core in %v, want no trace of what core last said", excited.Changed(sad))
	}
}

// TestAPreviewEndsOnceCoreIsGoneForGood: a panel with GoneAfter (the
// terminal preview) keeps drawing through a restart of core, and ends,
// saying so, once core has stayed gone that long.
func TestAPreviewEndsOnceCoreIsGoneForGood(t *testing.T) {
	clk := clock.NewFake(time.Now())
	joined := make(chan struct{}, 4)
	onJoin := func(*hub.Peer) { joined <- struct{}{} }
	_, socket, stop := hubtest.Serve(t, "", hub.Config{Core: make(chan contracts.Envelope, 8), OnJoin: onJoin})
	done := runPanel(t, Options{Socket: socket, Display: newRecorder(), Clock: clk, AwayAfter: 5 * time.Second, GoneAfter: 30 * time.Second,
		Policy: Policy{FullEvery: 10, FullAfter: time.Hour, SleepAfter: time.Hour}})
	waitJoin := func(step time.Duration, what string) {
		t.Helper()
		deadline := time.After(waitLimit)
		for {
			select {
			case <-joined:
				return
			case err := <-done:
				done <- err // for the cleanup
				t.Fatalf("the panel ended (%v) while %s", err, what)
			case <-time.After(20 * time.Millisecond):
				clk.Advance(step)
			case <-deadline:
				t.Fatalf("the panel did not join core's bus %s", what)
			}
		}
	}
	// advance moves the fake clock by d, a second at a time, and fails
	// if the panel ended meanwhile.
	advance := func(d time.Duration, what string) {
		t.Helper()
		for moved := time.Duration(0); moved < d; moved += time.Second {
			clk.Advance(time.Second)
			select {
			case err := <-done:
				done <- err // for the cleanup
				t.Fatalf("the panel ended (%v) %s", err, what)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	waitJoin(0, "at first")

	// A restart: core is gone for 10 s, then back; the preview goes on,
	// also past 30 s from when core first went.
	stop()
	advance(10*time.Second, "10 s into a restart of core")
	_, _, stop = hubtest.Serve(t, socket, hub.Config{Core: make(chan contracts.Envelope, 8), OnJoin: onJoin})
	waitJoin(time.Second, "once core was back")
	advance(40*time.Second, "after core came back")

	// Gone for good: the preview ends, naming why.
	stop()
	deadline := time.After(waitLimit)
	for {
		select {
		case err := <-done:
			if !errors.Is(err, ErrCoreGone) {
				t.Fatalf("the panel ended with %v, want ErrCoreGone", err)
			}
			done <- err // for the cleanup
			return
		case <-time.After(20 * time.Millisecond):
			clk.Advance(time.Second)
		case <-deadline:
			t.Fatal("the panel went on drawing after core was gone for good")
		}
	}
}

// TestAStatusOnlySnapshotLeavesTheCollectorAlone: core's minute check
// sends the strip's new figures, the face unchanged; drawing them is a
// chore, not a turn's work, so the collector's GOGC stays at its idle
// figure (Busy raised it, and the 20 s release waited behind each). A new
// face is work and raises it.
func TestAStatusOnlySnapshotLeavesTheCollectorAlone(t *testing.T) {
	gogc := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	clk := clock.NewFake(start)
	p, d := offline(t, clk)
	status := contracts.PanelStatus{Name: "shelldon", Since: start.Add(-3 * time.Hour), TurnsToday: 2, Memory: 23 << 20}
	happy := snapshot(moment.Reply(faces.Builtin(), "happy", "hello"), status, false)
	p.take(happy)
	t.Setenv("GOGC", "")
	t.Cleanup(func() { debug.SetGCPercent(100) })
	giveback.TuneCollector()
	idle := gogc()
	figures := happy
	figures.Status.TurnsToday, figures.Status.Memory = 3, 31<<20
	p.take(figures)
	if d.count() != 2 {
		t.Fatalf("the new figures were not drawn: %d frames", d.count())
	}
	if got := gogc(); got != idle {
		t.Errorf("after a snapshot with only new figures GOGC = %d, want the idle %d", got, idle)
	}
	p.take(snapshot(moment.Thinking(), figures.Status, false))
	if got := gogc(); got == idle {
		t.Errorf("after a new face GOGC = %d, the idle figure; want Busy's raised one", got)
	}
}
