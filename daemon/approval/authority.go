package approval

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/mood"
	"shelldon/daemon/state"
)

// What the owner is told about a decision that is not carried out.
const (
	msgHeld     = "Got it. I'm in the middle of something; I'll do that as soon as I finish."
	msgUnknown  = "Nothing is waiting for that answer (it was decided already, or never asked)."
	msgSettled  = "That request is settled already (%s), so I did nothing more."
	msgExpired  = "That request expired, so I did nothing. Ask me again if you still want it."
	msgNotShown = "That request was not shown here, so I did nothing. Answer it where I asked."
	msgDamaged  = "That request was damaged, so I dropped it and did nothing. Ask me again if you still want it."
	msgChanged  = "That request is not the one you answered: it changed since it was shown to you, so I did nothing. Here it is as it is now."
)

// Store is what the authority keeps requests in: the state store.
type Store interface {
	// Approvals are the requests parked, and what each came to.
	Approvals() *state.Approvals
	// Rules are the rules the owner granted.
	Rules() *state.Rules
}

// Notifier reaches the owner's transports.
type Notifier interface {
	// Ask shows a request, with its buttons, at to.
	Ask(to Audience, req contracts.ApprovalRequest)
	// Settled tells every transport that the request of key is settled,
	// so that no button for it stays to be tapped.
	Settled(key, outcome string)
	// Tell says one line to the owner at to.
	Tell(to Audience, text string)
}

// Config sets up an authority.
type Config struct {
	Store  Store
	Notify Notifier
	Clock  clock.Clock
	// Expiry is how long a request waits for the owner.
	Expiry time.Duration
	// RuleLife is how long a rule the owner grants lets calls through.
	RuleLife time.Duration
	Log      *slog.Logger
	// Executor checks and carries out what the owner approved; Host is
	// what only core can do for it.
	Executor Executor
	Host     Host
}

// Authority owns every parked request. Core's loop calls it; it is not
// safe for concurrent use.
type Authority struct {
	cfg Config
	// held are decisions that came while a turn held the slot, in arrival
	// order; they live in memory, so after a restart the owner taps again
	// (/pending shows the request once more).
	held []heldDecision
	// ruled are calls a granted rule let through, waiting for the slot
	// like a held decision; in memory only, as they were never asked.
	ruled []Request
	// parkedDue and rulesDue spare an idle check the store (due.go).
	parkedDue, rulesDue nextDue
}

type heldDecision struct {
	decision contracts.Decision
	from     Audience
}

// New makes an authority.
func New(cfg Config) *Authority {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Authority{cfg: cfg}
}

// Park keeps r for the owner and asks them where it came from: Keep,
// then Ask.
func (a *Authority) Park(ctx context.Context, r Request) error {
	kept, err := a.Keep(ctx, r)
	if err != nil {
		return err
	}
	a.Ask(kept)
	return nil
}

// Keep keeps r for the owner, without asking yet, and returns it as kept:
// for a caller that must say something first, and must not ask at all
// when r could not be kept. The caller gives the kind, the key, the
// origin and the payload; what the owner is shown and the digest are
// made here, from the payload ([Authority.seal]), as are Created, Expires
// and Audiences. A promotion of a tool that already waits replaces the waiting one: that
// one is settled as replaced, so its buttons can never keep the newer
// code.
func (a *Authority) Keep(ctx context.Context, r Request) (Request, error) {
	if err := a.seal(&r); err != nil {
		return Request{}, err
	}
	now := a.cfg.Clock.Now()
	r.Created, r.Expires = now, now.Add(a.cfg.Expiry)
	r.Audiences = []Audience{r.Origin}
	if r.Kind == Promotion {
		a.replacePromotions(ctx, r.Promotion.Stem)
	}
	row, err := r.row()
	if err != nil {
		return Request{}, err
	}
	if err := a.cfg.Store.Approvals().Park(ctx, row); err != nil {
		return Request{}, err
	}
	a.parkedDue.lower(r.Expires)
	a.cfg.Log.Info("asked the owner", contracts.AuditEvent, contracts.EventApprovalRequested, "turn", r.Key,
		"kind", string(r.Kind), "tool", r.Shown.Title, "note", r.Shown.Note, "detail", r.Shown.Detail, "digest", r.Digest)
	return r, nil
}

// Ask shows a kept request to the owner where it came from, with its
// buttons.
func (a *Authority) Ask(r Request) {
	a.cfg.Notify.Ask(r.Origin, r.ask(r.Origin))
}

// replacePromotions settles every waiting promotion of stem as replaced.
func (a *Authority) replacePromotions(ctx context.Context, stem string) {
	for _, old := range a.waiting(ctx) {
		if old.Kind != Promotion || old.Promotion.Stem != stem {
			continue
		}
		if _, err := a.cfg.Store.Approvals().Take(ctx, old.Key, a.cfg.Clock.Now(), contracts.ApprovalReplaced); err != nil && !errors.Is(err, state.ErrApprovalExpired) {
			continue // taken meanwhile: nothing to replace
		}
		a.cfg.Log.Info("a newer proposal replaced a waiting one", contracts.AuditEvent, contracts.EventApprovalDecided,
			"turn", old.Key, "tool", old.Shown.Title, "decision", contracts.ApprovalReplaced)
		a.cfg.Notify.Settled(old.Key, contracts.ApprovalReplaced)
	}
}

// MaxShownAgain bounds the requests [Authority.ShowAgain] shows at once,
// with their buttons: hundreds waiting come a page at a time, not as a
// burst of hundreds of messages.
const MaxShownAgain = 5

// Page is what ShowAgain showed: the waiting requests First to Last
// (counted from 1, oldest first) of the Waiting that wait; Last is 0 when
// it showed none.
type Page struct {
	First, Last, Waiting int
}

// ShowAgain shows at to, with their buttons, at most MaxShownAgain of the
// waiting requests, oldest first, from the first'th (counted from 1), and
// remembers that each was shown there.
func (a *Authority) ShowAgain(ctx context.Context, to Audience, first int) (Page, error) {
	parked, err := a.cfg.Store.Approvals().Waiting(ctx)
	if err != nil && len(parked) == 0 {
		return Page{}, err
	}
	now := a.cfg.Clock.Now()
	var live []Request
	for _, p := range parked {
		r, err := fromRow(p)
		if err != nil || r.Digest == "" || !r.Expires.After(now) {
			continue // damaged, not renewed, or about to be expired and told
		}
		live = append(live, r)
	}
	page := Page{First: max(first, 1), Waiting: len(live)}
	for i := page.First - 1; i < len(live) && i < page.First-1+MaxShownAgain; i++ {
		r := live[i]
		if !r.shownTo(to) {
			r.Audiences = append(r.Audiences, to)
			row, err := r.row()
			if err == nil {
				err = a.cfg.Store.Approvals().Update(ctx, row)
			}
			if err != nil {
				a.cfg.Log.Warn("a request cannot be shown again", "turn", r.Key, "err", err)
				continue
			}
		}
		a.cfg.Notify.Ask(to, r.ask(to))
		page.Last = i + 1
	}
	return page, nil
}

// Verdict says what became of a decision.
type Verdict int

const (
	// Refused: nothing is to be done (unknown, expired, not shown there,
	// damaged); the owner has been told.
	Refused Verdict = iota
	// Held: a turn holds the slot; the decision waits for [Authority.Held].
	Held
	// Approved and Denied: the request is taken; the caller carries the
	// decision out.
	Approved
	Denied
)

// Outcome is what a decision came to.
type Outcome struct {
	Verdict Verdict
	// Request is the taken request, for Approved and Denied.
	Request Request
	// From is where the owner decided.
	From Audience
	// Slot says the decision holds the turn slot (claimed for it): the
	// caller gives it back once it has carried the decision out, unless
	// a resumed turn takes it over.
	Slot bool
}

// Decide takes the owner's decision d, from the place from. A decision is
// taken only from a place the request was shown, only once, and, when it
// names the digest of the version it answers, only for that version
// (otherwise the request is shown there again, as it is now). One that
// needs the turn slot claims it through claim; when a turn holds it, the
// decision is held (the owner is told) and [Authority.Held] returns it
// when the turn ends.
func (a *Authority) Decide(ctx context.Context, d contracts.Decision, from Audience, claim func() bool) Outcome {
	log := a.cfg.Log.With(contracts.AuditEvent, contracts.EventApprovalDecided, "turn", d.Turn, "approve", d.Approve,
		"from", from.Transport, "chat", from.Chat)
	p, settled, err := a.cfg.Store.Approvals().Get(ctx, d.Turn)
	if errors.Is(err, state.ErrNoApproval) && settled.Outcome != "" {
		// A second answer (a double tap, a y typed twice): the card
		// keeps what the first one made of it.
		log.Info("decision on a settled request", "decision", "refused", "outcome", settled.Outcome)
		a.cfg.Notify.Tell(from, fmt.Sprintf(msgSettled, settled.Outcome))
		a.cfg.Notify.Settled(d.Turn, settled.Outcome)
		return Outcome{From: from}
	}
	if errors.Is(err, state.ErrNoApproval) {
		log.Info("decision on nothing parked", "decision", contracts.ApprovalGone)
		a.cfg.Notify.Tell(from, msgUnknown)
		a.cfg.Notify.Settled(d.Turn, contracts.ApprovalGone)
		return Outcome{From: from}
	}
	r, rerr := fromRow(p)
	switch {
	case err == nil && rerr == nil && !r.shownTo(from):
		// Another transport, or another chat, than the one it was shown
		// to: whoever it is, it is not the owner's answer to this.
		log.Warn("refused a decision from where the request was not shown", "decision", "refused", "shown", r.Audiences)
		a.cfg.Notify.Tell(from, msgNotShown)
		return Outcome{From: from}
	case err == nil && rerr == nil && d.Digest != "" && d.Digest != r.Digest:
		log.Warn("refused a decision on another version of the request", "decision", "refused", "answered", d.Digest, "digest", r.Digest)
		a.cfg.Notify.Tell(from, msgChanged)
		a.cfg.Notify.Ask(from, r.ask(from))
		return Outcome{From: from}
	case err == nil && rerr == nil && r.Kind.needsSlot() && !claim():
		a.held = append(a.held, heldDecision{decision: d, from: from})
		log.Info("a decision waits for the running turn to end", "decision", "held")
		a.cfg.Notify.Tell(from, msgHeld)
		return Outcome{Verdict: Held, From: from}
	}
	out := a.take(ctx, d, from, log)
	out.Slot = err == nil && rerr == nil && r.Kind.needsSlot()
	return out
}

// take takes the request of a decision that may be carried out now.
func (a *Authority) take(ctx context.Context, d contracts.Decision, from Audience, log *slog.Logger) Outcome {
	out := Outcome{From: from}
	outcome := contracts.ApprovalDenied
	if d.Approve {
		outcome = contracts.ApprovalApproved
	}
	p, err := a.cfg.Store.Approvals().Take(ctx, d.Turn, a.cfg.Clock.Now(), outcome)
	switch {
	case errors.Is(err, state.ErrApprovalExpired):
		log.Info("decision on an expired request", "decision", contracts.ApprovalExpired)
		a.cfg.Notify.Tell(from, msgExpired)
		a.cfg.Notify.Settled(d.Turn, contracts.ApprovalExpired)
		return out
	case errors.Is(err, state.ErrNoApproval):
		log.Info("decision on nothing parked", "decision", contracts.ApprovalGone)
		a.cfg.Notify.Tell(from, msgUnknown)
		a.cfg.Notify.Settled(d.Turn, contracts.ApprovalGone)
		return out
	case err != nil && !errors.Is(err, state.ErrCorruptApproval):
		log.Error("taking the parked request failed", "err", err)
		a.cfg.Notify.Tell(from, msgUnknown)
		return out
	}
	r, rerr := fromRow(p)
	if err != nil || rerr != nil || r.Digest == "" {
		log.Error("dropped a damaged request", "decision", contracts.ApprovalGone, "err", errors.Join(err, rerr))
		a.cfg.Notify.Tell(from, msgDamaged)
		a.cfg.Notify.Settled(d.Turn, contracts.ApprovalGone)
		return out
	}
	out.Request = r
	out.Verdict = Denied
	if d.Approve {
		out.Verdict = Approved
	}
	log.Info("the owner decided", "decision", outcome, "kind", string(r.Kind), "tool", r.Shown.Title, "digest", r.Digest, "always", d.Always)
	a.cfg.Notify.Settled(d.Turn, outcome)
	if d.Approve && d.Always {
		a.grant(ctx, r, from)
	}
	return out
}

// Held gives back the oldest decision held during a turn, taken now, for
// a caller that holds the slot; false when none is waiting that can be
// carried out. Held decisions whose request is gone meanwhile are told
// and dropped on the way.
func (a *Authority) Held(ctx context.Context) (Outcome, bool) {
	if len(a.ruled) > 0 {
		r := a.ruled[0]
		a.ruled = a.ruled[1:]
		return Outcome{Verdict: Approved, Request: r, From: r.Origin, Slot: true}, true
	}
	for len(a.held) > 0 {
		h := a.held[0]
		a.held = a.held[1:]
		out := a.Decide(ctx, h.decision, h.from, func() bool { return true })
		if out.Verdict == Approved || out.Verdict == Denied {
			return out, true
		}
	}
	return Outcome{}, false
}

// HeldCount is how many decisions, and calls let through by rules, wait
// for the running turn.
func (a *Authority) HeldCount() int { return len(a.held) + len(a.ruled) }

// Expire drops every request whose time has come, tells the owner of each
// where they were asked and settles it everywhere, discards an expired
// change set's kept layer, and returns them.
func (a *Authority) Expire(ctx context.Context) []Request {
	now := a.cfg.Clock.Now()
	if a.parkedDue.notYet(now) {
		return nil
	}
	expired, err := a.cfg.Store.Approvals().Expire(ctx, now)
	if err != nil {
		a.cfg.Log.Error("expiring parked requests", "err", err)
	}
	a.parkedDue.learn(a.cfg.Store.Approvals().NextExpiry(ctx))
	var out []Request
	byOrigin := map[Audience][]Request{}
	var origins []Audience
	for _, p := range expired {
		r, _ := fromRow(p)
		a.cfg.Log.Info("a parked request expired", contracts.AuditEvent, contracts.EventApprovalDecided, "turn", r.Key,
			"kind", string(r.Kind), "tool", r.Shown.Title, "decision", contracts.ApprovalExpired)
		a.cfg.Notify.Settled(r.Key, contracts.ApprovalExpired)
		a.cfg.Host.Feel(mood.Expired)
		if r.Kind == ChangeSet && r.ChangeSet != nil {
			if err := a.cfg.Executor.DiscardKept(r.ChangeSet); err != nil {
				a.cfg.Log.Error("discarding an expired change set", "turn", r.Key, "err", err)
			}
		}
		if _, ok := byOrigin[r.Origin]; !ok {
			origins = append(origins, r.Origin)
		}
		byOrigin[r.Origin] = append(byOrigin[r.Origin], r)
		out = append(out, r)
	}
	for _, o := range origins {
		a.cfg.Notify.Tell(o, expiredNote(byOrigin[o], a.cfg.Expiry))
	}
	return out
}

// maxNamedExpired bounds the requests an expiry's note names; the rest it
// counts.
const maxNamedExpired = 5

// expiredNote tells the owner of the requests asked of them that expired
// in one check: one note, however many.
func expiredNote(expired []Request, expiry time.Duration) string {
	if len(expired) == 1 {
		r := expired[0]
		return fmt.Sprintf("Nobody answered my request (%s: %s) within %v, so I dropped it.", r.Shown.Title, r.Shown.Note, expiry)
	}
	var named []string
	for _, r := range expired[:min(len(expired), maxNamedExpired)] {
		named = append(named, r.Shown.Title+": "+r.Shown.Note)
	}
	if more := len(expired) - len(named); more > 0 {
		named = append(named, fmt.Sprintf("and %d more", more))
	}
	return fmt.Sprintf("Nobody answered %d of my requests within %v, so I dropped them (%s).", len(expired), expiry, strings.Join(named, "; "))
}

// Waiting lists the requests that wait for the owner, oldest first;
// damaged ones are left out (a decision on one drops it and says so).
func (a *Authority) Waiting(ctx context.Context) ([]Request, error) {
	parked, err := a.cfg.Store.Approvals().Waiting(ctx)
	if err != nil && len(parked) == 0 {
		return nil, err
	}
	return a.waitingOf(parked), nil
}

func (a *Authority) waiting(ctx context.Context) []Request {
	parked, _ := a.cfg.Store.Approvals().Waiting(ctx)
	return a.waitingOf(parked)
}

func (a *Authority) waitingOf(parked []state.PendingApproval) []Request {
	var out []Request
	for _, p := range parked {
		if r, err := fromRow(p); err == nil {
			out = append(out, r)
		}
	}
	return out
}

// Renew brings the requests parked before this authority existed up to
// its rules, at start: a call without a digest is checked again and shown
// as it is now ([Authority.seal]) and asked again, with its digest from
// now; a request that cannot be renewed (a promotion whose code lived in
// the workspace, a call that no longer passes the checks, a damaged
// row) is dropped and the owner told.
func (a *Authority) Renew(ctx context.Context) {
	parked, _ := a.cfg.Store.Approvals().Waiting(ctx)
	for _, p := range parked {
		r, err := fromRow(p)
		if err == nil && r.Digest != "" {
			continue
		}
		if err == nil && r.Kind == Call {
			if err = a.seal(&r); err == nil {
				// Before, a request was shown where it was asked.
				r.Audiences = []Audience{r.Origin}
				var row state.PendingApproval
				if row, err = r.row(); err == nil {
					err = a.cfg.Store.Approvals().Update(ctx, row)
				}
			}
			if err == nil {
				a.cfg.Log.Info("asked the owner again after an upgrade", contracts.AuditEvent, contracts.EventApprovalRequested,
					"turn", r.Key, "tool", r.Shown.Title, "digest", r.Digest)
				a.cfg.Notify.Ask(r.Origin, r.ask(r.Origin))
				continue
			}
		}
		a.cfg.Store.Approvals().Take(ctx, p.Turn, a.cfg.Clock.Now(), contracts.ApprovalGone)
		a.cfg.Log.Warn("dropped a request parked before an upgrade", contracts.AuditEvent, contracts.EventApprovalDecided,
			"turn", p.Turn, "kind", p.Kind, "decision", contracts.ApprovalGone, "why", err)
		a.cfg.Notify.Settled(p.Turn, contracts.ApprovalGone)
		a.cfg.Notify.Tell(Audience{Transport: p.Transport, Chat: p.Chat},
			"I had to drop a request I made before an upgrade (it could not be shown safely again). Ask me again if you still want it.")
	}
}
