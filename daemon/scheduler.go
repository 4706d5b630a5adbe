package daemon

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/owner"
	"shelldon/daemon/schedule"
	"shelldon/daemon/state"
	"shelldon/daemon/turns"
)

// KindScheduled is the turns table's kind of a turn the pet started
// itself; the daily budget counts them.
const KindScheduled = turns.KindScheduled

// addSchedule stores a schedule the model proposed, for the turn's owner.
func (c *Core) addSchedule(ctx context.Context, t *turns.Turn, op contracts.Schedule) error {
	now := c.clock.Now()
	first, every, err := schedule.Plan(op, now, time.Local)
	if err != nil {
		return err
	}
	origin := t.Admission.Origin
	id, err := c.store.AddSchedule(ctx, state.Scheduled{
		Text: op.Text, Next: first, Every: every.String(), Transport: origin.Transport, Chat: origin.Chat, Created: now,
	})
	if err != nil {
		return err
	}
	c.log.Info("a turn was scheduled", contracts.AuditEvent, contracts.EventSchedule, "decision", "set",
		"schedule", id, "first", first.Format(time.RFC3339), "every", every.String(), "text", owner.Shorten(op.Text, 80))
	c.armScheduler(ctx)
	return nil
}

// cancelSchedule drops a schedule; the answer says what went.
func (c *Core) cancelSchedule(ctx context.Context, id int64) (state.Scheduled, error) {
	gone, err := c.store.CancelSchedule(ctx, id)
	if err != nil {
		return state.Scheduled{}, err
	}
	c.log.Info("a schedule was cancelled", contracts.AuditEvent, contracts.EventSchedule, "decision", "cancelled", "schedule", id)
	c.armScheduler(ctx)
	return gone, nil
}

// armScheduler sets the timer for the earliest due schedule; one already
// due (core was down at its time) fires at once.
func (c *Core) armScheduler(ctx context.Context) {
	if c.brain.dueTimer != nil {
		c.brain.dueTimer.Stop()
		c.brain.dueTimer = nil
	}
	next, ok, err := c.store.NextDue(ctx)
	if err != nil {
		c.log.Error("reading the schedules; none will fire until the next change", "err", err)
		return
	}
	if !ok {
		return
	}
	wait := next.Sub(c.clock.Now())
	if wait <= 0 {
		// Due already (core was down at its time): now, from outside the
		// loop, which may be the caller.
		go c.onLoop(c.runDue)
		return
	}
	c.brain.dueTimer = c.clock.AfterFunc(wait, func() { c.onLoop(c.runDue) })
}

// runDue starts the turns whose time has come, within the budget. A
// schedule missed while core was down runs once, and its next time is the
// first one still ahead. A due turn during a turn joins the pending slot,
// as a message would.
func (c *Core) runDue(ctx context.Context) {
	now := c.clock.Now()
	due, err := c.store.DueSchedules(ctx, now)
	if err != nil {
		c.log.Error("reading the due schedules", "err", err)
		return
	}
	var cooling time.Time // set when the cooldown holds the rest back
	defer func() {
		if cooling.IsZero() {
			c.armScheduler(ctx)
			return
		}
		c.brain.dueTimer = c.clock.AfterFunc(cooling.Sub(now), func() { c.onLoop(c.runDue) })
	}()
	for _, sc := range due {
		log := c.log.With(contracts.AuditEvent, contracts.EventSchedule, "schedule", sc.ID)
		spent, last, err := c.store.TurnsOfKindSince(ctx, KindScheduled, schedule.Midnight(now))
		if err != nil {
			log.Error("counting today's self-driven turns; the schedule waits", "err", err)
			return
		}
		if ok, wait, why := c.budget().Allows(spent, last, now); !ok {
			if !wait.IsZero() {
				// Only cooling down: it runs when the cooldown ends.
				log.Info("a scheduled turn waits for the cooldown", "decision", "waiting", "why", why)
				cooling = wait
				return
			}
			log.Warn("a scheduled turn was skipped", "decision", "skipped", "why", why, "text", owner.Shorten(sc.Text, 80))
			c.brain.skipped = fmt.Sprintf("at %s I skipped %q: %s", now.Local().Format("15:04"), owner.Shorten(sc.Text, 40), why)
			c.advance(ctx, sc, now, false)
			continue
		}
		adm, start := c.turns.Submit(sc.Text, turns.Origin{Transport: sc.Transport, Chat: sc.Chat})
		c.advance(ctx, sc, now, true)
		if !start {
			log.Info("a scheduled turn joined the pending slot", "decision", "coalesced", "turn", c.turnID())
			continue
		}
		adm.Scheduled = true
		log.Info("starting a scheduled turn", "decision", "started", "text", owner.Shorten(sc.Text, 80))
		c.startTurn(ctx, adm)
	}
}

// advance moves a schedule past now, or drops a one-off; ran says whether
// it ran (a skipped one keeps its last run).
func (c *Core) advance(ctx context.Context, sc state.Scheduled, now time.Time, ran bool) {
	every, err := schedule.ParseEvery(sc.Every)
	next := time.Time{}
	if err == nil {
		next = every.Next(sc.Next, now)
	} else {
		c.log.Error("a schedule's repetition is unreadable; it runs no more", "schedule", sc.ID, "every", sc.Every, "err", err)
	}
	var lastRun time.Time
	if ran {
		lastRun = now
	}
	if err := c.store.Reschedule(ctx, sc.ID, next, lastRun); err != nil {
		c.log.Error("moving a schedule on; it may run again", "schedule", sc.ID, "err", err)
	}
}

func (c *Core) budget() schedule.Budget {
	return schedule.Budget{Daily: c.cfg.Schedule.DailyBudget, Cooldown: c.cfg.Schedule.Cooldown.Duration}
}

// budgetReport says how much of today's budget of self-driven turns is
// spent, and what was last skipped for it.
func (c *Core) budgetReport(ctx context.Context) string {
	now := c.clock.Now()
	spent, _, err := c.store.TurnsOfKindSince(ctx, KindScheduled, schedule.Midnight(now))
	if err != nil {
		return fmt.Sprintf("Self-driven turns today: unknown (%v).", err)
	}
	line := fmt.Sprintf("Self-driven turns today: %d of %d.", spent, c.cfg.Schedule.DailyBudget)
	if c.brain.skipped != "" {
		line += " Last skipped: " + c.brain.skipped + "."
	}
	return line
}

// scheduleCommand lists the schedules, or cancels one: "/schedule",
// "/schedule cancel 3".
func (c *Core) scheduleCommand(ctx context.Context, arg string) string {
	if rest, ok := strings.CutPrefix(arg, "cancel"); ok {
		id, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
		if err != nil || id <= 0 {
			return "Which one? Say /schedule cancel ID, with an ID from /schedule."
		}
		gone, err := c.cancelSchedule(ctx, id)
		if err != nil {
			return fmt.Sprintf("I could not cancel %d: %v", id, err)
		}
		return fmt.Sprintf("Cancelled %d: %s", id, gone.Text)
	}
	if arg != "" {
		return "Say /schedule to list what I will do by myself, or /schedule cancel ID."
	}
	all, err := c.store.Schedules(ctx)
	if err != nil {
		return fmt.Sprintf("I could not read my schedule: %v", err)
	}
	return owner.Schedules(all, c.budgetReport(ctx))
}
