package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/mood"
	"shelldon/daemon/tools"
	"shelldon/sandbox"
)

// Sandbox runs one command in a throwaway container: [sandbox.Sandbox].
type Sandbox interface {
	Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error)
}

// handleExec runs a worker's FREE call that runs a program — a read-only
// shell command — in the sandbox, with the workspace read-only. Core
// checks the call itself and runs only what its own check produced: a
// worker cannot get anything else run by asking, and an attempt is
// logged as refused.
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
	t := c.turn
	if t == nil || t.id != env.Turn || t.fenced {
		c.log.Warn("refused an exec request of a turn that is not running", "turn", env.Turn, "tool", call.Name)
		return
	}
	if req.Tests {
		c.runTests(ctx, t.id, answer)
		return
	}
	audit := c.log.With(contracts.AuditEvent, contracts.EventToolCall, "turn", t.id, "tool", call.Name, "args", call.Args)
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
	audit.Info("running a read-only command", "decision", "free")
	spec := sandbox.Spec{Argv: checked.Argv, Workspace: c.layout.Workspace(), View: sandbox.ReadOnly, Turn: t.id}
	// The command may take seconds; the turn loop must not wait for it.
	selfCoded := !slices.Contains(c.tools.BuiltinNames(), call.Name)
	origin := t.admission.Origin
	go func() {
		res, err := c.opts.Sandbox.Run(ctx, spec)
		if err != nil {
			answer(false, "the sandbox could not run it: "+err.Error())
			return
		}
		answer(res.ExitCode == 0, describeRun(res))
		if selfCoded && (res.ExitCode != 0 || res.TimedOut) {
			c.strike(ctx, call.Name, describeRun(res), origin)
		}
	}()
}

// strike counts a failure of a self-coded tool and, at turn.tool_strikes,
// moves the tool to tools-quarantine, where no turn is offered it, and
// tells the owner.
func (c *Core) strike(ctx context.Context, name, why string, owner Origin) {
	n, err := c.store.Strike(ctx, name, why, c.clock.Now())
	if err != nil {
		c.log.Error("counting a tool's strike", "tool", name, "err", err)
		return
	}
	c.log.Warn("a self-coded tool failed", contracts.AuditEvent, contracts.EventToolCall, "tool", name, "strikes", n)
	if n < c.cfg.Turn.ToolStrikes {
		return
	}
	if err := os.MkdirAll(c.layout.ToolsQuarantine(), 0o750); err != nil {
		c.log.Error("quarantining a tool", "tool", name, "err", err)
		return
	}
	// The manifest first: without it the tool is no longer offered.
	for _, f := range []string{name + ".json", name + ".py", "test_" + name + ".py"} {
		if err := os.Rename(filepath.Join(c.layout.Tools(), f), filepath.Join(c.layout.ToolsQuarantine(), f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			c.log.Error("quarantining a tool", "tool", name, "file", f, "err", err)
		}
	}
	c.log.Warn("quarantined a self-coded tool", contracts.AuditEvent, contracts.EventQuarantine, "tool", name, "strikes", n)
	c.feel(mood.Quarantined)
	c.replyTo(owner, contracts.Outbound{Text: fmt.Sprintf("My tool %s failed %d times, so I put it away (tools-quarantine). `shelldon tools` shows it.", name, n)})
}

// testCommand runs the workspace's tests: quietly, stopping at the first
// failure, with the summary line last.
var testCommand = []string{"python3", "-m", "pytest", "-q", "-x", "--no-header", "-p", "no:cacheprovider"}

// runTests is the done-check: when the workspace has tests, run them in
// the sandbox over a scratch view (the tests may write; nothing stays)
// and answer ok only if they pass. No tests is a pass with an empty
// report.
func (c *Core) runTests(ctx context.Context, turn string, answer func(bool, string)) {
	if len(testFiles(c.layout.Workspace())) == 0 {
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
		answer(res.ExitCode == 0 || res.ExitCode == 5, describeRun(res)) // 5: pytest collected no tests
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
		return tools.Checked{}, fmt.Errorf("%s with these arguments is not a read-only command: %s", call.Name, checked.Note)
	}
	return checked, nil
}

// describeRun is a run's answer for the model: how it ended, then its
// output.
func describeRun(res sandbox.Result) string {
	var head string
	switch {
	case res.TimedOut:
		head = fmt.Sprintf("killed: it ran past %s", res.Duration.Round(100*time.Millisecond))
	case res.OutOfMemory:
		head = "killed: out of memory"
	default:
		head = fmt.Sprintf("exit %d", res.ExitCode)
	}
	out := res.Text()
	if strings.TrimSpace(out) == "" {
		out = "(no output)"
	}
	return head + "\n" + out
}

// restoreTool moves a quarantined tool back into tools/ and clears its
// strikes; the answer says what happened.
func (c *Core) restoreTool(ctx context.Context, name string) string {
	if name == "" || strings.ContainsAny(name, "/\\") || strings.HasPrefix(name, ".") {
		return fmt.Sprintf("%q is not a tool's name.", name)
	}
	from, to := c.layout.ToolsQuarantine(), c.layout.Tools()
	if _, err := os.Stat(filepath.Join(from, name+".json")); err != nil {
		return fmt.Sprintf("No quarantined tool is called %s (`shelldon tools` lists them).", name)
	}
	// The manifest last: the tool is live again only once all of it is.
	for _, f := range []string{name + ".py", "test_" + name + ".py", name + ".json"} {
		if err := os.Rename(filepath.Join(from, f), filepath.Join(to, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf("Restoring %s failed: %v", name, err)
		}
	}
	if err := c.store.ClearStrikes(ctx, name); err != nil {
		c.log.Error("clearing a restored tool's strikes", "tool", name, "err", err)
	}
	c.log.Info("restored a quarantined tool", contracts.AuditEvent, contracts.EventQuarantine, "tool", name, "decision", "restored")
	return fmt.Sprintf("%s is back, with its strikes cleared.", name)
}
