package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/state"
	"shelldon/daemon/turns"
	"shelldon/daemon/visible"
	"shelldon/policy"
)

// keepRequests keeps the turn's requests for the owner before its reply
// asks them, and returns the reply to send, the requests to ask once it
// is sent, and the other ops: a "Shall I?" for a request that could not
// be kept would ask for a tap that nothing waits for, so the reply then
// says that instead.
func (c *Core) keepRequests(ctx context.Context, t *turns.Turn, payload string, ops []contracts.Op) (reply string, asks []approval.Request, rest []contracts.Op) {
	reply = payload
	for _, op := range ops {
		req, ok := op.Body.(contracts.RequestToolApproval)
		if !ok {
			rest = append(rest, op)
			continue
		}
		if c.letThrough(ctx, t, req) {
			reply = "" // it runs now; the owner hears what it did instead of a question
			continue
		}
		kept, err := c.keep(ctx, t, req)
		if err != nil {
			c.log.Error("could not keep a request for the owner; not asking", "turn", t.ID, "tool", req.Call.Name, "err", err)
			reply = fmt.Sprintf("I wanted to ask you before using %s, but I could not keep the request (%v), so I am not asking, and nothing ran. Ask me again later.",
				visible.Line(req.Call.Name), err)
			continue
		}
		asks = append(asks, kept)
	}
	return reply, asks, rest
}

// proposer is who proposed ops: the turn, where it answers, and its mark
// (policy.MarkAsks).
type proposer struct {
	turn    string
	origin  turns.Origin
	outside string
}

func proposerOf(t *turns.Turn) proposer {
	return proposer{turn: t.ID, origin: t.Admission.Origin, outside: t.Admission.Outside}
}

// applyOps applies a turn's proposed ops, which passed policy.CheckOps,
// as the only writer of state, and calls done on the loop once they are
// applied, with what the owner and the model are to read of any that
// could not be. Each op is validated again here (the worker is not
// trusted to have done it); a bad one is logged and skipped and never
// stops the others. What a marked turn would keep of the owner is not
// applied: it waits for the owner's decision.
func (c *Core) applyOps(ctx context.Context, t *turns.Turn, ops []contracts.Op, done func(ctx context.Context, told []string)) {
	by := proposerOf(t)
	var now, asked []contracts.Op
	var invalid refusals
	for i, op := range ops {
		log := c.log.With("turn", t.ID, "op", i+1)
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
		if policy.MarkAsks(by.outside, op.Body) {
			asked = append(asked, op)
			continue
		}
		now = append(now, op)
	}
	refused := invalid.told(ops)
	if len(asked) > 0 {
		refused = append(refused, c.askToKeep(ctx, by, asked)...)
	}
	c.apply(ctx, by, now, func(ctx context.Context, told []string) { done(ctx, append(refused, told...)) })
}

// errTold marks the error of an op whose refusal the owner was told of
// already, in words of its own.
var errTold = errors.New("the owner was told")

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
// (state.Store.Keep: one transaction, one batch of files) and their faces
// in one write of that file, both off the loop, which waits on neither;
// the others are applied one by one, at once.
func (c *Core) apply(ctx context.Context, by proposer, ops []contracts.Op, done func(ctx context.Context, told []string)) {
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
			log := c.log.With("turn", by.turn, "kind", o.OpName())
			if err := c.applyOp(ctx, by, o); err != nil {
				log.Warn("skipped an op that could not be applied", "err", err)
				if !errors.Is(err, errTold) {
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
	log := c.log.With("turn", by.turn)
	at := c.clock.Now()
	// A stop lets the batch land: it is a few writes.
	writeCtx := context.WithoutCancel(ctx)
	c.offLoop.Go(func() {
		var kept, added error
		if keep {
			kept = c.writes.note("keep memory", c.store.Keep(writeCtx, by.turn, memory, at))
		}
		if len(faces) > 0 {
			added = c.writes.note("add faces", c.store.AddFaces(faces...))
		}
		c.onLoop(func(ctx context.Context) {
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
				c.face.load(c.layout, c.log)
			}
			done(ctx, told)
		})
	})
}

// applyOp applies one op that is neither kept of the owner nor a face.
func (c *Core) applyOp(ctx context.Context, by proposer, body contracts.OpBody) error {
	switch o := body.(type) {
	case contracts.ProposeTool:
		return c.keeper.propose(ctx, by, o)
	case contracts.Schedule:
		return c.brain.schedule(ctx, by, o)
	case contracts.CancelSchedule:
		_, err := c.brain.cancel(ctx, o.ID)
		return err
	default:
		return errUnsupportedOp{body.OpName()}
	}
}

// askToKeep asks the owner whether to apply what the marked turn by
// would keep of them, and returns what they are to read if it cannot.
func (c *Core) askToKeep(ctx context.Context, by proposer, ops []contracts.Op) []string {
	p := approval.MemoryPayload{Ops: ops, Outside: by.outside, Turn: by.turn}
	err := c.auth.Park(ctx, approval.Request{Key: approval.NewKey(), Kind: approval.Memory, Origin: approval.Audience(by.origin),
		Shown: approval.RenderMemory(p), Digest: approval.MemoryDigest(p), Memory: &p})
	if err := c.writes.note("keep a request for the owner", err); err != nil {
		c.log.Error("could not ask the owner about a marked turn's memory; none of it is kept", "turn", by.turn, "ops", len(ops), "err", err)
		return []string{fmt.Sprintf("I read text from outside in this turn, so what I noted waits for your word, but I could not ask you (%v), so I kept none of it.", err)}
	}
	c.log.Info("a marked turn's memory waits for the owner", "turn", by.turn, "ops", len(ops), "outside", by.outside)
	return nil
}

// keepMarked carries out the owner's decision, taken at from, on what a
// marked turn would keep of them, and tells them what became of it.
func (c *Core) keepMarked(ctx context.Context, from approval.Audience, req approval.Request, approve bool) {
	p := req.Memory
	if !approve {
		c.say.Tell(from, "All right, I kept none of it.")
		return
	}
	if err := req.Verify(approval.MemoryDigest(*p)); err != nil {
		c.say.Tell(from, fmt.Sprintf("I kept none of it: %v.", err))
		return
	}
	for _, op := range p.Ops {
		if err := op.Body.Validate(); err != nil {
			c.say.Tell(from, fmt.Sprintf("I kept none of it: what I kept for your answer no longer passes my checks (%v).", err))
			return
		}
	}
	// The owner read each change: they are the owner's now, unmarked.
	c.apply(ctx, proposer{turn: p.Turn, origin: turns.Origin(req.Origin)}, p.Ops, func(_ context.Context, told []string) {
		if len(told) == 0 {
			told = []string{"Kept, as you approved."}
		}
		c.say.Tell(from, strings.Join(told, " "))
	})
}

// errUnsupportedOp is the error for an op this core cannot apply yet.
type errUnsupportedOp struct{ name string }

func (e errUnsupportedOp) Error() string {
	return "op " + e.name + " is not handled by this core"
}
