package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"shelldon/beneath"
	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/mood"
	"shelldon/daemon/ops"
	"shelldon/daemon/selfcode"
	"shelldon/daemon/state"
	"shelldon/daemon/toolstore"
	"shelldon/daemon/visible"
	"shelldon/sandbox"
	"shelldon/tools"
)

// keeper looks after the tools the pet writes for itself: it stages a
// proposal and gates it, asks the owner to keep exactly what was gated,
// keeps it, offers the live tools that pass their check, prepares one for
// a run, counts strikes, and puts away a tool that failed or changed
// behind the store. The loop owns it; the gate runs off the loop.
type keeper struct {
	tools     *toolstore.Store
	state     *state.Store
	writes    *failedWrites
	builtins  *tools.Registry
	auth      *approval.Authority
	sandbox   Sandbox
	noSandbox error
	strikes   int // turn.tool_strikes
	clock     clock.Clock
	log       *slog.Logger
	tell      func(approval.Audience, string)
	feel      func(mood.Event)
	onLoop    func(func(context.Context))
	// offLoop counts the gates running off the loop, for core to wait for.
	offLoop *sync.WaitGroup

	// One gate runs at a time: gating is the proposal under its gate,
	// queue those waiting for it, in the order proposed.
	gating *proposal
	queue  []proposal
}

// proposal is a tool the model proposed, waiting for or under its gate.
// It is kept in the state store (gateQueueKey) until its gate's verdict
// is in, as a message is until it is answered: a stop cuts a gate, and
// the next core tests it again.
type proposal struct {
	Stem   string                `json:"stem"`
	Tool   contracts.ProposeTool `json:"tool"`
	Origin approval.Audience     `json:"origin"`
	Turn   string                `json:"turn"`
	// Outside is the mark of the turn that proposed it: its card says so.
	Outside string `json:"outside,omitempty"`
}

// gateQueueKey is the state store's key of the proposals under or
// waiting for their gate, in order, the one under its gate first.
const gateQueueKey = "gate-queue"

// maxQueuedGates bounds the proposals waiting for the gate: a reply that
// proposes a dozen tools gets the first ones tested, the rest refused.
const maxQueuedGates = 4

// propose takes a tool the model wrote: checked, then gated in the
// sandbox away from the turn loop, one gate at a time (a gate may use
// the sandbox's whole memory, task and disk bounds, and several at once
// would not fit the board); the rest wait in order, and the owner is told
// which. A pass asks the owner to keep exactly the code that was gated,
// a failure discards it and says why.
func (k *keeper) propose(ctx context.Context, by ops.Proposer, p contracts.ProposeTool) error {
	if k.sandbox == nil {
		return fmt.Errorf("no sandbox to test a new tool in (%v)", k.noSandbox)
	}
	origin := approval.Audience(by.Origin)
	stem, err := selfcode.Check(p.Name, p.Code, p.Test, k.builtins.BuiltinNames())
	if err != nil {
		// The turn that proposed it is over: the owner hears why.
		k.tell(origin, fmt.Sprintf("I wrote a tool, but did not test it: %v", err))
		return err
	}
	next := proposal{Stem: stem, Tool: p, Origin: origin, Turn: by.Turn, Outside: by.Outside}
	if k.gating == nil {
		k.gate(ctx, next)
		k.keepQueue(ctx)
		return nil
	}
	if len(k.queue) >= maxQueuedGates {
		k.tell(next.Origin, fmt.Sprintf("I wrote a tool, %s, but %d of my tools already wait to be tested, so I dropped it. Ask me again later.", stem, len(k.queue)+1))
		return fmt.Errorf("%w: %d tools already wait to be tested (%w)", selfcode.ErrRefused, len(k.queue)+1, ops.ErrTold)
	}
	k.queue = append(k.queue, next)
	k.keepQueue(ctx)
	k.log.Info("a proposed tool waits for the gate", contracts.AuditEvent, contracts.EventPromotion, "turn", by.Turn, "tool", stem,
		"decision", "queued", "behind", k.gating.Stem)
	k.tell(next.Origin, fmt.Sprintf("I wrote a tool, %s; I will test it once the test of %s is done.", stem, k.gating.Stem))
	return nil
}

// untestable takes out of ops the tools proposed where no gate can run
// (no sandbox: its image is not built, say), and says why for each, for
// the owner to read before the reply that says the tool goes through
// its gate, as a command is answered at once.
func (k *keeper) untestable(ops []contracts.Op) (rest []contracts.Op, told []string) {
	if k.sandbox != nil {
		return ops, nil
	}
	for _, op := range ops {
		p, ok := op.Body.(contracts.ProposeTool)
		if !ok {
			rest = append(rest, op)
			continue
		}
		k.log.Info("a proposed tool cannot be tested", contracts.AuditEvent, contracts.EventPromotion, "tool", p.Name,
			"decision", "unavailable", "why", k.noSandbox)
		told = append(told, fmt.Sprintf("I wrote a tool, %s, but I cannot test it here, so I cannot keep it: %v.", visible.Line(p.Name), k.noSandbox))
	}
	return rest, told
}

// gate stages a proposal in the tool store and runs its gate off the
// loop; when the verdict is in, the next proposal waiting gets the gate.
// It is staged only now, so that an update is held to the live version
// of the moment, not of when it was proposed.
func (k *keeper) gate(ctx context.Context, p proposal) {
	staged, err := k.tools.Stage(approval.NewKey(), p.Stem, p.Tool.Code, p.Tool.Test)
	if err != nil {
		k.tell(p.Origin, fmt.Sprintf("I wrote a tool, %s, but could not stage it for its test: %v", p.Stem, err))
		k.gateNext(ctx)
		return
	}
	k.gating = &p
	k.log.Info("testing a proposed tool", contracts.AuditEvent, contracts.EventPromotion, "turn", p.Turn, "tool", p.Stem, "decision", "gate")
	k.offLoop.Go(func() {
		v, err := selfcode.Gate(ctx, k.sandbox, staged.Dir, p.Stem)
		staged.Discard()
		if ctx.Err() != nil {
			// The verdict is the stop's, not the tool's: the proposal
			// stays kept, and the next core tests it again.
			k.log.Info("stopping: the test of a proposed tool was cut; the next start tests it again, and those waiting behind it",
				"tool", p.Stem)
			return
		}
		k.onLoop(func(ctx context.Context) {
			k.gating = nil
			k.gated(ctx, staged, p, v, err)
			k.gateNext(ctx)
			k.keepQueue(ctx)
		})
	})
}

// keepQueue keeps the proposals under and waiting for their gate in the
// state store, for the next core should this one stop before their
// verdicts. A store that cannot keep them (a full disk) is counted and
// logged; the gates go on.
func (k *keeper) keepQueue(ctx context.Context) {
	kept := k.queue
	if k.gating != nil {
		kept = append([]proposal{*k.gating}, k.queue...)
	}
	data, err := json.Marshal(kept)
	if err == nil {
		err = k.writes.note("keep the proposed tools until their tests end", k.state.Put(ctx, gateQueueKey, data))
	}
	if err != nil {
		k.log.Error("keeping the proposed tools until their tests end", "err", err)
	}
}

// resumeGates takes up the proposals an earlier core kept under or
// waiting for their gate: each is checked again, the owner told it is
// tested again, and gated in order. At most maxQueuedGates+1 are taken,
// as many as a core holds.
func (k *keeper) resumeGates(ctx context.Context) {
	raw, ok, err := k.state.Get(ctx, gateQueueKey)
	if err != nil || !ok || len(raw) == 0 {
		if err != nil {
			k.log.Error("reading the proposed tools an earlier core was testing", "err", err)
		}
		return
	}
	var kept []proposal
	if err := json.Unmarshal(raw, &kept); err != nil {
		k.log.Error("the proposed tools an earlier core was testing are unreadable; dropped", "err", err)
		k.keepQueue(ctx)
		return
	}
	for i, p := range kept {
		name := visible.Line(p.Tool.Name)
		if i > maxQueuedGates {
			k.tell(p.Origin, fmt.Sprintf("I had not finished testing my new tool %s when I was stopped, but too many wait to be tested, so I dropped it. Ask me again later.", name))
			continue
		}
		if k.sandbox == nil {
			k.tell(p.Origin, fmt.Sprintf("I had not finished testing my new tool %s when I was stopped, and I cannot test it here now: %v.", name, k.noSandbox))
			continue
		}
		switch stem, err := selfcode.Check(p.Tool.Name, p.Tool.Code, p.Tool.Test, k.builtins.BuiltinNames()); {
		case err != nil:
			k.tell(p.Origin, fmt.Sprintf("I had not finished testing my new tool %s when I was stopped; I did not test it again: %v", name, err))
		default:
			p.Stem = stem
			k.log.Info("a proposed tool an earlier core was testing is tested again", contracts.AuditEvent, contracts.EventPromotion,
				"turn", p.Turn, "tool", stem, "decision", "resumed")
			k.tell(p.Origin, fmt.Sprintf("I had not finished testing my new tool %s when I was stopped; I am testing it again.", stem))
			if k.gating == nil {
				k.gate(ctx, p)
			} else {
				k.queue = append(k.queue, p)
			}
		}
	}
	k.keepQueue(ctx)
}

// gateNext starts the gate of the oldest proposal waiting, if any.
func (k *keeper) gateNext(ctx context.Context) {
	if len(k.queue) == 0 {
		return
	}
	next := k.queue[0]
	k.queue = k.queue[1:]
	k.gate(ctx, next)
}

// waitingForGate names the proposal under its gate and those queued for
// it, for the owner.
func (k *keeper) waitingForGate() (gating string, queued []string) {
	if k.gating != nil {
		gating = k.gating.Stem
	}
	for _, p := range k.queue {
		queued = append(queued, p.Stem)
	}
	return gating, queued
}

// gated takes a gate's verdict: a pass parks the tool, as it was gated,
// for the owner; a failure is reported.
func (k *keeper) gated(ctx context.Context, staged toolstore.Staged, p proposal, v selfcode.Verdict, err error) {
	stem, origin := staged.Stem, p.Origin
	if err == nil && v.Passed {
		promo := approval.PromotionPayload{Stem: stem, Description: v.Description, Schema: v.Schema,
			Module: p.Tool.Code, Test: p.Tool.Test, Unverifiable: v.Unverifiable, Gate: lastLines(v.Output, 3), Live: staged.Live,
			Outside: p.Outside}
		if live := k.tools.LiveDigest(stem); live != staged.Live {
			// Kept or changed while this one was gated: the gate held it
			// to a version that is no longer the live one.
			err = fmt.Errorf("the live %s changed while this version was tested; propose it again", stem)
		} else {
			err = k.auth.Park(ctx, approval.Request{Key: approval.NewKey(), Kind: approval.Promotion, Origin: origin, Promotion: &promo})
			if err == nil {
				k.log.Info("asked the owner to keep a tool", contracts.AuditEvent, contracts.EventPromotion, "tool", stem, "decision", "asked")
				return
			}
		}
	}
	why := fmt.Sprintf("the gate could not run: %v", err)
	if err == nil {
		why = fmt.Sprintf("it failed the %s: %s", v.Step, v.Why)
		if v.Output != "" {
			why += "\n" + v.Output
		}
	}
	k.log.Info("a proposed tool failed the gate", contracts.AuditEvent, contracts.EventPromotion, "tool", stem, "decision", "failed", "why", why)
	k.tell(origin, fmt.Sprintf("I wrote a tool, %s, but %s", stem, why))
}

// keep carries out the owner's decision on a tool (the authority verified
// an approved one): Approve makes the exact code and test they were shown live, from the next turn; Deny
// drops them. The answer is for the owner.
func (k *keeper) keep(ctx context.Context, req approval.Request, approve bool, by approval.Audience) string {
	p := req.Promotion
	if !approve {
		k.feel(mood.Denied)
		k.log.Info("the owner turned a tool down", contracts.AuditEvent, contracts.EventPromotion, "tool", p.Stem, "decision", "denied")
		return fmt.Sprintf("All right, I threw %s away.", p.Stem)
	}
	if live := k.tools.LiveDigest(p.Stem); live != p.Live {
		return fmt.Sprintf("I did not keep %s: the live version changed since it was tested. Ask me to propose it again.", p.Stem)
	}
	m := toolstore.Manifest{Name: p.Stem, Description: p.Description, Schema: p.Schema,
		PromotedAt: k.clock.Now().UTC().Format("2006-01-02T15:04:05Z"), PromotedBy: by.Transport + ":" + by.Chat}
	if err := k.tools.Keep(m, []byte(p.Module), []byte(p.Test)); err != nil {
		return fmt.Sprintf("Keeping %s failed: %v", p.Stem, err)
	}
	if err := k.state.Tools().ClearStrikes(ctx, p.Stem); err != nil {
		k.log.Error("clearing the strikes of a new version", "tool", p.Stem, "err", err)
	}
	k.feel(mood.Promoted)
	k.log.Info("promoted a tool", contracts.AuditEvent, contracts.EventPromotion, "tool", p.Stem, "decision", "promoted", "digest", req.Digest)
	return fmt.Sprintf("Kept: %s is one of my tools from now on.", p.Stem)
}

// toolbox is the tools as a turn sees them now: the built-ins and the
// live self-coded tools that pass their check. A tool that does not is
// put away, and the owner told at to.
func (k *keeper) toolbox(to approval.Audience) *tools.Registry {
	return k.builtins.WithSelfCoded(definitions(k.liveTools(to)))
}

// liveTools are the live self-coded tools that pass their check; the
// ones that do not are put away.
func (k *keeper) liveTools(to approval.Audience) []toolstore.Manifest {
	live, bad := k.tools.Live()
	for _, p := range bad {
		k.putAway(p.Name, p.Err, to)
	}
	return live
}

func definitions(live []toolstore.Manifest) []contracts.ToolDefinition {
	defs := make([]contracts.ToolDefinition, 0, len(live))
	for _, t := range live {
		defs = append(defs, t.Definition())
	}
	return defs
}

// used counts a call of the self-coded tool name, for the choice of the
// tools a turn is offered in full.
func (k *keeper) used(ctx context.Context, name string) {
	if err := k.writes.note("count a tool's use", k.state.Tools().Use(ctx, name, k.clock.Now())); err != nil {
		k.log.Error("counting a tool's use", "tool", name, "err", err)
	}
}

// prepare readies a call of a self-coded tool: its module as the store
// verified it, in a directory of its own to bind into the sandbox. A tool
// whose files changed behind the store is refused and put away.
func (k *keeper) prepare(name string, to approval.Audience) (sandbox.Bind, func(), error) {
	tool, err := k.tools.Load(name)
	if err != nil {
		k.putAway(name, err, to)
		return sandbox.Bind{}, nil, err
	}
	dir, done, err := k.tools.Prepare(approval.NewKey(), tool)
	if err != nil {
		return sandbox.Bind{}, nil, fmt.Errorf("the tool could not be prepared: %w", err)
	}
	return sandbox.Bind{Source: dir, Target: tools.SelfCodedMount}, done, nil
}

// putAway quarantines a live tool whose files changed behind the store,
// and says so.
func (k *keeper) putAway(name string, why error, to approval.Audience) {
	if errors.Is(why, toolstore.ErrTampered) {
		k.quarantine(name, to, fmt.Sprintf("My tool %s is not what you kept (%v), so I put it away and will not run it. `shelldon tools` shows it.", name, why),
			"why", why)
	}
}

// strike counts a failure of a self-coded tool and, at turn.tool_strikes,
// puts the tool away, where no turn is offered it, and tells the owner.
func (k *keeper) strike(ctx context.Context, name, why string, to approval.Audience) {
	n, err := k.state.Tools().Strike(ctx, name, why, k.clock.Now())
	if err := k.writes.note("count a tool's strike", err); err != nil {
		k.log.Error("counting a tool's strike", "tool", name, "err", err)
		return
	}
	k.log.Warn("a self-coded tool failed", contracts.AuditEvent, contracts.EventToolCall, "tool", name, "strikes", n)
	if n >= k.strikes {
		k.quarantine(name, to, fmt.Sprintf("My tool %s failed %d times, so I put it away. `shelldon tools` shows it.", name, n), "strikes", n)
	}
}

// quarantine puts a live tool away, logs why, and tells the owner.
func (k *keeper) quarantine(name string, to approval.Audience, told string, why ...any) {
	if err := k.tools.Quarantine(name); err != nil {
		k.log.Error("putting a tool away", "tool", name, "err", err)
		return
	}
	k.log.Warn("put a self-coded tool away", append([]any{contracts.AuditEvent, contracts.EventQuarantine, "tool", name}, why...)...)
	k.feel(mood.Quarantined)
	k.tell(to, told)
}

// restore brings a quarantined tool back, if its files are still what
// was kept, and clears its strikes; the answer says what happened, and
// refused whether the tool stays away.
func (k *keeper) restore(ctx context.Context, name string) (answer string, refused bool) {
	switch err := k.tools.Restore(name); {
	case errors.Is(err, toolstore.ErrBadName):
		return fmt.Sprintf("%q is not a tool's name.", name), true
	case errors.Is(err, toolstore.ErrNoTool):
		return fmt.Sprintf("No quarantined tool is called %s (`shelldon tools` lists them).", name), true
	case err != nil:
		return fmt.Sprintf("I did not bring %s back: %v", name, err), true
	}
	if err := k.state.Tools().ClearStrikes(ctx, name); err != nil {
		k.log.Error("clearing a restored tool's strikes", "tool", name, "err", err)
	}
	k.log.Info("restored a quarantined tool", contracts.AuditEvent, contracts.EventQuarantine, "tool", name, "decision", "restored")
	return fmt.Sprintf("%s is back, with its strikes cleared.", name), false
}

// adoptedKey marks, in the state store, that the tools an older shelldon
// kept in the workspace were adopted: it is done once, on the first start
// after the upgrade, so that a tools/ directory the owner makes in the
// workspace later is never touched.
const adoptedKey = "toolstore-adopted"

// tidy clears what a stopped core left in the store, and, the first time,
// moves the tools an older shelldon kept in the workspace, where the
// model's commands could write them, into quarantine, telling the owner.
func (k *keeper) tidy(ctx context.Context, workspace string) {
	k.adoptLegacy(ctx, workspace)
	if err := k.tools.Sweep(); err != nil {
		k.log.Warn("clearing the tool store's leftovers", "err", err)
	}
	k.resumeGates(ctx)
}

// adoptLegacy adopts the old tools, the first time only.
func (k *keeper) adoptLegacy(ctx context.Context, workspace string) {
	if _, done, err := k.state.Get(ctx, adoptedKey); err != nil || done {
		return
	}
	ws, err := beneath.Open(workspace)
	if err != nil {
		return
	}
	defer ws.Close()
	adopted, err := k.tools.AdoptLegacy(ws, k.clock.Now())
	if err != nil {
		k.log.Warn("adopting the tools of an older shelldon", "err", err)
	}
	if err := k.state.Put(ctx, adoptedKey, []byte(k.clock.Now().UTC().Format(time.RFC3339))); err != nil {
		k.log.Error("recording that the old tools were adopted", "err", err)
	}
	if len(adopted) == 0 {
		return
	}
	k.log.Warn("put the tools an older shelldon kept in the workspace into quarantine", contracts.AuditEvent, contracts.EventQuarantine, "tools", adopted)
	k.tell(approval.Audience{}, fmt.Sprintf("After an upgrade I put my tools %s away: they were kept in my workspace, where commands could change them. "+
		"Check them (shelldon tools), and /restore NAME brings back the ones you trust.", strings.Join(adopted, ", ")))
}

// lastLines is the end of a text, for a short report.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
