package owner

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/daemon/tokens"
	"shelldon/daemon/toolstore"
	"shelldon/daemon/visible"
)

// Help says what the pet understands.
func Help(expiry time.Duration) string {
	var b strings.Builder
	b.WriteString("I can look at files in my workspace, run harmless commands and write small tools for myself. ")
	fmt.Fprintf(&b, "Before I change anything I ask you to approve or deny it; a request I get no answer to expires after %s.\n\nCommands:\n", Roughly(expiry))
	for _, cmd := range contracts.Commands {
		name := "/" + cmd.Name
		if cmd.Arg != "" {
			name += " " + cmd.Arg
		}
		fmt.Fprintf(&b, "%s — %s\n", name, cmd.Description)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Status is what core knows of itself for /status.
type Status struct {
	Now, Started time.Time
	// Turn is the turn in flight, if any: its id, since when, and what.
	Turn        string
	TurnStarted time.Time
	TurnAbout   string
	// Pending are the messages waiting for the next turn; Held the
	// decisions waiting for the turn to end.
	Pending, Held int
	Mood, MoodWhy string
	MoodSince     time.Time
	// Memory and Budget are lines of their own, already worded.
	Memory, Budget string
	// Tokens are the tokens the turns used, and what they cost.
	Tokens TokenFacts
	// Waiting is how many requests wait for the owner; WaitingErr why
	// that is unknown.
	Waiting    int
	WaitingErr error
	// Strangers are the ignored senders: how many updates from how many,
	// and the latest.
	StrangerUpdates int64
	StrangerSenders int
	LatestStranger  *state.Stranger
	// Turns are the last turns, newest first; TurnsErr why they are
	// unknown.
	Turns    []state.TurnRecord
	TurnsErr error
	// Writes are core's failed writes to its state; Free the state
	// directory's free space, FreeErr why it is unknown.
	Writes  WriteFailures
	Free    int64
	FreeErr error
	// DiskFull is how a write found the disk full since the store last
	// held its reserve, or nil.
	DiskFull *state.DiskFull
}

// FreeSomeSpace says what the owner can do about a full disk.
const FreeSomeSpace = "Free some space (old journals: journalctl --vacuum-size=50M)."

// DiskFullNote says, plainly, what a full state disk means for the pet.
func DiskFullNote(f state.DiskFull) string {
	if f.Reserve == 0 {
		return fmt.Sprintf("My disk is full since %s, and I had no room kept in reserve: what I write fails until there is space again.", f.At.Local().Format("15:04"))
	}
	return fmt.Sprintf("My disk is full since %s: I go on answering from the %s I kept in reserve, while it lasts.", f.At.Local().Format("15:04"), MiB(f.Reserve))
}

// WriteFailures count core's writes to its state that failed: how many,
// since when, and the last.
type WriteFailures struct {
	Count             int
	First, Last       time.Time
	LastWhat, LastErr string
}

// StatusReport is the owner's view of the pet now: what it is doing, how
// it feels, what it uses, what waits for them, and how the last turns
// went.
func StatusReport(s Status) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Up %s (since %s).\n", Roughly(s.Now.Sub(s.Started)), s.Started.Local().Format("Jan 2 15:04"))
	if s.Turn != "" {
		fmt.Fprintf(&b, "Working on turn %s for %s: \"%s\".\n", s.Turn, Roughly(s.Now.Sub(s.TurnStarted)), visible.Line(Shorten(s.TurnAbout, 60)))
	} else {
		b.WriteString("Idle, waiting for a message.\n")
	}
	if s.Pending > 0 {
		fmt.Fprintf(&b, "%d message(s) wait for the next turn.\n", s.Pending)
	}
	if s.Held > 0 {
		fmt.Fprintf(&b, "%d decision(s) wait for the turn to end.\n", s.Held)
	}
	if w := s.Writes; w.Count > 0 {
		fmt.Fprintf(&b, "⚠ %d write(s) to my state failed since %s, the last at %s (%s: %s): what they were to keep (turns, history, mood, memories) is missing.\n",
			w.Count, w.First.Local().Format("Jan 2 15:04"), w.Last.Local().Format("15:04"), w.LastWhat, visible.Line(Shorten(w.LastErr, 120)))
	}
	switch {
	case s.DiskFull != nil:
		fmt.Fprintf(&b, "⚠ %s %s\n", DiskFullNote(*s.DiskFull), FreeSomeSpace)
	case s.FreeErr == nil && s.Free < statedir.LowFree:
		fmt.Fprintf(&b, "⚠ Only %s free on my state's disk: writes will start to fail. %s\n", MiB(s.Free), FreeSomeSpace)
	}
	fmt.Fprintf(&b, "Mood: %s (%s, since %s).\n", s.Mood, s.MoodWhy, s.MoodSince.Local().Format("15:04"))
	b.WriteString(s.Memory + "\n")
	b.WriteString(s.Budget + "\n")
	b.WriteString(TokenReport(s.Tokens) + "\n")
	switch {
	case s.WaitingErr != nil:
		fmt.Fprintf(&b, "Requests waiting for you: unknown (%v).\n", s.WaitingErr)
	case s.Waiting > 0:
		fmt.Fprintf(&b, "Requests waiting for you: %d (/pending shows them).\n", s.Waiting)
	}
	if s.StrangerUpdates > 0 {
		fmt.Fprintf(&b, "Ignored %d message(s) from %d stranger(s)", s.StrangerUpdates, s.StrangerSenders)
		if l := s.LatestStranger; l != nil {
			fmt.Fprintf(&b, "; the latest from %s user %s at %s", l.Transport, visible.Line(l.Sender), l.Last.Local().Format("Jan 2 15:04"))
		}
		b.WriteString(".\n")
	}
	switch {
	case s.TurnsErr != nil:
		fmt.Fprintf(&b, "Last turns: unknown (%v).", s.TurnsErr)
		return b.String()
	case len(s.Turns) == 0:
		b.WriteString("No turns yet.")
		return b.String()
	}
	b.WriteString("Last turns:")
	for _, t := range s.Turns {
		outcome, took := t.Outcome, Roughly(t.Total)
		if t.Ended.IsZero() {
			outcome, took = "running", Roughly(s.Now.Sub(t.Started))
		}
		fmt.Fprintf(&b, "\n%s %s in %s — %s", t.Started.Local().Format("15:04"), outcome, took, visible.Line(Shorten(t.Preview, 40)))
	}
	return b.String()
}

// TokenFacts are what /status says of the tokens: the last turn's, and
// today's and this month's per provider, with the prices the owner set,
// the currency they are in, and the daily cap.
type TokenFacts struct {
	// Last is the usage of the last turn that ended; LastKnown says
	// whether one has.
	Last      contracts.UsageByProvider
	LastKnown bool
	// Today and Month are summed per provider; Err says why they are
	// unknown.
	Today, Month contracts.UsageByProvider
	Err          error
	Prices       tokens.Prices
	Currency     string
	// Cap is budget.daily_token_cap; 0 for none.
	Cap int
}

// TokenReport says what the turns used, as the providers counted it, and
// what that costs at the owner's prices: prompt+completion tokens, per
// provider, with an estimate where the provider has a price.
func TokenReport(f TokenFacts) string {
	var b strings.Builder
	b.WriteString("Tokens (prompt+completion, as the providers counted them): ")
	switch {
	case !f.LastKnown:
		b.WriteString("no turn has ended yet.")
	case len(f.Last) == 0:
		b.WriteString("the last turn counted none.")
	default:
		fmt.Fprintf(&b, "the last turn %s.", usageLine(f.Last, f.Prices, f.Currency))
	}
	if f.Err != nil {
		fmt.Fprintf(&b, "\nToday and this month: unknown (%v).", f.Err)
		return b.String()
	}
	fmt.Fprintf(&b, "\nToday: %s.\nThis month: %s.", usageLine(f.Today, f.Prices, f.Currency), usageLine(f.Month, f.Prices, f.Currency))
	if f.Cap > 0 {
		fmt.Fprintf(&b, "\nDaily token cap: %d of %d used today; at the cap, a message of yours asks you before I think about it.", f.Today.Total().Total(), f.Cap)
	}
	return b.String()
}

// usageLine is usage in all and per provider, each with its estimate if
// it has a price: "5000+300 — demo 4000+250 ≈ 0.0011 USD, local 1000+50".
// A provider that answered without saying what it cost (zero tokens) is
// "not reported", and the sum then says it is only what was counted.
func usageLine(usage contracts.UsageByProvider, prices tokens.Prices, currency string) string {
	if len(usage) == 0 {
		return "none"
	}
	parts := make([]string, len(usage))
	unreported := false
	for i, u := range usage {
		if u.Usage == (contracts.Usage{}) {
			parts[i], unreported = visible.Line(u.Provider)+" not reported", true
			continue
		}
		parts[i] = visible.Line(u.Provider) + " " + plusTokens(u.Usage)
		if p, ok := prices[u.Provider]; ok {
			parts[i] += " ≈ " + Cost(p.Cost(u.Usage), currency)
		}
	}
	total := plusTokens(usage.Total())
	switch {
	case unreported && usage.Total() == (contracts.Usage{}):
		total = "none counted"
	case unreported:
		total += " counted"
	}
	return total + " — " + strings.Join(parts, ", ")
}

func plusTokens(u contracts.Usage) string {
	return fmt.Sprintf("%d+%d", u.PromptTokens, u.CompletionTokens)
}

// Cost says an estimate in the owner's currency: to the cent, and a
// cost below a cent to four places, so that a day of a cheap model does
// not read as nothing.
func Cost(amount float64, currency string) string {
	text := fmt.Sprintf("%.2f", amount)
	if amount > 0 && amount < 0.01 {
		text = fmt.Sprintf("%.4f", amount)
	}
	if currency != "" {
		text += " " + visible.Line(currency)
	}
	return text
}

// ToolFacts are what /tools says.
type ToolFacts struct {
	Builtin []string
	// Stored is what the tool store holds; Strikes counts the live tools'
	// failures.
	Stored  []toolstore.Listed
	Strikes map[string]int
	// Gating is the proposal under its gate, Queued those waiting for
	// it, Waiting the ones that passed and wait for the owner's answer.
	Gating          string
	Queued, Waiting []string
	// MCP are the owner's MCP servers, in the configuration's order.
	MCP []MCPServer
}

// MCPServer is what /tools says of one MCP server: its state, and its
// tools the owner named, each with whether it asks.
type MCPServer struct {
	Name, State string
	// Tools are the tools offered ("greet (read-only)"); empty before
	// the server first listed them.
	Tools []string
}

// Tools lists the tools: built in, self-coded live (with their strikes),
// being tested and queued for it, waiting for the owner, and put away.
func Tools(f ToolFacts) string {
	byState := map[toolstore.State][]string{}
	for _, tool := range f.Stored {
		entry := tool.Name
		if n := f.Strikes[tool.Name]; n > 0 && tool.State == toolstore.Live {
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
	fmt.Fprintf(&b, "Built in: %s.\n", list(f.Builtin))
	fmt.Fprintf(&b, "Written by me, live: %s.\n", list(byState[toolstore.Live]))
	testing := "none"
	if f.Gating != "" {
		testing = f.Gating
	}
	if len(f.Queued) > 0 {
		testing += "; next: " + strings.Join(f.Queued, ", ")
	}
	fmt.Fprintf(&b, "Written by me, being tested: %s.\n", testing)
	fmt.Fprintf(&b, "Written by me, waiting for your answer: %s.\n", list(f.Waiting))
	fmt.Fprintf(&b, "Put away: %s.", list(byState[toolstore.Quarantined]))
	if len(byState[toolstore.Quarantined]) > 0 {
		b.WriteString(" /restore NAME brings one back.")
	}
	for _, m := range f.MCP {
		tools := "its tools not listed yet"
		if len(m.Tools) > 0 {
			tools = strings.Join(m.Tools, ", ")
		}
		fmt.Fprintf(&b, "\nMCP server %s (%s): %s.", visible.Line(m.Name), m.State, visible.Line(tools))
	}
	return b.String()
}

// Schedules lists what the pet will do by itself, with the budget line.
func Schedules(all []state.Scheduled, budget string) string {
	if len(all) == 0 {
		return "Nothing is scheduled. Ask me for a reminder or a check-in.\n" + budget
	}
	var b strings.Builder
	b.WriteString("What I will do by myself:")
	for _, sc := range all {
		when := sc.Next.Local().Format("Mon 2 Jan 15:04")
		repeat := "once"
		if every, err := time.ParseDuration(sc.Every); err == nil {
			repeat = "every " + Roughly(every)
		} else if sc.Every != "" {
			repeat = "every " + sc.Every
		}
		fmt.Fprintf(&b, "\n%d. %s (%s): %s", sc.ID, when, repeat, visible.Line(Shorten(sc.Text, 80)))
		if sc.Outside != "" {
			// Its turns ask everything, and no rule lets a call through.
			fmt.Fprintf(&b, " ⚠ set after reading %s", visible.Line(sc.Outside))
		}
	}
	b.WriteString("\n/schedule cancel ID drops one.\n" + budget)
	return b.String()
}

// Roughly says a duration for people, in words and rounded: "2 ms",
// "12.3 seconds", "1 minute 30 seconds", "1 hour", "2 days 2 hours".
func Roughly(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
	case d < time.Minute:
		seconds := strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', -1, 64)
		if seconds == "1" {
			return "1 second"
		}
		return seconds + " seconds"
	case d < time.Hour:
		d = d.Round(time.Second)
		return inUnits(d/time.Minute, "minute", d%time.Minute/time.Second, "second")
	case d < 24*time.Hour:
		d = d.Round(time.Minute)
		return inUnits(d/time.Hour, "hour", d%time.Hour/time.Minute, "minute")
	}
	d = d.Round(time.Hour)
	return inUnits(d/(24*time.Hour), "day", d%(24*time.Hour)/time.Hour, "hour")
}

// inUnits says n of unit and then m of a smaller one, leaving out the
// smaller when there is none of it ("1 hour", "1 hour 5 minutes").
func inUnits(n time.Duration, unit string, m time.Duration, smaller string) string {
	s := count(n, unit)
	if m > 0 {
		s += " " + count(m, smaller)
	}
	return s
}

// count says n of unit, plural when n is not one.
func count(n time.Duration, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// Shorten cuts s to n characters, with an ellipsis when it cut.
func Shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// MiB says a size in mebibytes.
func MiB(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
