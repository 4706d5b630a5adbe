package approved

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"shelldon/beneath"
	"shelldon/daemon/approval"
	"shelldon/policy"
	"shelldon/sandbox"
)

// command runs an approved command in the sandbox over a captured view
// and then either applies what it changed, or — when policy finds in it
// what the owner must see first — keeps the change set aside for a
// request of its own.
//
// What a command that reached the network printed holds what its remote
// said (git's "remote:" lines, a ref's name): it is fenced as untrusted
// data, and the result names the remote's command as where it came from.
func (r *Runner) command(ctx context.Context, req approval.Request, argv []string, network bool) (result approval.Result) {
	if r.Sandbox == nil {
		return approval.Result{Answer: fmt.Sprintf("error: commands cannot run on this pet right now (%v)", r.NoSandbox)}
	}
	res, err := r.Sandbox.Run(ctx, sandbox.Spec{Argv: argv, Workspace: r.Workspace, View: sandbox.Captured, Network: network, Turn: req.Key})
	if err != nil {
		return approval.Result{Answer: "error: the sandbox could not run it: " + err.Error()}
	}
	out := DescribeRun(res)
	if network {
		from := "the remote of " + strings.Join(argv, " ")
		out = FenceUntrusted(from, out)
		defer func() { result.Outside = from }()
	}
	cs := res.Changes
	if cs == nil || len(cs.Changes) == 0 {
		cs.Discard()
		return approval.Result{Answer: out}
	}
	if res.DiskFull {
		// A write cut short by the full disk would be applied as it is:
		// half a file, a clone without its objects.
		cs.Discard()
		r.Log.Warn("dropped the changes of a command that filled its disk", "turn", req.Key, "changes", len(cs.Changes))
		return approval.Result{Answer: out + "\nits changes were dropped, none applied: it filled the sandbox's disk, so what it wrote may be cut short. " +
			"Tell the owner; a command that needs more room needs sandbox.disk raised in the configuration."}
	}
	return r.settle(req, out, cs, policy.ChangeSetRisks)
}

// settle is what becomes of the change set cs of an approved call whose
// answer is out: dropped when it changed too much, applied when risksOf
// (policy's) finds nothing the owner must see first, kept for a request
// of its own otherwise.
func (r *Runner) settle(req approval.Request, out string, cs *sandbox.ChangeSet, risksOf func([]policy.FileChange) []string) approval.Result {
	changes := r.fileChanges(cs)
	if why := policy.ChangeSetTooLarge(changes); why != "" {
		cs.Discard()
		r.Log.Warn("dropped the changes of a call that changed too much", "turn", req.Key, "tool", req.Call.Call.Name, "changes", len(cs.Changes))
		return approval.Result{Answer: out + "\nits changes were dropped, none applied: " + why + ". What it changed:\n" + approval.ChangeSummary(cs.Changes) +
			"Tell the owner; do the work in smaller steps, each changing fewer paths.",
			Applied: &approval.Report{Dropped: cs.Changes, Err: errors.New(why)}}
	}
	risks := risksOf(changes)
	if len(risks) == 0 {
		defer cs.Discard()
		report := r.apply(cs)
		return approval.Result{Answer: out + "\n" + report.ForModel(), Applied: &report}
	}
	kept, err := r.keep(cs, req, risks)
	if err != nil {
		cs.Discard()
		r.Log.Error("keeping a change set for the owner failed; it was dropped", "turn", req.Key, "err", err)
		return approval.Result{Answer: out + "\nits changes were dropped: they need the owner's own look, and could not be kept for it: " + err.Error()}
	}
	return approval.Result{Kept: kept, Answer: out + "\nits changes are NOT applied yet: they need the owner's own look (" +
		strings.Join(risks, "; ") + "), so the owner was asked about them on their own. Tell the owner; do not try another way around."}
}

// fileChanges is a change set as policy judges it; the new content of
// the files pytest may read its configuration from is looked at.
func (r *Runner) fileChanges(cs *sandbox.ChangeSet) []policy.FileChange {
	out := make([]policy.FileChange, 0, len(cs.Changes))
	for _, c := range cs.Changes {
		fc := policy.FileChange{Path: c.Path, Deleted: c.Kind == sandbox.Deleted, Type: c.Type, Size: c.Size, Sparse: c.Sparse, Target: c.Target}
		switch name := path.Base(c.Path); name {
		case "pyproject.toml", "tox.ini", "setup.cfg":
			if !fc.Deleted && c.Type == 0 {
				content, err := cs.ReadNew(c.Path, 1<<20)
				// Unreadable, or too big to read: treat it as the
				// configuration it may be.
				fc.PytestConfig = err != nil || policy.PytestConfig(name, content)
			}
		}
		out = append(out, fc)
	}
	return out
}

// keep moves a change set that waits for the owner into core's own
// directory, under a fresh name, and says what to park.
func (r *Runner) keep(cs *sandbox.ChangeSet, req approval.Request, risks []string) (*approval.ChangeSetPayload, error) {
	name := approval.NewKey()
	if err := cs.Keep(filepath.Join(r.Kept, name)); err != nil {
		return nil, err
	}
	return &approval.ChangeSetPayload{Dir: name, Tool: req.Call.Call.Name, Turn: req.Key, Changes: cs.Changes, Risks: risks}, nil
}

// OpenKept scans a kept change set again against the workspace as it is
// now.
func (r *Runner) OpenKept(p *approval.ChangeSetPayload) (*sandbox.ChangeSet, error) {
	dir, err := r.keptDir(p.Dir)
	if err != nil {
		return nil, err
	}
	return sandbox.OpenKept(dir, r.Workspace)
}

// ApplyKept applies a kept change set the owner let through, verified
// (scanned again against the workspace as it is now, it hashed as it did
// when they were shown it), under the guard of the workspace's tests. It
// is discarded after, applied or not.
func (r *Runner) ApplyKept(ctx context.Context, v approval.Verified) approval.Report {
	cs := v.Kept()
	defer cs.Discard()
	g, err := r.openGuard(v.Request().ChangeSet.Turn)
	if err != nil {
		return approval.Report{Err: fmt.Errorf("nothing was applied: the workspace's tests could not be read first: %w", err)}
	}
	defer g.close()
	report := r.apply(cs)
	report.Guard = g.check(ctx)
	return report
}

// DiscardKept removes a kept change set the owner turned down, or that
// expired.
func (r *Runner) DiscardKept(p *approval.ChangeSetPayload) error {
	dir, err := r.keptDir(p.Dir)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("discard kept changes: %w", err)
	}
	return nil
}

// keptDir is where a kept change set of the given name lies; the name is
// one core made, checked as such.
func (r *Runner) keptDir(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, "/.\\") {
		return "", fmt.Errorf("a kept change set named %q is not one of core's", name)
	}
	return filepath.Join(r.Kept, name), nil
}

// apply applies a change set through the jail and reports it.
func (r *Runner) apply(cs *sandbox.ChangeSet) approval.Report {
	report, err := cs.Apply(beneath.Jail{Root: r.Workspace, Vault: r.Vault})
	return approval.Report{Applied: report.Applied, Refused: report.Refused, Err: err}
}

// DescribeRun is a run's answer for the model: how it ended, then its
// output.
func DescribeRun(res sandbox.Result) string {
	var head string
	switch {
	case res.TimedOut:
		head = fmt.Sprintf("killed: it ran past %s", res.Duration.Round(100*time.Millisecond))
	case res.OutOfMemory:
		head = "killed: out of memory"
	default:
		head = fmt.Sprintf("exit %d", res.ExitCode)
	}
	if res.DiskFull {
		head += ", its disk full"
	}
	out := res.Text()
	if strings.TrimSpace(out) == "" {
		out = "(no output)"
	}
	for _, w := range res.Withheld {
		if !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += "[" + w + "]"
	}
	return head + "\n" + out
}
