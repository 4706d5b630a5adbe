// Package commands answers the owner's commands (contracts.Commands):
// /start, /help, /status, /tools, /pending, /schedule, /rules and
// /restore. A command is not a message for the model: it needs no turn,
// does not wait for one, and is answered at once where it was typed;
// an unknown one is answered too, so that a typo does not become a
// message for the model.
package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"shelldon/clock"
	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/mood"
	"shelldon/daemon/owner"
	"shelldon/daemon/procmem"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
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

// Authority is what the commands read of the approval authority
// ([approval.Authority]) and the one thing they change: a rule revoked.
type Authority interface {
	HeldCount() int
	Waiting(ctx context.Context) ([]approval.Request, error)
	ShowAgain(ctx context.Context, to approval.Audience, first int) (approval.Page, error)
	Rules(ctx context.Context) ([]state.Rule, error)
	Revoke(ctx context.Context, id int64, from approval.Audience) (state.Rule, error)
}

// Turns is what /status reads of the turn machine ([turns.Machine]).
type Turns interface {
	Current() *turns.Turn
	Pending() int
}

// Handler answers the owner's commands. It is used from core's loop
// only. The function fields are the other parts' answers, which core
// wires in: each command reads them, and only /schedule and /restore
// change anything, through them.
type Handler struct {
	Config config.Config
	Store  *state.Store
	Layout statedir.Layout
	Auth   Authority
	Turns  Turns
	Clock  clock.Clock
	Log    *slog.Logger
	// ModelHelp ends /help and /start: what the model is known to
	// understand; empty for a real model.
	ModelHelp string
	// Reply answers where the command was typed.
	Reply func(to turns.Origin, out contracts.Outbound)
	// Started is when core started serving.
	Started func() time.Time
	// Mood is the pet's mood; Budget the scheduled turns' budget, worded.
	Mood   func() mood.State
	Budget func(ctx context.Context) string
	// Schedule answers /schedule and what follows it.
	Schedule func(ctx context.Context, arg string) string
	// Writes are core's failed writes to its state.
	Writes func() owner.WriteFailures
	// Tools are what the tool parts hold: the built-in tools, the tool
	// store's, those under or waiting for their gate, the MCP servers.
	// The strikes and the promotions waiting for the owner are read here.
	Tools func() owner.ToolFacts
	// Restore brings a quarantined self-coded tool back.
	Restore func(ctx context.Context, name string) (answer string, refused bool)
}

// Answer answers the owner's command in, typed at from, and reports
// whether in was one: only a typed message can be
// (contracts.InboundCommand). Unknown commands are answered too, so a
// typo does not become a message for the model.
func (h *Handler) Answer(ctx context.Context, from turns.Origin, in contracts.Inbound) bool {
	name, arg, ok := contracts.InboundCommand(in)
	if !ok {
		return false
	}
	var answer string
	refused := false
	switch name {
	case "start":
		answer = "Hello! I'm shelldon, your pet. Talk to me in plain words.\n\n" + h.help()
	case "help":
		answer = h.help()
	case "status":
		answer = owner.StatusReport(h.status(ctx))
	case "tools":
		answer = h.tools(ctx)
	case "pending":
		answer, refused = h.pending(ctx, from, arg)
	case "schedule":
		answer = h.Schedule(ctx, arg)
	case "rules":
		answer, refused = h.rules(ctx, from, arg)
	case strings.TrimPrefix(RestoreCommand, "/"):
		answer, refused = "Which tool? Say /restore NAME; /tools lists the ones I put away.", true
		if arg != "" {
			answer, refused = h.Restore(ctx, arg)
		}
	default:
		answer, refused = fmt.Sprintf("I don't know /%s. /help lists what I understand.", name), true
	}
	h.Log.Info("owner command", "command", name, "from", from.Transport)
	h.Reply(from, contracts.Outbound{Text: answer, Refused: refused})
	return true
}

// help says what the pet understands, and what its model is known to.
func (h *Handler) help() string {
	help := owner.Help(h.Config.Turn.ApprovalExpiry.Duration)
	if h.ModelHelp != "" {
		help += "\n\n" + h.ModelHelp
	}
	return help
}

// status gathers what /status says.
func (h *Handler) status(ctx context.Context) owner.Status {
	s := owner.Status{
		Now: h.Clock.Now(), Started: h.Started(), Pending: h.Turns.Pending(), Held: h.Auth.HeldCount(),
		Memory: memoryReport(), Budget: h.Budget(ctx),
	}
	m := h.Mood()
	s.Mood, s.MoodWhy, s.MoodSince = m.Mood, m.Why, m.Since
	if t := h.Turns.Current(); t != nil {
		s.Turn, s.TurnStarted, s.TurnAbout = t.ID, t.Started, t.Admission.Text+t.Admission.Preview
	}
	waiting, err := h.Auth.Waiting(ctx)
	s.Waiting, s.WaitingErr = len(waiting), err
	if updates, senders, err := h.Store.Queues().StrangerTotal(ctx); err == nil && updates > 0 {
		s.StrangerUpdates, s.StrangerSenders = updates, senders
		if latest, err := h.Store.Queues().Strangers(ctx, 1); err == nil && len(latest) == 1 {
			s.LatestStranger = &latest[0]
		}
	}
	s.Turns, s.TurnsErr = h.Store.Turns().Recent(ctx, statusTurns)
	s.Tokens = h.tokenFacts(ctx, s.Turns)
	s.Writes = h.Writes()
	s.Free, s.FreeErr = h.Layout.Free()
	s.DiskFull = h.Store.DiskFull()
	return s
}

// tokenFacts gathers what /status says of the tokens: the last ended
// turn's (of recent, newest first), today's and this month's.
func (h *Handler) tokenFacts(ctx context.Context, recent []state.TurnRecord) owner.TokenFacts {
	f := owner.TokenFacts{Prices: tokens.PricesOf(h.Config.Providers), Currency: h.Config.Budget.Currency, Cap: h.Config.Budget.DailyTokenCap}
	for _, t := range recent {
		if !t.Ended.IsZero() {
			f.Last, f.LastKnown = t.Usage, true
			break
		}
	}
	now := h.Clock.Now()
	today, err := h.Store.Turns().UsageSince(ctx, tokens.Today(now))
	month, merr := h.Store.Turns().UsageSince(ctx, tokens.ThisMonth(now))
	f.Today, f.Month, f.Err = today, month, errors.Join(err, merr)
	return f
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

// tools lists the tools: built-in, self-coded live with strikes,
// under their gate, waiting for the owner, and put away; the MCP
// servers with their state and tools.
func (h *Handler) tools(ctx context.Context) string {
	strikes := map[string]int{}
	if healths, err := h.Store.Tools().Health(ctx); err == nil {
		for _, h := range healths {
			strikes[h.Name] = h.Strikes
		}
	}
	var waiting []string
	if reqs, err := h.Auth.Waiting(ctx); err == nil {
		for _, r := range reqs {
			if r.Kind == approval.Promotion {
				waiting = append(waiting, r.Promotion.Stem)
			}
		}
	}
	facts := h.Tools()
	facts.Strikes, facts.Waiting = strikes, waiting
	return owner.Tools(facts)
}

// pending shows the waiting requests again, with their buttons,
// where the owner asked, a page at a time (approval.MaxShownAgain) from
// the one arg numbers (the oldest when empty); the answer counts them all
// and says how to see the next ones, one tap away where the transport
// makes /pending_N a link.
func (h *Handler) pending(ctx context.Context, to turns.Origin, arg string) (answer string, refused bool) {
	first := 1
	if arg != "" {
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 {
			return "Say /pending to see the oldest requests that wait, or /pending N to see them from the Nth.", true
		}
		first = n
	}
	page, err := h.Auth.ShowAgain(ctx, approval.Audience(to), first)
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

// rules answers /rules, which lists the rules the owner granted
// (number, words, granted, expires, uses), and /rules revoke N, which
// drops one.
func (h *Handler) rules(ctx context.Context, from turns.Origin, arg string) (answer string, refused bool) {
	if arg != "" {
		verb, n, _ := strings.Cut(arg, " ")
		id, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
		if verb != "revoke" || err != nil || id < 1 {
			return "Say /rules to list the rules, or /rules revoke N to drop rule N.", true
		}
		r, err := h.Auth.Revoke(ctx, id, approval.Audience(from))
		if errors.Is(err, state.ErrNoRule) {
			return fmt.Sprintf("There is no rule %d; /rules lists them.", id), true
		}
		if err != nil {
			return fmt.Sprintf("I could not revoke rule %d: %v", id, err), true
		}
		return fmt.Sprintf("Rule %d revoked: %s asks you again.", r.ID, r.Words), false
	}
	rules, err := h.Auth.Rules(ctx)
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
