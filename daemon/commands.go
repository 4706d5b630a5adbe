package daemon

import (
	"context"
	"fmt"
	"strings"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/procmem"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
)

// RestoreCommand, followed by a tool's name, is the owner's command that
// brings a quarantined self-coded tool back with its strikes cleared
// (`shelldon tools restore NAME` sends it).
const RestoreCommand = "/restore"

// statusTurns is how many recent turns /status lists.
const statusTurns = 5

// ownerCommand answers the owner's commands (contracts.Commands) and
// reports whether text was one. Unknown commands are answered too, so a
// typo does not become a message for the model.
func (c *Core) ownerCommand(ctx context.Context, from Origin, text string) bool {
	name, arg, ok := contracts.ParseCommand(text)
	if !ok {
		return false
	}
	var answer string
	switch name {
	case "start":
		answer = "Hello! I'm shelldon, your pet. Talk to me in plain words.\n\n" + c.help()
	case "help":
		answer = c.help()
	case "status":
		answer = c.status(ctx)
	case "tools":
		answer = c.toolReport(ctx)
	case "pending":
		answer = c.showPending(ctx, from)
	case "schedule":
		answer = c.scheduleCommand(ctx, arg)
	case strings.TrimPrefix(RestoreCommand, "/"):
		answer = "Which tool? Say /restore NAME; /tools lists the ones I put away."
		if arg != "" {
			answer = c.restoreTool(ctx, arg)
		}
	default:
		answer = fmt.Sprintf("I don't know /%s. /help lists what I understand.", name)
	}
	c.log.Info("owner command", "command", name, "from", from.Transport)
	c.replyTo(from, contracts.Outbound{Text: answer})
	return true
}

func (c *Core) help() string {
	var b strings.Builder
	b.WriteString("I can look at files in my workspace, run harmless commands and write small tools for myself. ")
	fmt.Fprintf(&b, "Before I change anything I ask you, with Approve and Deny buttons; a request I get no answer to expires after %v.\n\nCommands:\n",
		c.cfg.Turn.ApprovalExpiry.Duration)
	for _, cmd := range contracts.Commands {
		name := "/" + cmd.Name
		if cmd.Arg != "" {
			name += " " + cmd.Arg
		}
		fmt.Fprintf(&b, "%s — %s\n", name, cmd.Description)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// status is the owner's view of the pet now: what it is doing, how it
// feels, what it uses, what waits for them, and how the last turns went.
func (c *Core) status(ctx context.Context) string {
	now := c.clock.Now()
	var b strings.Builder
	fmt.Fprintf(&b, "Up %s (since %s).\n", roughly(now.Sub(c.started)), c.started.Local().Format("Jan 2 15:04"))
	if t := c.turn; t != nil {
		fmt.Fprintf(&b, "Working on turn %s for %s: %q.\n", t.id, roughly(now.Sub(t.started)), shorten(t.admission.Text+t.admission.Preview, 60))
	} else {
		b.WriteString("Idle, waiting for a message.\n")
	}
	if n := c.arb.pendingCount(); n > 0 {
		fmt.Fprintf(&b, "%d message(s) wait for the next turn.\n", n)
	}
	if len(c.held) > 0 {
		fmt.Fprintf(&b, "%d decision(s) wait for the turn to end.\n", len(c.held))
	}
	fmt.Fprintf(&b, "Mood: %s (%s, since %s).\n", c.mood.Mood, c.mood.Why, c.mood.Since.Local().Format("15:04"))
	b.WriteString(memoryReport() + "\n")
	b.WriteString(c.budgetReport(ctx) + "\n")
	if parked, err := c.store.PendingApprovals(ctx); err != nil {
		fmt.Fprintf(&b, "Requests waiting for you: unknown (%v).\n", err)
	} else if len(parked) > 0 {
		fmt.Fprintf(&b, "Requests waiting for you: %d (/pending shows them).\n", len(parked))
	}
	if updates, senders, err := c.store.StrangerTotal(ctx); err == nil && updates > 0 {
		fmt.Fprintf(&b, "Ignored %d message(s) from %d stranger(s)", updates, senders)
		if latest, err := c.store.Strangers(ctx, 1); err == nil && len(latest) == 1 {
			s := latest[0]
			fmt.Fprintf(&b, "; the latest from %s user %s at %s", s.Transport, s.Sender, s.Last.Local().Format("Jan 2 15:04"))
		}
		b.WriteString(".\n")
	}
	turns, err := c.store.RecentTurns(ctx, statusTurns)
	if err != nil {
		fmt.Fprintf(&b, "Last turns: unknown (%v).", err)
		return b.String()
	}
	if len(turns) == 0 {
		b.WriteString("No turns yet.")
		return b.String()
	}
	b.WriteString("Last turns:")
	for _, t := range turns {
		outcome, took := t.Outcome, roughly(t.Total)
		if t.Ended.IsZero() {
			outcome, took = "running", roughly(now.Sub(t.Started))
		}
		fmt.Fprintf(&b, "\n%s %s in %s — %s", t.Started.Local().Format("15:04"), outcome, took, shorten(t.Preview, 40))
	}
	return b.String()
}

// panelStatus is the status strip of the panel: the pet's name, when core
// started, the turns since local midnight and the memory in use.
func (c *Core) panelStatus() contracts.PanelStatus {
	now := c.clock.Now().Local()
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	st := contracts.PanelStatus{Name: "shelldon", Since: c.started, Mood: c.mood.Mood}
	if n, err := c.store.TurnsSince(context.Background(), midnight); err == nil {
		st.TurnsToday = n
	}
	if current, _, ok := procmem.Cgroup(); ok {
		st.Memory = current
	} else if rss, ok := procmem.Self("VmRSS"); ok {
		st.Memory = rss
	}
	return st
}

// memoryReport says what core, its service and the machine use.
func memoryReport() string {
	parts := []string{}
	if rss, ok := procmem.Self("VmRSS"); ok {
		parts = append(parts, "core "+mib(rss)+" resident")
	}
	if current, limit, ok := procmem.Cgroup(); ok {
		part := "my service " + mib(current)
		if limit > 0 {
			part += " of " + mib(limit)
		}
		parts = append(parts, part)
	}
	if total, available, ok := procmem.Machine(); ok {
		parts = append(parts, fmt.Sprintf("the machine %s of %s in use", mib(total-available), mib(total)))
	}
	if len(parts) == 0 {
		return "Memory: unknown here."
	}
	return "Memory: " + strings.Join(parts, "; ") + "."
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// roughly rounds a duration for people: seconds under a minute, then
// minutes, then hours and minutes, then days and hours.
func roughly(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 24*time.Hour:
		return d.Round(time.Minute).String()
	}
	days := d / (24 * time.Hour)
	return fmt.Sprintf("%dd%s", days, (d - days*24*time.Hour).Round(time.Hour))
}

// toolReport lists the tools: built-in, self-coded live with strikes,
// staged, and put away.
func (c *Core) toolReport(ctx context.Context) string {
	strikes := map[string]int{}
	if healths, err := c.store.ToolHealths(ctx); err == nil {
		for _, h := range healths {
			strikes[h.Name] = h.Strikes
		}
	}
	byState := map[statedir.ToolState][]string{}
	for _, tool := range c.layout.SelfCodedTools() {
		entry := tool.Name
		if n := strikes[tool.Name]; n > 0 && tool.State == statedir.ToolLive {
			entry += fmt.Sprintf(" (%d strike(s))", n)
		}
		byState[tool.State] = append(byState[tool.State], entry)
	}
	list := func(names []string) string {
		if len(names) == 0 {
			return "none"
		}
		return strings.Join(names, ", ")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Built in: %s.\n", list(c.tools.BuiltinNames()))
	fmt.Fprintf(&b, "Written by me, live: %s.\n", list(byState[statedir.ToolLive]))
	fmt.Fprintf(&b, "Written by me, waiting (gate or your answer): %s.\n", list(byState[statedir.ToolStaged]))
	fmt.Fprintf(&b, "Put away after failing: %s.", list(byState[statedir.ToolQuarantined]))
	if len(byState[statedir.ToolQuarantined]) > 0 {
		b.WriteString(" /restore NAME brings one back.")
	}
	return b.String()
}

// showPending shows every parked request again, with its buttons, where
// the owner asked; the answer says how many (or that none waits).
func (c *Core) showPending(ctx context.Context, to Origin) string {
	parked, err := c.store.PendingApprovals(ctx)
	if err != nil {
		return fmt.Sprintf("I could not read what is waiting: %v", err)
	}
	now := c.clock.Now()
	shown := 0
	for _, p := range parked {
		if !p.Expires.After(now) {
			continue // the next expiry check drops it and says so
		}
		req, err := c.requestFor(p)
		if err != nil {
			c.log.Warn("a parked request cannot be shown again", "turn", p.Turn, "err", err)
			continue
		}
		c.ask(to, req)
		shown++
	}
	switch shown {
	case 0:
		return "Nothing is waiting for your answer."
	case 1:
		return "One request is waiting for your answer (above)."
	}
	return fmt.Sprintf("%d requests are waiting for your answer (above).", shown)
}

// requestFor rebuilds the request a parked call or promotion was shown
// with: core checks the call again, as it will when it runs it.
func (c *Core) requestFor(p state.PendingApproval) (contracts.ApprovalRequest, error) {
	if strings.HasPrefix(p.Turn, promotePrefix) {
		return c.promotionRequest(p, "passed when I proposed it")
	}
	checked, err := c.checkRisky(p.Call)
	if err != nil {
		return contracts.ApprovalRequest{}, err
	}
	return contracts.ApprovalRequest{Turn: p.Turn, Tool: p.Call.Name, Note: checked.Note, Detail: checked.Detail, Expires: p.Expires}, nil
}
