package daemon

import (
	"context"
	"fmt"

	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/approval/approved"
	"shelldon/daemon/turns"
	"shelldon/policy"
	"shelldon/sandbox"
	"shelldon/tools"
)

// handleExec runs a worker's FREE call that runs a program — a read-only
// shell command or a self-coded tool — in the sandbox, with the workspace
// read-only. Core checks the call itself and runs only what its own check
// produced: a worker cannot get anything else run by asking, and an
// attempt is logged as refused. A self-coded tool runs from its module as
// the store verified it.
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
	origin := approval.Audience(t.Admission.Origin)
	if req.Tests {
		c.runTests(ctx, t, answer)
		return
	}
	audit := c.log.With(contracts.AuditEvent, contracts.EventToolCall, "turn", t.ID, "tool", call.Name, "args", call.Args)
	checked, err := checkFree(c.mcp.toolbox(c.keeper.toolbox(origin)), call)
	if err != nil {
		audit.Warn("refused a call the owner did not approve", "decision", "refused", "why", err)
		answer(false, "core refused to run this call: "+err.Error())
		return
	}
	if checked.MCP {
		audit.Info("calling an MCP tool the owner marked read-only", "decision", "free")
		c.progress.Started(t.ID, checked.Doing)
		c.offLoop.Go(func() {
			got := c.mcp.Call(ctx, call)
			// A tool that runs without asking is a server's that cannot
			// write (config refuses read_only beside "read-write"): it
			// has no change set.
			got.Changes.Discard()
			content, ok, outside := got.Answer, got.OK, got.Outside
			answer(ok, content)
			c.onLoop(func(context.Context) {
				if outside != "" {
					// What the server said is in the conversation now:
					// the rest of the turn is marked, as after a page.
					t.Admission.Outside = policy.MarkJoined(t.Admission.Outside, outside)
				}
				c.progress.Done(t.ID, checked.Doing, map[bool]string{true: "answered", false: "failed"}[ok])
			})
		})
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
		bind, cleanup, err := c.keeper.prepare(call.Name, origin)
		if err != nil {
			audit.Warn("refused a self-coded tool", "decision", "refused", "why", err)
			answer(false, "core refused to run this tool: "+err.Error())
			return
		}
		spec.Binds, done = []sandbox.Bind{bind}, cleanup
		c.keeper.used(ctx, call.Name)
	}
	audit.Info("running a read-only command", "decision", "free")
	c.progress.Started(t.ID, checked.Doing)
	// The command may take seconds; the turn loop must not wait for it.
	c.offLoop.Go(func() {
		defer done()
		res, err := c.opts.Sandbox.Run(ctx, spec)
		if err != nil {
			answer(false, "the sandbox could not run it: "+err.Error())
			c.onLoop(func(context.Context) { c.progress.Done(t.ID, checked.Doing, "error: "+err.Error()) })
			return
		}
		described := approved.DescribeRun(res)
		answer(res.ExitCode == 0, described)
		c.onLoop(func(context.Context) { c.progress.Done(t.ID, checked.Doing, described) })
		if checked.SelfCoded && (res.ExitCode != 0 || res.TimedOut) {
			why := approved.DescribeRun(res)
			c.onLoop(func(ctx context.Context) { c.keeper.strike(ctx, call.Name, why, origin) })
		}
	})
}

// checkFree checks a call as the worker's tools do and accepts only a
// FREE call that runs in the sandbox.
func checkFree(reg *tools.Registry, call contracts.ToolCall) (tools.Checked, error) {
	tool, ok := reg.Lookup(call.Name)
	if !ok {
		return tools.Checked{}, fmt.Errorf("there is no tool %q", call.Name)
	}
	checked, err := tool.Check(call.Args)
	switch {
	case err != nil:
		return tools.Checked{}, err
	case checked.Tier != contracts.TierFree || !checked.Sandboxed || len(checked.Argv) == 0 && !checked.MCP:
		return tools.Checked{}, fmt.Errorf("%s with these arguments is not a read-only command", call.Name)
	}
	return checked, nil
}

// testsDoing is the done-check's progress line.
const testsDoing = "running the tests"

// testCommand runs the workspace's tests as one of shelldon's own checks
// ([policy.Pytest]: no module of the workspace stands in for one pytest
// imports and prints the verdict): quietly, stopping at the first
// failure, with the summary line last.
var testCommand = policy.Pytest("-q", "-x", "--no-header")

// runTests is the done-check: when the workspace has tests, run them in
// the sandbox over a scratch view (the tests may write; nothing stays)
// and answer ok only if they pass. No tests is a pass with an empty
// report.
func (c *Core) runTests(ctx context.Context, t *turns.Turn, answer func(bool, string)) {
	if !approved.HasTests(c.layout.Workspace()) {
		answer(true, "") // nothing to run, nothing to say
		return
	}
	if c.opts.Sandbox == nil {
		answer(true, fmt.Sprintf("the tests could not run (%v)", c.opts.NoSandbox))
		return
	}
	c.log.Info("running the workspace's tests", contracts.AuditEvent, contracts.EventSandboxRun, "turn", t.ID, "decision", "done-check")
	c.progress.Started(t.ID, testsDoing)
	c.offLoop.Go(func() {
		res, err := c.opts.Sandbox.Run(ctx, sandbox.Spec{Argv: testCommand, Workspace: c.layout.Workspace(), View: sandbox.Scratch, Turn: t.ID})
		if err != nil {
			answer(true, "the tests could not run: "+err.Error())
			c.onLoop(func(context.Context) { c.progress.Done(t.ID, testsDoing, "error: "+err.Error()) })
			return
		}
		described := approved.DescribeRun(res)
		answer(res.ExitCode == 0 || res.ExitCode == 5, described) // 5: pytest collected no tests
		c.onLoop(func(context.Context) { c.progress.Done(t.ID, testsDoing, described) })
	})
}
