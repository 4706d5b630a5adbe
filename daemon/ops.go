package daemon

import (
	"context"
	"fmt"

	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/turns"
	"shelldon/daemon/visible"
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

// applyOps applies a turn's proposed ops as the only writer of state. Each
// op is validated again here (the worker is not trusted to have done it);
// one bad op is logged and skipped and never stops the others.
func (c *Core) applyOps(ctx context.Context, t *turns.Turn, ops []contracts.Op) {
	for i, op := range ops {
		log := c.log.With("turn", t.ID, "op", i+1)
		if op.Body == nil {
			log.Warn("skipped an empty op")
			continue
		}
		log = log.With("kind", op.Body.OpName())
		if err := op.Body.Validate(); err != nil {
			log.Warn("skipped an invalid op", "err", err)
			continue
		}
		if err := c.applyOp(ctx, t, op.Body); err != nil {
			log.Warn("skipped an op that could not be applied", "err", err)
			continue
		}
		log.Info("applied op")
	}
}

func (c *Core) applyOp(ctx context.Context, t *turns.Turn, body contracts.OpBody) error {
	now := c.clock.Now()
	switch o := body.(type) {
	case contracts.Remember:
		return c.writes.note("remember", c.store.Remember(o.Topic, o.Text, now))
	case contracts.RewriteAbout:
		return c.writes.note("rewrite about.md", c.store.RewriteAbout(o.Text))
	case contracts.CaptureLearning:
		return c.writes.note("capture a learning", c.store.AddLearning(ctx, t.ID, o.Text, o.Tags, now))
	case contracts.ProposeTool:
		return c.keeper.propose(ctx, t, o)
	case contracts.Schedule:
		return c.brain.schedule(ctx, t, o)
	case contracts.CancelSchedule:
		_, err := c.brain.cancel(ctx, o.ID)
		return err
	case contracts.AddFace:
		if err := c.writes.note("add a face", c.store.AddFace(o.Name, o.Glyphs)); err != nil {
			return err
		}
		c.loadFaces()
		return nil
	default:
		return errUnsupportedOp{body.OpName()}
	}
}

// errUnsupportedOp is the error for an op this core cannot apply yet.
type errUnsupportedOp struct{ name string }

func (e errUnsupportedOp) Error() string {
	return "op " + e.name + " is not handled by this core"
}
