package daemon

import (
	"context"
	"encoding/json"
	"fmt"

	"shelldon/clock"
	"shelldon/config"

	"shelldon/contracts"
	"shelldon/daemon/mood"
)

// moodKey is where the mood is kept in the state store.
const moodKey = "mood"

// feelingsQueue bounds the events waiting for the loop; a burst beyond it
// loses feelings, never a turn.
const feelingsQueue = 64

// brain is what core keeps of the pet between turns: how it feels, and
// when its next scheduled turn is due. The loop owns it.
type brain struct {
	mood mood.State
	cfg  mood.Config
	// feelings brings the mood its events from any goroutine.
	feelings chan mood.Event
	// dueTimer fires at the next scheduled turn; skipped says what the
	// budget last held back, for /status.
	dueTimer clock.Timer
	skipped  string
}

func (b *brain) init(cfg config.Config) error {
	night, err := mood.ParseWindow(cfg.Mood.Night)
	if err != nil {
		return fmt.Errorf("mood.night: %w", err)
	}
	b.cfg = mood.Config{Night: night, Lonely: cfg.Mood.Lonely.Duration}
	b.feelings = make(chan mood.Event, feelingsQueue)
	return nil
}

// feel tells the mood that something happened. It may be called from any
// goroutine: the loop, which owns the mood, applies it.
func (c *Core) feel(ev mood.Event) {
	select {
	case c.brain.feelings <- ev:
	default:
		c.log.Warn("the mood missed an event: too many at once", "event", ev.String())
	}
}

// loadMood reads the kept mood, or starts a fresh one.
func (c *Core) loadMood(ctx context.Context) {
	now := c.clock.Now()
	c.brain.mood = mood.Initial(now, c.brain.cfg)
	raw, ok, err := c.store.Get(ctx, moodKey)
	switch {
	case err != nil:
		c.log.Error("reading the mood; starting afresh", "err", err)
	case ok:
		var kept mood.State
		if err := json.Unmarshal(raw, &kept); err != nil {
			c.log.Warn("the kept mood is unreadable; starting afresh", "err", err)
			break
		}
		// A tick re-derives it for now: the night may have begun while
		// core was away, and loneliness grown.
		c.brain.mood = kept.Tick(now, c.brain.cfg)
	}
	c.keepMood(ctx)
}

// moodTo moves the mood to next: it is kept, logged when it changed, and
// shown on the panel as the at-rest face unless a turn or a reaction
// holds the screen.
func (c *Core) moodTo(ctx context.Context, next mood.State) {
	changed := next.Changed(c.brain.mood)
	c.brain.mood = next
	c.keepMood(ctx)
	if changed {
		c.log.Info("the mood changed", contracts.AuditEvent, contracts.EventMood, "mood", next.Mood, "why", next.Why)
	}
	c.showMood()
}

// showMood shows the mood's face while nothing else holds the screen.
func (c *Core) showMood() {
	if c.turns.Current() != nil {
		return // the turn's faces own the screen
	}
	name, glyphs := c.glyphs(c.brain.mood.Mood)
	c.face.ambient(name, glyphs, c.brain.mood.Why)
}

// moodTick is the reflex: the mood drifts, and the next tick is set.
func (c *Core) moodTick(ctx context.Context) {
	c.moodTo(ctx, c.brain.mood.Tick(c.clock.Now(), c.brain.cfg))
	c.clock.AfterFunc(c.cfg.Mood.Tick.Duration, func() { c.onLoop(c.moodTick) })
}

func (c *Core) keepMood(ctx context.Context) {
	raw, err := json.Marshal(c.brain.mood)
	if err == nil {
		err = c.store.Put(ctx, moodKey, raw)
	}
	if err != nil {
		c.log.Error("keeping the mood", "err", err)
	}
}
