package panel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"shelldon/bus"
	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/giveback"
	"shelldon/panel/moment"
	"shelldon/panel/render"
)

// Options configure a panel.
type Options struct {
	Socket   string
	MaxFrame int
	Display  Display
	Policy   Policy
	// AwayAfter is how long core may be out of reach before the panel
	// shows the pet asleep: a restart of core is quicker than this and
	// does not flash the face.
	AwayAfter time.Duration
	// GoneAfter, when set, ends Run with ErrCoreGone once core, heard
	// from and then lost, has stayed out of reach this long: the terminal
	// preview ends where the panel service waits for core for as long as
	// it runs. It should be longer than a restart of core takes.
	GoneAfter time.Duration
	Clock     clock.Clock
	Log       *slog.Logger
}

// ErrCoreGone ends a panel whose core stayed out of reach for
// [Options.GoneAfter].
var ErrCoreGone = errors.New("core is gone")

// redrawEvery redraws the scene so the strip's uptime moves; an unchanged
// frame is not sent to the display.
const redrawEvery = time.Minute

// maxRedial caps the wait between the panel's redials while core is
// away; the wait starts at 50 ms, so a restart is barely noticed.
const maxRedial = time.Minute

// defaultAwayAfter is AwayAfter's zero value.
const defaultAwayAfter = 5 * time.Second

// Panel is the actor: the scene core last asked for, drawn through the
// refresh policy.
type Panel struct {
	opts    Options
	clock   clock.Clock
	log     *slog.Logger
	refresh *refresher

	mu        sync.Mutex
	snap      contracts.Snapshot  // what is on show
	deferred  *contracts.Snapshot // an ambient face waiting for a reaction's dwell to end
	holdUntil time.Time
	away      bool
	awayTimer clock.Timer
	// goneTimer ends Run when core stays lost for GoneAfter; end is
	// how it does.
	goneTimer clock.Timer
	end       context.CancelCauseFunc
	holdTimer clock.Timer
	tick      clock.Timer
	stopped   bool
}

// New checks opts and returns a panel; it draws nothing yet.
func New(opts Options) (*Panel, error) {
	if opts.Display == nil || opts.Socket == "" {
		return nil, errors.New("panel: a display and a bus socket are required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.AwayAfter <= 0 {
		opts.AwayAfter = defaultAwayAfter
	}
	p := &Panel{opts: opts, clock: opts.Clock, log: opts.Log}
	p.refresh = &refresher{display: opts.Display, policy: opts.Policy, clock: opts.Clock, log: opts.Log}
	return p, nil
}

// Run serves the panel until ctx is done; only a hello core refuses ends
// it early. It closes the display.
func (p *Panel) Run(ctx context.Context) error {
	defer p.opts.Display.Close()
	defer p.stop()
	ctx, end := context.WithCancelCause(ctx)
	defer end(nil)
	p.mu.Lock()
	p.end = end
	p.mu.Unlock()
	client := &bus.Client{
		Socket: p.opts.Socket, MaxFrame: p.opts.MaxFrame,
		Hello: contracts.Hello{Role: contracts.RolePanel, Name: "panel"},
		Logf:  func(format string, args ...any) { p.log.Info(fmt.Sprintf(format, args...)) },
		// Through a long outage the panel redials at most once a minute:
		// the sleeping face it shows does not need core sooner.
		MaxRedial: maxRedial, Clock: p.clock,
		// Core sends the face of the moment to a panel that joins.
		OnConnect:    func(*bus.Conn) { p.coreBack() },
		OnDisconnect: func() { p.coreGone(); p.coreLost() },
	}
	// Until core is first heard from, it is away.
	p.coreGone()
	p.scheduleTick()
	err := client.Run(ctx, func(_ *bus.Conn, env contracts.Envelope) {
		if env.Kind != contracts.KindSnapshot {
			return
		}
		var s contracts.Snapshot
		if err := env.Decode(&s); err != nil {
			p.log.Warn("panel: an unreadable snapshot", "err", err)
			return
		}
		p.take(s)
	})
	if cause := context.Cause(ctx); errors.Is(cause, ErrCoreGone) {
		return fmt.Errorf("panel: %w", cause)
	}
	if err != nil {
		return fmt.Errorf("panel: %w", err)
	}
	return nil
}

// coreLost starts the wait after which a panel with GoneAfter ends.
func (p *Panel) coreLost() {
	if p.opts.GoneAfter <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.goneTimer != nil {
		p.goneTimer.Stop()
	}
	p.goneTimer = p.clock.AfterFunc(p.opts.GoneAfter, func() {
		p.end(fmt.Errorf("%w: no core answered on %s for %s", ErrCoreGone, p.opts.Socket, p.opts.GoneAfter))
	})
}

// Counts says what the refresh policy did so far.
func (p *Panel) Counts() Counts { return p.refresh.stats() }

// take shows a snapshot from core. An ambient face waits while a
// reaction holds the screen; anything else shows at once.
func (p *Panel) take(s contracts.Snapshot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	if s.Ambient && now.Before(p.holdUntil) {
		p.deferred = &s
		if p.holdTimer != nil {
			p.holdTimer.Stop()
		}
		p.holdTimer = p.clock.AfterFunc(p.holdUntil.Sub(now), p.releaseHold)
		// Taking it was a chore (core's minute check sends the strip's
		// figures while a reaction holds): its pages go back now, not
		// when the hold ends, up to a minute later.
		afterChore()
		return
	}
	// A turn's faces are work; the mood's drift (an ambient face) and
	// new figures in the strip are core's chores.
	work := !s.Ambient && !sameMoment(s, p.snap)
	if work {
		giveback.Busy() // drawing's garbage waits for the giveback after the frames
	}
	p.deferred = nil
	p.snap = s
	if !s.Ambient {
		p.holdUntil = s.HoldUntil
	}
	p.drawLocked(work)
}

// sameMoment is whether a and b show the same moment, whatever their
// status strips say: a snapshot that changes only the strip (core's
// minute check, with the memory figure) is a chore to draw, not a turn's.
func sameMoment(a, b contracts.Snapshot) bool {
	return a.Face == b.Face && a.Glyphs == b.Glyphs && a.Word == b.Word && a.Caption == b.Caption &&
		a.Ambient == b.Ambient && a.HoldUntil.Equal(b.HoldUntil)
}

// releaseHold shows the ambient face that waited for a reaction's dwell.
func (p *Panel) releaseHold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deferred == nil || p.clock.Now().Before(p.holdUntil) {
		return
	}
	p.snap, p.deferred = *p.deferred, nil
	p.drawLocked(false) // the mood's face, a chore
}

// coreGone starts the wait after which the pet is shown asleep.
func (p *Panel) coreGone() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.awayTimer != nil {
		p.awayTimer.Stop()
	}
	p.awayTimer = p.clock.AfterFunc(p.opts.AwayAfter, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.stopped || p.away {
			return
		}
		p.away = true
		p.log.Info("panel: core is away; the pet sleeps")
		p.drawLocked(true)
	})
}

// coreBack cancels the away wait; core's snapshot follows.
func (p *Panel) coreBack() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.awayTimer != nil {
		p.awayTimer.Stop()
	}
	if p.goneTimer != nil {
		p.goneTimer.Stop()
	}
	p.away = false
}

// scheduleTick redraws every minute, for the strip's uptime.
func (p *Panel) scheduleTick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.tick = p.clock.AfterFunc(redrawEvery, func() {
		p.mu.Lock()
		p.drawLocked(false) // the uptime's redraw is a chore
		p.mu.Unlock()
		p.scheduleTick()
	})
}

// sceneLocked is what to draw now: core's moment with core's figures, or,
// while core is away or not heard from yet, the panel's own moment and
// no figures, as no core vouches for them.
func (p *Panel) sceneLocked() render.Scene {
	st := p.snap.Status
	status := render.Status{Name: st.Name, Away: p.away}
	if status.Name == "" {
		status.Name = "shelldon"
	}
	var shown moment.Moment
	switch {
	case p.away:
		shown = moment.Away()
	case p.snap.Glyphs == "":
		shown = moment.Waking()
	default:
		shown = moment.Moment{Face: p.snap.Face, Glyphs: p.snap.Glyphs, Word: p.snap.Word, Caption: p.snap.Caption}
		status.Figures = &render.Figures{TurnsToday: st.TurnsToday, Memory: st.Memory}
		if !st.Since.IsZero() {
			status.Figures.Uptime = p.clock.Now().Sub(st.Since)
		}
	}
	status.Word = shown.Word
	return render.Scene{Face: shown.Glyphs, Caption: shown.Caption, Status: status}
}

// drawLocked shows the scene of the moment. work is whether it is a
// turn's (its faces, a reaction) or the pet falling asleep, rather than a
// chore (the minute's redraw, the mood's drift, new figures in the strip).
func (p *Panel) drawLocked(work bool) {
	if p.stopped {
		return
	}
	if err := p.refresh.show(p.sceneLocked()); err != nil {
		p.log.Error("panel: drawing failed; the next change tries again", "err", err)
	}
	if !work {
		// A chore's frame does not put off the release the last turn's
		// frames armed, and goes back at once once the panel let go; so
		// does a scene that looked as the shown one and drew nothing,
		// whose making ran as much code.
		afterChore()
		return
	}
	// Frames come a few per turn and then none for minutes; what drawing
	// them left behind goes back to the kernel once they stop.
	giveback.WhenQuiet()
}

// afterChore is giveback.AfterChore; tests count the chores instead.
var afterChore = giveback.AfterChore

func (p *Panel) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	for _, t := range []clock.Timer{p.awayTimer, p.goneTimer, p.holdTimer, p.tick} {
		if t != nil {
			t.Stop()
		}
	}
	p.refresh.stop()
}
