// Package ops applies what a turn proposes to keep or change (its ops:
// notes, learnings, the about text, faces, schedules, self-coded tools)
// as the only writer of the pet's state, and keeps the requests among
// them for the owner before the turn's reply asks them. Each op is
// validated again here (the worker is not trusted to have done it); a
// bad one is skipped, never stopping the others, and the owner and the
// model read what became of it. What a turn marked by outside content
// would keep of the owner waits for their decision (policy.MarkAsks).
package ops

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/state"
	"shelldon/daemon/turns"
	"shelldon/daemon/visible"
	"shelldon/policy"
)

// Authority parks what a marked turn would keep, for the owner
// ([approval.Authority]).
type Authority interface {
	Park(ctx context.Context, r approval.Request) error
}

// Applier applies the ops of turns. It is used from core's loop; what it
// writes in a batch it writes off the loop, and comes back through
// OnLoop.
type Applier struct {
	// Store keeps the memories the ops add.
	Store *state.Memories
	Auth  Authority
	Clock clock.Clock
	Log   *slog.Logger
	// Failed notes a failed write to the state for /status and returns
	// its error.
	Failed func(what string, err error) error
	Tell   func(to approval.Audience, text string)
	// OffLoop runs a batch of writes off core's loop (core waits for it
	// before the store closes); OnLoop hands its end back to the loop.
	OffLoop func(func())
	OnLoop  func(func(context.Context))
	// FacesAdded reloads the faces for the panels after some were added.
	FacesAdded func()
	// Propose, Schedule and Cancel apply the ops that other parts own:
	// a self-coded tool's proposal (its gate), a schedule and its end.
	Propose  func(ctx context.Context, by Proposer, p contracts.ProposeTool) error
	Schedule func(ctx context.Context, by Proposer, s contracts.Schedule) error
	Cancel   func(ctx context.Context, id int64) error
	// LetThrough reports whether a granted rule lets a turn's RISKY call
	// through without asking (and queues it); Keep keeps it for the
	// owner otherwise.
	LetThrough func(ctx context.Context, t *turns.Turn, req contracts.RequestToolApproval) bool
	Keep       func(ctx context.Context, t *turns.Turn, req contracts.RequestToolApproval) (approval.Request, error)
}

// Requests keeps the turn's requests for the owner before its reply
// asks them, and returns the reply to send, the requests to ask once it
// is sent, and the other ops: a "Shall I?" for a request that could not
// be kept would ask for a tap that nothing waits for, so the reply then
// says that instead.
func (a *Applier) Requests(ctx context.Context, t *turns.Turn, payload string, ops []contracts.Op) (reply string, asks []approval.Request, rest []contracts.Op) {
	reply = payload
	for _, op := range ops {
		req, ok := op.Body.(contracts.RequestToolApproval)
		if !ok {
			rest = append(rest, op)
			continue
		}
		if a.LetThrough(ctx, t, req) {
			reply = "" // it runs now; the owner hears what it did instead of a question
			continue
		}
		kept, err := a.Keep(ctx, t, req)
		if err != nil {
			a.Log.Error("could not keep a request for the owner; not asking", "turn", t.ID, "tool", req.Call.Name, "err", err)
			reply = fmt.Sprintf("I wanted to ask you before using %s, but I could not keep the request (%v), so I am not asking, and nothing ran. Ask me again later.",
				visible.Line(req.Call.Name), err)
			continue
		}
		asks = append(asks, kept)
	}
	return reply, asks, rest
}

// Proposer is who proposed ops: the turn, where it answers, and its mark
// (policy.MarkAsks).
type Proposer struct {
	Turn    string
	Origin  turns.Origin
	Outside string
}

func proposerOf(t *turns.Turn) Proposer {
	return Proposer{Turn: t.ID, Origin: t.Admission.Origin, Outside: t.Admission.Outside}
}

// Apply applies a turn's proposed ops, which passed policy.CheckOps,
// as the only writer of state, and calls done on the loop once they are
// applied, with what the owner and the model are to read of any that
// could not be. Each op is validated again here (the worker is not
// trusted to have done it); a bad one is logged and skipped and never
// stops the others. What a marked turn would keep of the owner is not
// applied: it waits for the owner's decision.
func (a *Applier) Apply(ctx context.Context, t *turns.Turn, ops []contracts.Op, done func(ctx context.Context, told []string)) {
	by := proposerOf(t)
	var now, asked []contracts.Op
	var invalid refusals
	for i, op := range ops {
		log := a.Log.With("turn", t.ID, "op", i+1)
		if op.Body == nil {
			log.Warn("skipped an empty op")
			invalid.add("", errEmptyOp)
			continue
		}
		if err := op.Body.Validate(); err != nil {
			log.Warn("skipped an invalid op", "kind", op.Body.OpName(), "err", err)
			invalid.add(op.Body.OpName(), err)
			continue
		}
		if policy.MarkAsks(by.Outside, op.Body) {
			asked = append(asked, op)
			continue
		}
		now = append(now, op)
	}
	refused := invalid.told(ops)
	if len(asked) > 0 {
		refused = append(refused, a.askToKeep(ctx, by, asked)...)
	}
	a.apply(ctx, by, now, func(ctx context.Context, told []string) { done(ctx, append(refused, told...)) })
}

// ErrTold marks the error of an op whose refusal the owner was told of
// already, in words of its own.
var ErrTold = errors.New("the owner was told")

// errEmptyOp is why an op with no body is skipped.
var errEmptyOp = errors.New("it names no op")

// refusals are the ops of a reply that could not be applied, counted by
// kind and why, for the owner and the model to read how many and why:
// a bound that refuses an op (the live schedules' cap, the faces') says
// so, where a log line alone once did.
type refusals []refusal

type refusal struct {
	kind, why string
	n         int
}

// add counts one op of kind refused for err.
func (r *refusals) add(kind string, err error) {
	why := err.Error()
	for i := range *r {
		if f := &(*r)[i]; f.kind == kind && f.why == why {
			f.n++
			return
		}
	}
	*r = append(*r, refusal{kind: kind, why: why, n: 1})
}

// told says each refusal, with how many of the ops of its kind it counts.
func (r refusals) told(ops []contracts.Op) []string {
	var lines []string
	for _, f := range r {
		of := 0
		for _, op := range ops {
			if op.Body != nil && op.Body.OpName() == f.kind || op.Body == nil && f.kind == "" {
				of++
			}
		}
		kind := f.kind
		if kind == "" {
			kind = "empty"
		}
		lines = append(lines, fmt.Sprintf("%d of the %d %s op(s) I proposed could not be applied: %s.", f.n, of, kind, f.why))
	}
	return lines
}

// apply applies valid ops of by, and calls done on the loop once they
// are applied, with what the owner and the model are to read of those
// that could not be. What they keep of the owner is kept in one step
// (state.Memories.Keep: one transaction, one batch of files) and their faces
// in one write of that file, both off the loop, which waits on neither;
// the others are applied one by one, at once.
func (a *Applier) apply(ctx context.Context, by Proposer, ops []contracts.Op, done func(ctx context.Context, told []string)) {
	var memory state.Memory
	var faces []contracts.AddFace
	var refused refusals
	for _, op := range ops {
		switch o := op.Body.(type) {
		case contracts.Remember:
			memory.Notes = append(memory.Notes, o)
		case contracts.RewriteAbout:
			memory.About = o.Text
		case contracts.CaptureLearning:
			memory.Learnings = append(memory.Learnings, o)
		case contracts.AddFace:
			faces = append(faces, o)
		default:
			log := a.Log.With("turn", by.Turn, "kind", o.OpName())
			if err := a.applyOne(ctx, by, o); err != nil {
				log.Warn("skipped an op that could not be applied", "err", err)
				if !errors.Is(err, ErrTold) {
					refused.add(o.OpName(), err)
				}
				continue
			}
			log.Info("applied op")
		}
	}
	keep := len(memory.Notes) > 0 || memory.About != "" || len(memory.Learnings) > 0
	if !keep && len(faces) == 0 {
		done(ctx, refused.told(ops))
		return
	}
	log := a.Log.With("turn", by.Turn)
	at := a.Clock.Now()
	// A stop lets the batch land: it is a few writes.
	writeCtx := context.WithoutCancel(ctx)
	a.OffLoop(func() {
		var kept, added error
		if keep {
			kept = a.Failed("keep memory", a.Store.Keep(writeCtx, by.Turn, memory, at))
		}
		if len(faces) > 0 {
			added = a.Failed("add faces", a.Store.AddFaces(faces...))
		}
		a.OnLoop(func(ctx context.Context) {
			var told []string
			if added != nil {
				// Each face the registry refused, or all of them when the
				// file could not be written.
				refusedFaces := []error{added}
				if joined, ok := added.(interface{ Unwrap() []error }); ok {
					refusedFaces = joined.Unwrap()
				}
				for _, err := range refusedFaces {
					refused.add(contracts.AddFace{}.OpName(), err)
				}
			}
			told = append(told, refused.told(ops)...)
			switch {
			case kept != nil:
				log.Warn("kept none of a turn's memory", "notes", len(memory.Notes), "learnings", len(memory.Learnings), "err", kept)
				told = append(told, fmt.Sprintf("I kept none of what I noted just now: %v.", kept))
			case keep:
				log.Info("kept memory", "notes", len(memory.Notes), "about", memory.About != "", "learnings", len(memory.Learnings))
			}
			if len(faces) > 0 {
				if added != nil {
					log.Warn("faces not added", "err", added)
				}
				a.FacesAdded()
			}
			done(ctx, told)
		})
	})
}

// applyOne applies one op that is neither kept of the owner nor a face.
func (a *Applier) applyOne(ctx context.Context, by Proposer, body contracts.OpBody) error {
	switch o := body.(type) {
	case contracts.ProposeTool:
		return a.Propose(ctx, by, o)
	case contracts.Schedule:
		return a.Schedule(ctx, by, o)
	case contracts.CancelSchedule:
		return a.Cancel(ctx, o.ID)
	default:
		return errUnsupportedOp{body.OpName()}
	}
}

// askToKeep asks the owner whether to apply what the marked turn by
// would keep of them, and returns what they are to read if it cannot.
func (a *Applier) askToKeep(ctx context.Context, by Proposer, ops []contracts.Op) []string {
	p := approval.MemoryPayload{Ops: ops, Outside: by.Outside, Turn: by.Turn}
	err := a.Auth.Park(ctx, approval.Request{Key: approval.NewKey(), Kind: approval.Memory, Origin: approval.Audience(by.Origin),
		Shown: approval.RenderMemory(p), Digest: approval.MemoryDigest(p), Memory: &p})
	if err := a.Failed("keep a request for the owner", err); err != nil {
		a.Log.Error("could not ask the owner about a marked turn's memory; none of it is kept", "turn", by.Turn, "ops", len(ops), "err", err)
		return []string{fmt.Sprintf("I read text from outside in this turn, so what I noted waits for your word, but I could not ask you (%v), so I kept none of it.", err)}
	}
	a.Log.Info("a marked turn's memory waits for the owner", "turn", by.Turn, "ops", len(ops), "outside", by.Outside)
	return nil
}

// KeepMarked carries out the owner's decision, taken at from, on what a
// marked turn would keep of them, and tells them what became of it.
func (a *Applier) KeepMarked(ctx context.Context, from approval.Audience, req approval.Request, approve bool) {
	p := req.Memory
	if !approve {
		a.Tell(from, "All right, I kept none of it.")
		return
	}
	if err := req.Verify(approval.MemoryDigest(*p)); err != nil {
		a.Tell(from, fmt.Sprintf("I kept none of it: %v.", err))
		return
	}
	for _, op := range p.Ops {
		if err := op.Body.Validate(); err != nil {
			a.Tell(from, fmt.Sprintf("I kept none of it: what I kept for your answer no longer passes my checks (%v).", err))
			return
		}
	}
	// The owner read each change: they are the owner's now, unmarked.
	a.apply(ctx, Proposer{Turn: p.Turn, Origin: turns.Origin(req.Origin)}, p.Ops, func(_ context.Context, told []string) {
		if len(told) == 0 {
			told = []string{"Kept, as you approved."}
		}
		a.Tell(from, strings.Join(told, " "))
	})
}

// errUnsupportedOp is the error for an op this core cannot apply yet.
type errUnsupportedOp struct{ name string }

func (e errUnsupportedOp) Error() string {
	return "op " + e.name + " is not handled by this core"
}
