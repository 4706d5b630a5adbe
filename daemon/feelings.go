package daemon

import (
	"context"
	"encoding/json"

	"shelldon/contracts"
	"shelldon/daemon/mood"
)

// moodKey is where the mood is kept in the state store.
const moodKey = "mood"

// feelingsQueue bounds the events waiting for the loop; a burst beyond it
// loses feelings, never a turn.
const feelingsQueue = 64

// feel tells the mood that something happened. It may be called from any
// goroutine: the loop, which owns the mood, applies it.
func (c *Core) feel(ev mood.Event) {
	select {
	case c.feelings <- ev:
	default:
		c.log.Warn("the mood missed an event: too many at once", "event", ev.String())
	}
}

// loadMood reads the kept mood, or starts a fresh one.
func (c *Core) loadMood(ctx context.Context) {
	now := c.clock.Now()
	c.mood = mood.Initial(now, c.moodCfg)
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
		c.mood = kept.Tick(now, c.moodCfg)
	}
	c.keepMood(ctx)
}

// moodTo moves the mood to next: it is kept, logged when it changed, and
// shown on the panel as the at-rest face unless a turn or a reaction
// holds the screen.
func (c *Core) moodTo(ctx context.Context, next mood.State) {
	changed := next.Changed(c.mood)
	c.mood = next
	c.keepMood(ctx)
	if changed {
		c.log.Info("the mood changed", contracts.AuditEvent, contracts.EventMood, "mood", next.Mood, "why", next.Why)
	}
	c.showMood()
}

// showMood shows the mood's face while nothing else holds the screen.
func (c *Core) showMood() {
	if c.turn != nil {
		return // the turn's faces own the screen
	}
	name, glyphs := c.glyphs(c.mood.Mood)
	c.face.ambient(name, glyphs, c.mood.Why)
}

func (c *Core) keepMood(ctx context.Context) {
	raw, err := json.Marshal(c.mood)
	if err == nil {
		err = c.store.Put(ctx, moodKey, raw)
	}
	if err != nil {
		c.log.Error("keeping the mood", "err", err)
	}
}
