package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"shelldon/clock"
	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/mood"
	"shelldon/daemon/ops"
	"shelldon/daemon/owner"
	"shelldon/daemon/schedule"
	"shelldon/daemon/state"
	"shelldon/daemon/tokens"
	"shelldon/daemon/turns"
)

// KindScheduled is the turns table's kind of a turn the pet started
// itself; the daily budget counts them.
const KindScheduled = turns.KindScheduled

// moodKey is where the mood is kept in the state store.
const moodKey = "mood"

// feelingsQueue bounds the events waiting for the loop; a burst beyond it
// loses feelings, never a turn.
const feelingsQueue = 64

// brain is what core keeps of the pet between turns: how it feels, and
// the turns it starts itself on a schedule, within a daily budget. The
// loop owns it.
type brain struct {
	cfg      config.Config
	moodCfg  mood.Config
	mood     mood.State
	feelings chan mood.Event // the mood's events, from any goroutine
	// dueTimer fires at the next scheduled turn; skipped says what the
	// budget last held back, for /status.
	dueTimer clock.Timer
	skipped  string

	store  *state.Store
	writes *failedWrites
	clock  clock.Clock
	log    *slog.Logger
	face   *presence
	// onScreen reports whether a turn owns the screen; start hands a due
	// schedule's turn to the arbiter and reports whether it started now.
	onScreen func() bool
	start    func(ctx context.Context, sc state.Scheduled) bool
	onLoop   func(func(context.Context))
}

func (b *brain) init(cfg config.Config) error {
	night, err := clock.ParseWindow(cfg.Mood.Night)
	if err != nil {
		return fmt.Errorf("mood.night: %w", err)
	}
	b.cfg = cfg
	b.moodCfg = mood.Config{Night: night, Lonely: cfg.Mood.Lonely.Duration}
	b.feelings = make(chan mood.Event, feelingsQueue)
	return nil
}

// feel tells the mood that something happened. It may be called from any
// goroutine: the loop, which owns the mood, applies it.
func (b *brain) feel(ev mood.Event) {
	select {
	case b.feelings <- ev:
	default:
		b.log.Warn("the mood missed an event: too many at once", "event", ev.String())
	}
}

// felt applies an event that reached the loop.
func (b *brain) felt(ctx context.Context, ev mood.Event) {
	b.moodTo(ctx, b.mood.On(ev, b.clock.Now(), b.moodCfg))
}

// load reads the kept mood, or starts a fresh one, and shows it.
func (b *brain) load(ctx context.Context) {
	now := b.clock.Now()
	b.mood = mood.Initial(now, b.moodCfg)
	raw, ok, err := b.store.Get(ctx, moodKey)
	switch {
	case err != nil:
		b.log.Error("reading the mood; starting afresh", "err", err)
	case ok:
		var kept mood.State
		if err := json.Unmarshal(raw, &kept); err != nil {
			b.log.Warn("the kept mood is unreadable; starting afresh", "err", err)
			break
		}
		// A tick re-derives it for now: the night may have begun while
		// core was away, and loneliness grown.
		b.mood = kept.Tick(now, b.moodCfg)
	}
	b.keep(ctx)
	b.show()
}

// moodTo moves the mood to next: it is kept, logged when it changed, and
// shown on the panel as the at-rest face unless a turn or a reaction
// holds the screen.
func (b *brain) moodTo(ctx context.Context, next mood.State) {
	changed := next.Changed(b.mood)
	b.mood = next
	b.keep(ctx)
	if changed {
		b.log.Info("the mood changed", contracts.AuditEvent, contracts.EventMood, "mood", next.Mood, "why", next.Why)
	}
	b.show()
}

// show shows the mood's face while nothing else holds the screen.
func (b *brain) show() {
	if b.onScreen() {
		return // the turn's faces own the screen
	}
	b.face.idle(b.mood.Mood)
}

// tick is the reflex: the mood drifts, and the next tick is set.
func (b *brain) tick(ctx context.Context) {
	b.moodTo(ctx, b.mood.Tick(b.clock.Now(), b.moodCfg))
	b.clock.AfterFunc(b.cfg.Mood.Tick.Duration, func() { b.onLoop(b.tick) })
}

func (b *brain) keep(ctx context.Context) {
	raw, err := json.Marshal(b.mood)
	if err == nil {
		err = b.writes.note("keep the mood", b.store.Put(ctx, moodKey, raw))
	}
	if err != nil {
		b.log.Error("keeping the mood", "err", err)
	}
}

// schedule stores a schedule the model proposed, for the owner of the
// turn by, with its mark: the turns it starts are marked as by was.
func (b *brain) schedule(ctx context.Context, by ops.Proposer, op contracts.Schedule) error {
	now := b.clock.Now()
	first, every, err := schedule.Plan(op, now, time.Local)
	if err != nil {
		return err
	}
	id, err := b.store.Schedules().Add(ctx, state.Scheduled{
		Text: op.Text, Next: first, Every: every.String(), Transport: by.Origin.Transport, Chat: by.Origin.Chat, Created: now,
		Outside: by.Outside,
	})
	if err != nil {
		return err
	}
	b.log.Info("a turn was scheduled", contracts.AuditEvent, contracts.EventSchedule, "decision", "set",
		"schedule", id, "first", first.Format(time.RFC3339), "every", every.String(), "text", owner.Shorten(op.Text, 80), "outside", by.Outside)
	b.arm(ctx)
	return nil
}

// cancel drops a schedule; the answer says what went.
func (b *brain) cancel(ctx context.Context, id int64) (state.Scheduled, error) {
	gone, err := b.store.Schedules().Cancel(ctx, id)
	if err != nil {
		return state.Scheduled{}, err
	}
	b.log.Info("a schedule was cancelled", contracts.AuditEvent, contracts.EventSchedule, "decision", "cancelled", "schedule", id)
	b.arm(ctx)
	return gone, nil
}

// arm sets the timer for the earliest due schedule; one already due (core
// was down at its time) fires at once.
func (b *brain) arm(ctx context.Context) {
	if b.dueTimer != nil {
		b.dueTimer.Stop()
		b.dueTimer = nil
	}
	next, ok, err := b.store.Schedules().NextDue(ctx)
	if err != nil {
		b.log.Error("reading the schedules; none will fire until the next change", "err", err)
		return
	}
	if !ok {
		return
	}
	wait := next.Sub(b.clock.Now())
	if wait <= 0 {
		// Due already (core was down at its time): now, from outside the
		// loop, which may be the caller.
		go b.onLoop(b.due)
		return
	}
	b.dueTimer = b.clock.AfterFunc(wait, func() { b.onLoop(b.due) })
}

// due starts the turns whose time has come, within the budget. A
// schedule missed while core was down runs once, and its next time is the
// first one still ahead. A due turn during a turn joins the pending slot,
// as a message would.
func (b *brain) due(ctx context.Context) {
	now := b.clock.Now()
	due, err := b.store.Schedules().Due(ctx, now)
	if err != nil {
		b.log.Error("reading the due schedules", "err", err)
		return
	}
	var cooling time.Time // set when the cooldown holds the rest back
	defer func() {
		if cooling.IsZero() {
			b.arm(ctx)
			return
		}
		b.dueTimer = b.clock.AfterFunc(cooling.Sub(now), func() { b.onLoop(b.due) })
	}()
	for _, sc := range due {
		log := b.log.With(contracts.AuditEvent, contracts.EventSchedule, "schedule", sc.ID)
		spent, last, err := b.store.Turns().OfKindSince(ctx, KindScheduled, schedule.Midnight(now))
		if err != nil {
			log.Error("counting today's self-driven turns; the schedule waits", "err", err)
			return
		}
		used, err := b.tokensToday(ctx)
		if err != nil {
			log.Error("summing today's tokens; the schedule waits", "err", err)
			return
		}
		if ok, wait, why := b.budget().Allows(schedule.Spent{Turns: spent, Tokens: used}, last, now); !ok {
			if !wait.IsZero() {
				// Only cooling down: it runs when the cooldown ends.
				log.Info("a scheduled turn waits for the cooldown", "decision", "waiting", "why", why)
				cooling = wait
				return
			}
			log.Warn("a scheduled turn was skipped", "decision", "skipped", "why", why, "text", owner.Shorten(sc.Text, 80))
			b.skipped = fmt.Sprintf("at %s I skipped %q: %s", now.Local().Format("15:04"), owner.Shorten(sc.Text, 40), why)
			b.advance(ctx, sc, now, false)
			continue
		}
		b.advance(ctx, sc, now, true)
		if !b.start(ctx, sc) {
			log.Info("a scheduled turn joined the pending slot", "decision", "coalesced")
			continue
		}
		log.Info("starting a scheduled turn", "decision", "started", "text", owner.Shorten(sc.Text, 80))
	}
}

// advance moves a schedule past now, or drops a one-off; ran says whether
// it ran (a skipped one keeps its last run).
func (b *brain) advance(ctx context.Context, sc state.Scheduled, now time.Time, ran bool) {
	every, err := schedule.ParseEvery(sc.Every)
	next := time.Time{}
	if err == nil {
		next = every.Next(sc.Next, now)
	} else {
		b.log.Error("a schedule's repetition is unreadable; it runs no more", "schedule", sc.ID, "every", sc.Every, "err", err)
	}
	var lastRun time.Time
	if ran {
		lastRun = now
	}
	if err := b.store.Schedules().Reschedule(ctx, sc.ID, next, lastRun); err != nil {
		b.log.Error("moving a schedule on; it may run again", "schedule", sc.ID, "err", err)
	}
}

func (b *brain) budget() schedule.Budget {
	return schedule.Budget{Daily: b.cfg.Schedule.DailyBudget, Cooldown: b.cfg.Schedule.Cooldown.Duration, DailyTokens: b.cfg.Schedule.DailyTokenBudget}
}

// tokensToday is what today's turns used, every provider's tokens
// together: what the token budget of self-driven turns and the owner's
// daily cap weigh.
func (b *brain) tokensToday(ctx context.Context) (int, error) {
	today, err := b.store.Turns().UsageSince(ctx, tokens.Today(b.clock.Now()))
	return today.Total().Total(), err
}

// budgetReport says how much of today's budget of self-driven turns is
// spent, and what was last skipped for it.
func (b *brain) budgetReport(ctx context.Context) string {
	now := b.clock.Now()
	spent, _, err := b.store.Turns().OfKindSince(ctx, KindScheduled, schedule.Midnight(now))
	if err != nil {
		return fmt.Sprintf("Self-driven turns today: unknown (%v).", err)
	}
	line := fmt.Sprintf("Self-driven turns today: %d of %d.", spent, b.cfg.Schedule.DailyBudget)
	if budget := b.cfg.Schedule.DailyTokenBudget; budget > 0 {
		line = fmt.Sprintf("Self-driven turns today: %d of %d, none once today's turns used %d tokens.", spent, b.cfg.Schedule.DailyBudget, budget)
	}
	if b.skipped != "" {
		line += " Last skipped: " + b.skipped + "."
	}
	return line
}

// command lists the schedules, or cancels one: "/schedule",
// "/schedule cancel 3".
func (b *brain) command(ctx context.Context, arg string) string {
	if rest, ok := strings.CutPrefix(arg, "cancel"); ok {
		id, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
		if err != nil || id <= 0 {
			return "Which one? Say /schedule cancel ID, with an ID from /schedule."
		}
		gone, err := b.cancel(ctx, id)
		if err != nil {
			return fmt.Sprintf("I could not cancel %d: %v", id, err)
		}
		return fmt.Sprintf("Cancelled %d: %s", id, gone.Text)
	}
	if arg != "" {
		return "Say /schedule to list what I will do by myself, or /schedule cancel ID."
	}
	all, err := b.store.Schedules().All(ctx)
	if err != nil {
		return fmt.Sprintf("I could not read my schedule: %v", err)
	}
	return owner.Schedules(all, b.budgetReport(ctx))
}
