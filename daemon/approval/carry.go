package approval

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"shelldon/contracts"
	"shelldon/daemon/mood"
	"shelldon/policy"
	"shelldon/sandbox"
	"shelldon/tools"
)

// Executor carries out what the owner approved, in the workspace:
// package approved's Runner. It carries out only a [Verified] request:
// the authority computes the digest again and checks it first.
type Executor interface {
	// Check checks a call as core's tools do now, and accepts only one
	// that asks the owner.
	Check(call contracts.ToolCall) (tools.Checked, error)
	// OpenKept scans a kept change set again, against the workspace as
	// it is now: what applying it would do today.
	OpenKept(p *ChangeSetPayload) (*sandbox.ChangeSet, error)
	// Run carries out a verified call.
	Run(ctx context.Context, v Verified) Result
	// ApplyKept applies a verified change set, and discards it.
	ApplyKept(ctx context.Context, v Verified) Report
	// DiscardKept drops a kept change set the owner turned down, or that
	// expired.
	DiscardKept(p *ChangeSetPayload) error
}

// Host is what only core can do for a decision carried out: its loop,
// its turns, its mood, its tools and memory.
type Host interface {
	Feel(e mood.Event)
	// Go runs f off core's loop; OnLoop runs f on it again.
	Go(f func())
	OnLoop(f func(ctx context.Context))
	// Release gives the turn slot back.
	Release(ctx context.Context)
	// Progress shows the owner the run of a call they approved, under
	// its request's key; done settles the line.
	Progress(r Request, doing string, done bool)
	// Changes tells the owner at to what a change set did.
	Changes(to Audience, what string, report *Report)
	// Resume starts the turn that takes r's parked conversation up with
	// answer, marked by outside ("" for none).
	Resume(ctx context.Context, r Request, answer contracts.Message, preview, outside string)
	// KeepTool carries out the decision on a promotion (its digest
	// verified when approved) and says what the owner is told.
	KeepTool(ctx context.Context, r Request, approve bool, from Audience) string
	// PastCap carries out the decision on a message past the token cap
	// (its digest verified when approved), and reports whether it holds
	// the slot.
	PastCap(ctx context.Context, out Outcome) bool
	// KeepMemory carries out the decision, taken at from, on what a
	// marked turn would keep (its digest verified when approved).
	KeepMemory(ctx context.Context, from Audience, r Request, approve bool)
}

// Verified is a request whose digest was computed again, from what
// carrying it out would do now, and found to be the one the owner
// approved. Only [Verify] makes one, and an [Executor] carries out
// nothing else.
type Verified struct {
	req     Request
	checked tools.Checked
	kept    *sandbox.ChangeSet
}

// Request is the verified request.
func (v Verified) Request() Request { return v.req }

// Checked is a verified call as core's check made it now: what runs.
func (v Verified) Checked() tools.Checked { return v.checked }

// Kept is a verified change set as scanned now: what is applied.
func (v Verified) Kept() *sandbox.ChangeSet { return v.kept }

// measured is what carrying a request out would do now, as the owner
// reads it and as its digest binds it.
type measured struct {
	shown  Shown
	digest string
	// checked is a call as core's check makes it now; kept a change set
	// as scanned now (its holder discards it, or leaves it kept).
	checked tools.Checked
	kept    *sandbox.ChangeSet
}

// measure makes, from r's payload and what carrying it out would do now,
// its card and its digest: the one place both are made, when a request
// is parked and again before it is carried out. A call is checked again
// by the executor (the workspace may have changed in the hour it waited),
// a kept change set scanned again.
func measure(exec Executor, r Request) (measured, error) {
	var m measured
	switch {
	case r.Kind == Call && r.Call != nil:
		checked, err := exec.Check(r.Call.Call)
		if err != nil {
			return m, err
		}
		name, outside := r.Call.Call.Name, r.Call.Outside
		m.checked, m.shown, m.digest = checked, RenderCall(name, checked, outside), CallDigest(name, checked, outside)
	case r.Kind == ChangeSet && r.ChangeSet != nil:
		cs, err := exec.OpenKept(r.ChangeSet)
		if err != nil {
			return m, fmt.Errorf("the kept changes cannot be read: %w", err)
		}
		if m.digest, err = cs.Digest(); err != nil {
			return m, fmt.Errorf("the kept changes cannot be read: %w", err)
		}
		m.kept, m.shown = cs, RenderChangeSet(*r.ChangeSet)
	case r.Kind == Promotion && r.Promotion != nil:
		m.shown, m.digest = RenderPromotion(*r.Promotion), PromotionDigest(*r.Promotion)
	case r.Kind == TokenCap && r.TokenCap != nil:
		m.shown, m.digest = RenderTokenCap(*r.TokenCap), TokenCapDigest(*r.TokenCap)
	case r.Kind == Memory && r.Memory != nil:
		m.shown, m.digest = RenderMemory(*r.Memory), MemoryDigest(*r.Memory)
	default:
		return m, fmt.Errorf("a %q without its payload", r.Kind)
	}
	return m, nil
}

// Verify measures what carrying r out would do now and checks its digest
// against the one the owner approved: the one place a digest is checked,
// for every kind. A change set that fails is discarded.
func Verify(exec Executor, r Request) (Verified, error) {
	m, err := measure(exec, r)
	switch {
	case err != nil && r.Kind == Call:
		return Verified{}, fmt.Errorf("the approved call no longer passes the checks: %w", err)
	case err != nil:
		return Verified{}, err
	}
	if err := r.Verify(m.digest); err != nil {
		if r.Kind == ChangeSet {
			m.kept.Discard()
			return Verified{}, fmt.Errorf("nothing was applied: the changes, or the workspace under them, are not what you were shown (%w)", err)
		}
		return Verified{}, err
	}
	return Verified{req: r, checked: m.checked, kept: m.kept}, nil
}

// Refusal is what the model is told of an approved call that failed
// [Verify]: nothing ran.
func Refusal(err error) Result {
	if errors.Is(err, ErrChanged) {
		return Result{Changed: true, Answer: "error: nothing ran: what this call would run now is not what the owner approved"}
	}
	return Result{Answer: "error: " + err.Error()}
}

// seal sets what r shows and its digest, as [measure] makes them, and a
// call's offer: the rule policy states for it, unless it was asked after
// outside content or a rule let it through.
func (a *Authority) seal(r *Request) error {
	m, err := measure(a.cfg.Executor, *r)
	if err != nil {
		return err // a call's says what the owner would not be asked
	}
	r.Shown, r.Digest = m.shown, m.digest
	if p := r.Call; r.Kind == Call {
		p.Offer = nil
		if rule, ok := policy.RuleFor(m.checked.RuleCall(p.Call.Name)); ok && policy.RulesApply(p.Outside) && p.Rule == nil {
			p.Offer = &rule
		}
	}
	return nil
}

// CarryOut does what a taken decision says: it verifies an approved
// request ([Verify]) and hands it to its executor — a call to the
// executor and then its resumed turn, a change set to the executor, a
// promotion, a message past the cap and a marked turn's memory to core —
// and feels it. It reports whether the decision goes on holding the slot
// (a call being carried out for its resumed turn, a change set being
// applied, a turn started past the cap); the caller gives the slot back
// otherwise, if the decision held it.
func (a *Authority) CarryOut(ctx context.Context, out Outcome) bool {
	if out.Verdict != Approved && out.Verdict != Denied {
		return false
	}
	approve, req, h := out.Verdict == Approved, out.Request, a.cfg.Host
	var refused error
	if approve && req.Kind != Call && req.Kind != ChangeSet {
		_, refused = Verify(a.cfg.Executor, req)
	}
	switch req.Kind {
	case Promotion:
		if refused != nil {
			a.cfg.Notify.Tell(out.From, fmt.Sprintf("I did not keep %s: %v", req.Promotion.Stem, refused))
			return false
		}
		a.cfg.Notify.Tell(out.From, h.KeepTool(ctx, req, approve, out.From))
		return false
	case TokenCap:
		if refused != nil {
			a.cfg.Log.Error("a message past the cap is not what the owner approved; no turn starts", "request", req.Key, "err", refused)
			a.cfg.Notify.Tell(req.Origin, "I did not think about it: what I kept is not what you approved. Ask me again.")
			return false
		}
		return h.PastCap(ctx, out)
	case Memory:
		if refused != nil {
			a.cfg.Notify.Tell(out.From, fmt.Sprintf("I kept none of it: %v.", refused))
			return false
		}
		h.KeepMemory(ctx, out.From, req, approve)
		return false
	case ChangeSet:
		return a.carryOutChangeSet(ctx, out, approve)
	}
	return a.carryOutCall(ctx, out, approve)
}

// carryOutChangeSet applies a kept change set the owner let through, if
// it still is what they were shown, off the loop; or discards it.
func (a *Authority) carryOutChangeSet(ctx context.Context, out Outcome, approve bool) bool {
	req, h, exec := out.Request, a.cfg.Host, a.cfg.Executor
	if !approve {
		h.Feel(mood.Denied)
		if err := exec.DiscardKept(req.ChangeSet); err != nil {
			a.cfg.Log.Error("discarding a change set the owner turned down", "turn", req.Key, "err", err)
		}
		a.cfg.Notify.Tell(out.From, fmt.Sprintf("All right, I threw away the changes of %s; the workspace is as it was.", req.ChangeSet.Tool))
		return false
	}
	h.Feel(mood.Approved)
	h.Go(func() {
		var report Report
		if v, err := Verify(exec, req); err != nil {
			report.Err = err
		} else {
			report = exec.ApplyKept(ctx, v)
		}
		h.OnLoop(func(ctx context.Context) {
			h.Changes(req.Origin, fmt.Sprintf("the changes of %s", req.ChangeSet.Tool), &report)
			h.Release(ctx)
		})
	})
	return true
}

// carryOutCall runs an approved call off the loop, verified first (the
// progress line says what the verified call does, and only that call
// runs), and then resumes its turn with the answer; a denied call
// resumes it with the denial.
func (a *Authority) carryOutCall(ctx context.Context, out Outcome, approve bool) bool {
	req, h, exec := out.Request, a.cfg.Host, a.cfg.Executor
	decision := contracts.ApprovalDenied
	var v Verified
	var res Result
	verified := false
	if approve {
		decision = contracts.ApprovalApproved
		h.Feel(mood.Approved)
		var err error
		if v, err = Verify(exec, req); err != nil {
			a.cfg.Log.Warn("refused to run an approved call", contracts.AuditEvent, contracts.EventApprovalDecided,
				"turn", req.Key, "tool", req.Call.Call.Name, "decision", "changed", "err", err)
			res = Refusal(err)
		} else {
			verified = true
			h.Progress(req, v.checked.Doing, false)
		}
	} else {
		h.Feel(mood.Denied)
	}
	doing := v.checked.Doing
	h.Go(func() {
		answer := contracts.DeniedByOwner
		if verified {
			res = exec.Run(ctx, v)
		}
		if approve {
			answer = res.Answer
		}
		h.OnLoop(func(ctx context.Context) {
			if doing != "" {
				h.Progress(req, doing, true)
			}
			a.resume(ctx, req, answer, decision, res)
		})
	})
	return true
}

// resume tells the owner what the approved call changed (and parks its
// change set if it needs their own look), then has core start the turn
// that takes the parked conversation up with the answer to its call.
func (a *Authority) resume(ctx context.Context, req Request, answer, decision string, res Result) {
	call, tell := req.Call.Call, a.cfg.Notify.Tell
	if rule := req.Call.Rule; rule != nil {
		what, more, _ := strings.Cut(req.Shown.Detail, "\n")
		if more != "" {
			what += " …"
		}
		tell(req.Origin, fmt.Sprintf("Ran under rule %d (%s): %s", rule.ID, rule.Words, what))
	}
	if res.Changed {
		tell(req.Origin, fmt.Sprintf("I did not run %s: what it would run now is not what you approved (the workspace changed since?). Ask me again.", call.Name))
	}
	if res.Applied != nil {
		a.cfg.Host.Changes(req.Origin, call.Name, res.Applied)
	}
	if res.Kept != nil {
		if err := a.Park(ctx, res.KeptRequest(req)); err != nil {
			a.cfg.Log.Error("asking the owner about a change set failed; it was dropped", "turn", req.Key, "err", err)
			a.cfg.Executor.DiscardKept(res.Kept)
			tell(req.Origin, fmt.Sprintf("The changes of %s needed your own look, but I could not ask you (%v), so I dropped them.", res.Kept.Tool, err))
		}
	}
	a.cfg.Host.Resume(ctx, req, contracts.Message{Role: contracts.ChatTool, ToolCallID: call.ID, Content: answer},
		fmt.Sprintf("(%s %s)", decision, call.Name), policy.MarkResumed(req.Call.Outside, res.Outside))
}

// Result is what carrying out an approved call came to.
type Result struct {
	// Answer is what the model is told.
	Answer string
	// Applied is what a command changed in the workspace, for the owner
	// to see; nil when it changed nothing there.
	Applied *Report
	// Kept is a change set that needs the owner's own look: it is parked
	// as a request of its own.
	Kept *ChangeSetPayload
	// Changed says nothing ran: what the call would run now is not what
	// the owner approved.
	Changed bool
	// Outside names where the answer's text came from when it came from
	// outside — the URL of a fetched page, the remote of a git fetch —
	// and is "" otherwise. That text reaches the model fenced as
	// untrusted data, and the turn that reads it is marked by it.
	Outside string
}

// KeptRequest is the request that asks the owner about the change set
// that call's approved command kept for their own look (res.Kept).
func (res Result) KeptRequest(call Request) Request {
	return Request{Key: NewKey(), Kind: ChangeSet, Origin: call.Origin, ChangeSet: res.Kept}
}
