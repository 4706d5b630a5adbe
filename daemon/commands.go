package daemon

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/owner"
	"shelldon/daemon/procmem"
	"shelldon/daemon/state"
	"shelldon/daemon/tokens"
	"shelldon/daemon/turns"
	"shelldon/daemon/visible"
)

// RestoreCommand, followed by a tool's name, is the owner's command that
// brings a quarantined self-coded tool back with its strikes cleared
// (`shelldon tools restore NAME` sends it).
const RestoreCommand = "/restore"

// statusTurns is how many recent turns /status lists.
const statusTurns = 5

// ownerCommand answers the owner's commands (contracts.Commands) and
// reports whether in was one: only a typed message can be
// (contracts.InboundCommand). Unknown commands are answered too, so a
// typo does not become a message for the model.
func (c *Core) ownerCommand(ctx context.Context, from turns.Origin, in contracts.Inbound) bool {
	name, arg, ok := contracts.InboundCommand(in)
	if !ok {
		return false
	}
	var answer string
	refused := false
	switch name {
	case "start":
		answer = "Hello! I'm shelldon, your pet. Talk to me in plain words.\n\n" + c.help()
	case "help":
		answer = c.help()
	case "status":
		answer = owner.StatusReport(c.statusFacts(ctx))
	case "tools":
		answer = c.toolReport(ctx)
	case "pending":
		answer, refused = c.showPending(ctx, from, arg)
	case "schedule":
		answer = c.brain.command(ctx, arg)
	case "rules":
		answer, refused = c.rulesCommand(ctx, from, arg)
	case strings.TrimPrefix(RestoreCommand, "/"):
		answer, refused = "Which tool? Say /restore NAME; /tools lists the ones I put away.", true
		if arg != "" {
			answer, refused = c.keeper.restore(ctx, arg)
		}
	default:
		answer, refused = fmt.Sprintf("I don't know /%s. /help lists what I understand.", name), true
	}
	c.log.Info("owner command", "command", name, "from", from.Transport)
	c.say.reply(from, contracts.Outbound{Text: answer, Refused: refused})
	return true
}

// help says what the pet understands, and what its model is known to.
func (c *Core) help() string {
	help := owner.Help(c.cfg.Turn.ApprovalExpiry.Duration)
	if c.opts.ModelHelp != "" {
		help += "\n\n" + c.opts.ModelHelp
	}
	return help
}

// statusFacts gathers what /status says.
func (c *Core) statusFacts(ctx context.Context) owner.Status {
	s := owner.Status{
		Now: c.clock.Now(), Started: c.started, Pending: c.turns.Pending(), Held: c.auth.HeldCount(),
		Mood: c.brain.mood.Mood, MoodWhy: c.brain.mood.Why, MoodSince: c.brain.mood.Since,
		Memory: memoryReport(), Budget: c.brain.budgetReport(ctx),
	}
	if t := c.turns.Current(); t != nil {
		s.Turn, s.TurnStarted, s.TurnAbout = t.ID, t.Started, t.Admission.Text+t.Admission.Preview
	}
	waiting, err := c.auth.Waiting(ctx)
	s.Waiting, s.WaitingErr = len(waiting), err
	if updates, senders, err := c.store.StrangerTotal(ctx); err == nil && updates > 0 {
		s.StrangerUpdates, s.StrangerSenders = updates, senders
		if latest, err := c.store.Strangers(ctx, 1); err == nil && len(latest) == 1 {
			s.LatestStranger = &latest[0]
		}
	}
	s.Turns, s.TurnsErr = c.store.RecentTurns(ctx, statusTurns)
	s.Tokens = c.tokenFacts(ctx, s.Turns)
	s.Writes = c.writes.report()
	s.Free, s.FreeErr = c.layout.Free()
	s.DiskFull = c.store.DiskFull()
	return s
}

// tokenFacts gathers what /status says of the tokens: the last ended
// turn's (of recent, newest first), today's and this month's.
func (c *Core) tokenFacts(ctx context.Context, recent []state.TurnRecord) owner.TokenFacts {
	f := owner.TokenFacts{Prices: tokens.PricesOf(c.cfg.Providers), Currency: c.cfg.Budget.Currency, Cap: c.cfg.Budget.DailyTokenCap}
	for _, t := range recent {
		if !t.Ended.IsZero() {
			f.Last, f.LastKnown = t.Usage, true
			break
		}
	}
	now := c.clock.Now()
	today, err := c.store.UsageSince(ctx, tokens.Today(now))
	month, merr := c.store.UsageSince(ctx, tokens.ThisMonth(now))
	f.Today, f.Month, f.Err = today, month, errors.Join(err, merr)
	return f
}

// panelStatus is the status strip of the panel: the pet's name, when core
// started, the turns since local midnight and the memory in use. The
// strip's word is the moment's, which presence adds.
func (c *Core) panelStatus() contracts.PanelStatus {
	now := c.clock.Now().Local()
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	st := contracts.PanelStatus{Name: "shelldon", Since: c.started}
	if n, err := c.store.TurnsSince(context.Background(), midnight); err == nil {
		st.TurnsToday = n
	}
	if current, _, ok := procmem.Cgroup(); ok {
		st.Memory = current
	} else if rss, ok := procmem.Resident(); ok {
		st.Memory = rss
	}
	return st
}

// memoryReport says what core, its service and the machine use.
func memoryReport() string {
	parts := []string{}
	if rss, ok := procmem.Resident(); ok {
		parts = append(parts, "core "+owner.MiB(rss)+" resident")
	}
	if current, limit, ok := procmem.Cgroup(); ok {
		part := "my service " + owner.MiB(current)
		if limit > 0 {
			part += " of " + owner.MiB(limit)
		}
		parts = append(parts, part)
	}
	if total, available, ok := procmem.Machine(); ok {
		parts = append(parts, fmt.Sprintf("the machine %s of %s in use", owner.MiB(total-available), owner.MiB(total)))
	}
	if len(parts) == 0 {
		return "Memory: unknown here."
	}
	return "Memory: " + strings.Join(parts, "; ") + "."
}

// toolReport lists the tools: built-in, self-coded live with strikes,
// under their gate, waiting for the owner, and put away; the MCP
// servers with their state and tools.
func (c *Core) toolReport(ctx context.Context) string {
	strikes := map[string]int{}
	if healths, err := c.store.ToolHealths(ctx); err == nil {
		for _, h := range healths {
			strikes[h.Name] = h.Strikes
		}
	}
	var waiting []string
	if reqs, err := c.auth.Waiting(ctx); err == nil {
		for _, r := range reqs {
			if r.Kind == approval.Promotion {
				waiting = append(waiting, r.Promotion.Stem)
			}
		}
	}
	gating, queued := c.keeper.waitingForGate()
	return owner.Tools(owner.ToolFacts{Builtin: c.tools.BuiltinNames(), Stored: c.keeper.tools.List(), Strikes: strikes,
		Gating: gating, Queued: queued, Waiting: waiting, MCP: c.mcp.report()})
}

// showPending shows the waiting requests again, with their buttons,
// where the owner asked, a page at a time (approval.MaxShownAgain) from
// the one arg numbers (the oldest when empty); the answer counts them all
// and says how to see the next ones, one tap away where the transport
// makes /pending_N a link.
func (c *Core) showPending(ctx context.Context, to turns.Origin, arg string) (answer string, refused bool) {
	first := 1
	if arg != "" {
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 {
			return "Say /pending to see the oldest requests that wait, or /pending N to see them from the Nth.", true
		}
		first = n
	}
	page, err := c.auth.ShowAgain(ctx, approval.Audience(to), first)
	if err != nil {
		return fmt.Sprintf("I could not read what is waiting: %v", err), true
	}
	switch {
	case page.Waiting == 0:
		return "Nothing is waiting for your answer.", false
	case page.Last == 0:
		return fmt.Sprintf("Only %d requests are waiting for your answer; /pending shows the oldest.", page.Waiting), true
	case page.Waiting == 1:
		return "One request is waiting for your answer (above).", false
	case page.First == 1 && page.Last == page.Waiting:
		return fmt.Sprintf("%d requests are waiting for your answer (above).", page.Waiting), false
	}
	answer = fmt.Sprintf("%d requests are waiting for your answer; above are numbers %d to %d, the oldest first, with their buttons.",
		page.Waiting, page.First, page.Last)
	if page.Last < page.Waiting {
		answer += fmt.Sprintf(" /pending_%d shows the next ones.", page.Last+1)
	}
	return answer, false
}

// rulesCommand answers /rules, which lists the rules the owner granted
// (number, words, granted, expires, uses), and /rules revoke N, which
// drops one.
func (c *Core) rulesCommand(ctx context.Context, from turns.Origin, arg string) (answer string, refused bool) {
	if arg != "" {
		verb, n, _ := strings.Cut(arg, " ")
		id, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
		if verb != "revoke" || err != nil || id < 1 {
			return "Say /rules to list the rules, or /rules revoke N to drop rule N.", true
		}
		r, err := c.auth.Revoke(ctx, id, approval.Audience(from))
		if errors.Is(err, state.ErrNoRule) {
			return fmt.Sprintf("There is no rule %d; /rules lists them.", id), true
		}
		if err != nil {
			return fmt.Sprintf("I could not revoke rule %d: %v", id, err), true
		}
		return fmt.Sprintf("Rule %d revoked: %s asks you again.", r.ID, r.Words), false
	}
	rules, err := c.auth.Rules(ctx)
	if err != nil {
		return "I could not read the rules: " + err.Error(), true
	}
	if len(rules) == 0 {
		return "No rules: everything that needs your approval asks. Approve a request that offers one with \"Always for …\" (a in a terminal) to grant it.", false
	}
	var b strings.Builder
	b.WriteString("What runs without asking (/rules revoke N drops one):")
	for _, r := range rules {
		fmt.Fprintf(&b, "\n%d. %s — granted %s, expires %s, used %d time(s)", r.ID, visible.Line(r.Words),
			r.Granted.Local().Format("2006-01-02 15:04"), r.Expires.Local().Format("2006-01-02 15:04"), r.Uses)
	}
	return b.String(), false
}
