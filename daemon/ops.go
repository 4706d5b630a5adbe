package daemon

import (
	"context"

	"shelldon/contracts"
	"shelldon/daemon/turns"
)

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
		return c.store.Remember(o.Topic, o.Text, now)
	case contracts.RewriteAbout:
		return c.store.RewriteAbout(o.Text)
	case contracts.CaptureLearning:
		return c.store.AddLearning(ctx, t.ID, o.Text, o.Tags, now)
	case contracts.RequestToolApproval:
		return c.park(ctx, t, o)
	case contracts.ProposeTool:
		return c.keeper.propose(ctx, t, o)
	case contracts.Schedule:
		return c.brain.schedule(ctx, t, o)
	case contracts.CancelSchedule:
		_, err := c.brain.cancel(ctx, o.ID)
		return err
	case contracts.AddFace:
		if err := c.store.AddFace(o.Name, o.Glyphs); err != nil {
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
