package approval

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/mood"
	"shelldon/sandbox"
	"shelldon/tools"
)

// executor is the authority's executor in these tests: calls are checked
// by the real built-in tools over a workspace of the test's own, and
// what would be carried out is recorded, not done.
type executor struct {
	reg *tools.Registry
	// swap, when set, is what a call checks to at carry-out instead: the
	// workspace changed under the parked call.
	swap func(tools.Checked) tools.Checked
	ran  []string // the keys of the calls Run carried out
	// workspace and kept are the workspace and the directory of kept
	// change sets; applied the keys of the sets ApplyKept applied.
	workspace, kept string
	applied         []string
}

func newExecutor(t *testing.T, clk clock.Clock) *executor {
	ws := t.TempDir()
	return &executor{reg: tools.Builtins(tools.Env{Workspace: ws, Vault: t.TempDir(), Clock: clk}), workspace: ws, kept: t.TempDir()}
}

func (e *executor) Check(call contracts.ToolCall) (tools.Checked, error) {
	tool, ok := e.reg.Lookup(call.Name)
	if !ok {
		return tools.Checked{}, fmt.Errorf("there is no tool %q", call.Name)
	}
	checked, err := tool.Check(call.Args)
	if err == nil && e.swap != nil {
		checked = e.swap(checked)
	}
	return checked, err
}

func (e *executor) OpenKept(p *ChangeSetPayload) (*sandbox.ChangeSet, error) {
	return sandbox.OpenKept(filepath.Join(e.kept, p.Dir), e.workspace)
}

func (e *executor) Run(_ context.Context, v Verified) Result {
	e.ran = append(e.ran, v.Request().Key)
	return Result{Answer: "ran " + v.Checked().Doing}
}

func (e *executor) ApplyKept(_ context.Context, v Verified) Report {
	e.applied = append(e.applied, v.Request().Key)
	return Report{Applied: v.Kept().Changes}
}

func (e *executor) DiscardKept(*ChangeSetPayload) error { return nil }

// host is core in these tests: it runs what goes off the loop at once,
// and records what it was asked to do.
type host struct {
	felt    []mood.Event
	resumed []string // key: the answer the resumed turn gets
	kept    []string // what KeepTool, PastCap and KeepMemory were handed: kind:key:approve
	reports []Report // what the owner was told of change sets
}

func (h *host) Feel(e mood.Event)                       { h.felt = append(h.felt, e) }
func (h *host) Go(f func())                             { f() }
func (h *host) OnLoop(f func(ctx context.Context))      { f(context.Background()) }
func (h *host) Release(context.Context)                 {}
func (h *host) Progress(Request, string, bool)          {}
func (h *host) Changes(_ Audience, _ string, r *Report) { h.reports = append(h.reports, *r) }
func (h *host) Resume(_ context.Context, r Request, answer contracts.Message, _, _ string) {
	h.resumed = append(h.resumed, r.Key+": "+answer.Content)
}
func (h *host) KeepTool(_ context.Context, r Request, approve bool, _ Audience) string {
	h.kept = append(h.kept, fmt.Sprintf("%s:%s:%v", r.Kind, r.Key, approve))
	return "kept"
}
func (h *host) PastCap(_ context.Context, out Outcome) bool {
	h.kept = append(h.kept, fmt.Sprintf("%s:%s:%v", out.Request.Kind, out.Request.Key, out.Verdict == Approved))
	return true
}
func (h *host) KeepMemory(_ context.Context, _ Audience, r Request, approve bool) {
	h.kept = append(h.kept, fmt.Sprintf("%s:%s:%v", r.Kind, r.Key, approve))
}
