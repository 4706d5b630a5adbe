package daemon

import (
	"context"
	"errors"
	"fmt"

	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/approved"
	"shelldon/daemon/mood"
	"shelldon/daemon/tools"
	"shelldon/daemon/toolstore"
	"shelldon/sandbox"
)

// handleExec runs a worker's FREE call that runs a program — a read-only
// shell command or a self-coded tool — in the sandbox, with the workspace
// read-only. Core checks the call itself and runs only what its own check
// produced: a worker cannot get anything else run by asking, and an
// attempt is logged as refused. A self-coded tool runs from its module as
// the store verified it, and a tool whose files changed behind the store
// is refused and put away.
func (c *Core) handleExec(ctx context.Context, env contracts.Envelope) {
	var req contracts.ExecRequest
	if err := env.Decode(&req); err != nil {
		c.log.Warn("dropped an unreadable exec request", "turn", env.Turn, "err", err)
		return
	}
	call := req.Call
	answer := func(ok bool, content string) {
		reply, err := contracts.NewEnvelope(contracts.KindExecResult, env.Turn, contracts.ExecResult{CallID: call.ID, OK: ok, Content: content})
		if err == nil {
			err = c.hub.Route(reply)
		}
		if err != nil {
			c.log.Warn("answering an exec request failed", "turn", env.Turn, "err", err)
		}
	}
	t := c.turns.Current()
	if t == nil || t.ID != env.Turn || c.turns.Settled(t) {
		c.log.Warn("refused an exec request of a turn that is not running", "turn", env.Turn, "tool", call.Name)
		return
	}
	if req.Tests {
		c.runTests(ctx, t.ID, answer)
		return
	}
	audit := c.log.With(contracts.AuditEvent, contracts.EventToolCall, "turn", t.ID, "tool", call.Name, "args", call.Args)
	checked, err := c.checkExec(call)
	if err != nil {
		audit.Warn("refused a call the owner did not approve", "decision", "refused", "why", err)
		answer(false, "core refused to run this call: "+err.Error())
		return
	}
	if c.opts.Sandbox == nil {
		audit.Warn("no sandbox to run a command in", "decision", "unavailable", "why", c.opts.NoSandbox)
		answer(false, fmt.Sprintf("shell commands cannot run on this pet right now (%v)", c.opts.NoSandbox))
		return
	}
	spec := sandbox.Spec{Argv: checked.Argv, Workspace: c.layout.Workspace(), View: sandbox.ReadOnly, Turn: t.ID}
	done := func() {}
	if checked.SelfCoded {
		tool, err := c.store2.Load(call.Name)
		if err != nil {
			audit.Warn("refused a self-coded tool that does not pass its check", "decision", "refused", "why", err)
			c.putAway(call.Name, err, approval.Audience(t.Admission.Origin))
			answer(false, "core refused to run this tool: "+err.Error())
			return
		}
		dir, cleanup, err := c.store2.Prepare(approval.NewKey(), tool)
		if err != nil {
			answer(false, "the tool could not be prepared: "+err.Error())
			return
		}
		spec.Binds = []sandbox.Bind{{Source: dir, Target: tools.SelfCodedMount}}
		done = cleanup
	}
	audit.Info("running a read-only command", "decision", "free")
	origin := approval.Audience(t.Admission.Origin)
	// The command may take seconds; the turn loop must not wait for it.
	go func() {
		defer done()
		res, err := c.opts.Sandbox.Run(ctx, spec)
		if err != nil {
			answer(false, "the sandbox could not run it: "+err.Error())
			return
		}
		answer(res.ExitCode == 0, approved.DescribeRun(res))
		if checked.SelfCoded && (res.ExitCode != 0 || res.TimedOut) {
			why := approved.DescribeRun(res)
			c.onLoop(func(ctx context.Context) { c.strike(ctx, call.Name, why, origin) })
		}
	}()
}

// checkExec checks a call as the worker's tools do and accepts only a
// FREE call that runs in the sandbox.
func (c *Core) checkExec(call contracts.ToolCall) (tools.Checked, error) {
	tool, ok := c.toolbox().Lookup(call.Name)
	if !ok {
		return tools.Checked{}, fmt.Errorf("there is no tool %q", call.Name)
	}
	checked, err := tool.Check(call.Args)
	switch {
	case err != nil:
		return tools.Checked{}, err
	case checked.Tier != contracts.TierFree || !checked.Sandboxed || len(checked.Argv) == 0:
		return tools.Checked{}, fmt.Errorf("%s with these arguments is not a read-only command", call.Name)
	}
	return checked, nil
}

// toolbox is the tools as a turn sees them now: the built-ins and the
// live self-coded tools.
func (c *Core) toolbox() *tools.Registry { return c.tools.WithSelfCoded(c.liveTools()) }

// liveTools are the definitions of the live self-coded tools that pass
// their check; one that does not is put away and the owner told.
func (c *Core) liveTools() []contracts.ToolDefinition {
	live, bad := c.store2.Live()
	for _, p := range bad {
		c.putAway(p.Name, p.Err, c.ownerAudience())
	}
	defs := make([]contracts.ToolDefinition, 0, len(live))
	for _, t := range live {
		defs = append(defs, t.Definition())
	}
	return defs
}

// ownerAudience is where the owner is told of what no turn of theirs
// caused: where the turn in flight came from, else every transport.
func (c *Core) ownerAudience() approval.Audience {
	if t := c.turns.Current(); t != nil {
		return approval.Audience(t.Admission.Origin)
	}
	return approval.Audience{}
}

// putAway quarantines a live tool whose files changed behind the store,
// and says so.
func (c *Core) putAway(name string, why error, to approval.Audience) {
	if !errors.Is(why, toolstore.ErrTampered) {
		return
	}
	if err := c.store2.Quarantine(name); err != nil {
		c.log.Error("putting away a tool that changed behind the store", "tool", name, "err", err)
		return
	}
	c.log.Warn("put away a tool whose files are not what was kept", contracts.AuditEvent, contracts.EventQuarantine, "tool", name, "why", why)
	c.feel(mood.Quarantined)
	c.tell(to, fmt.Sprintf("My tool %s is not what you kept (%v), so I put it away and will not run it. `shelldon tools` shows it.", name, why))
}

// strike counts a failure of a self-coded tool and, at turn.tool_strikes,
// puts the tool away, where no turn is offered it, and tells the owner.
func (c *Core) strike(ctx context.Context, name, why string, to approval.Audience) {
	n, err := c.store.Strike(ctx, name, why, c.clock.Now())
	if err != nil {
		c.log.Error("counting a tool's strike", "tool", name, "err", err)
		return
	}
	c.log.Warn("a self-coded tool failed", contracts.AuditEvent, contracts.EventToolCall, "tool", name, "strikes", n)
	if n < c.cfg.Turn.ToolStrikes {
		return
	}
	if err := c.store2.Quarantine(name); err != nil {
		c.log.Error("quarantining a tool", "tool", name, "err", err)
		return
	}
	c.log.Warn("quarantined a self-coded tool", contracts.AuditEvent, contracts.EventQuarantine, "tool", name, "strikes", n)
	c.feel(mood.Quarantined)
	c.tell(to, fmt.Sprintf("My tool %s failed %d times, so I put it away. `shelldon tools` shows it.", name, n))
}

// restoreTool brings a quarantined tool back, if its files are still what
// was kept, and clears its strikes; the answer says what happened.
func (c *Core) restoreTool(ctx context.Context, name string) string {
	switch err := c.store2.Restore(name); {
	case errors.Is(err, toolstore.ErrBadName):
		return fmt.Sprintf("%q is not a tool's name.", name)
	case errors.Is(err, toolstore.ErrNoTool):
		return fmt.Sprintf("No quarantined tool is called %s (`shelldon tools` lists them).", name)
	case err != nil:
		return fmt.Sprintf("I did not bring %s back: %v", name, err)
	}
	if err := c.store.ClearStrikes(ctx, name); err != nil {
		c.log.Error("clearing a restored tool's strikes", "tool", name, "err", err)
	}
	c.log.Info("restored a quarantined tool", contracts.AuditEvent, contracts.EventQuarantine, "tool", name, "decision", "restored")
	return fmt.Sprintf("%s is back, with its strikes cleared.", name)
}

// testCommand runs the workspace's tests: quietly, stopping at the first
// failure, with the summary line last.
var testCommand = []string{"python3", "-m", "pytest", "-q", "-x", "--no-header", "-p", "no:cacheprovider"}

// runTests is the done-check: when the workspace has tests, run them in
// the sandbox over a scratch view (the tests may write; nothing stays)
// and answer ok only if they pass. No tests is a pass with an empty
// report.
func (c *Core) runTests(ctx context.Context, turn string, answer func(bool, string)) {
	if !approved.HasTests(c.layout.Workspace()) {
		answer(true, "") // nothing to run, nothing to say
		return
	}
	if c.opts.Sandbox == nil {
		answer(true, fmt.Sprintf("the tests could not run (%v)", c.opts.NoSandbox))
		return
	}
	c.log.Info("running the workspace's tests", contracts.AuditEvent, contracts.EventSandboxRun, "turn", turn, "decision", "done-check")
	go func() {
		res, err := c.opts.Sandbox.Run(ctx, sandbox.Spec{Argv: testCommand, Workspace: c.layout.Workspace(), View: sandbox.Scratch, Turn: turn})
		if err != nil {
			answer(true, "the tests could not run: "+err.Error())
			return
		}
		answer(res.ExitCode == 0 || res.ExitCode == 5, approved.DescribeRun(res)) // 5: pytest collected no tests
	}()
}
