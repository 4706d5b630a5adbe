package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/launch"
	"shelldon/daemon/state"
	"shelldon/testhost"
)

// TestACallThatDeletesOrOverwritesIsOfferedNoRule is issue 28's finding
// 6 as the attack: the model asks, one turn after another, for commands
// that delete or overwrite what the workspace holds, each of which an
// owner might approve once; the card must offer no "Always" for any of
// them, and its note must say what the command deletes or overwrites. A
// rule granted for one of them before the policy knew better (kept in
// state.db) lets nothing through: the call asks. A command that only
// creates still offers its rule.
func TestACallThatDeletesOrOverwritesIsOfferedNoRule(t *testing.T) {
	dir := testhost.ShortDir(t)
	socket := filepath.Join(dir, "bus.sock")
	calls := make(chan contracts.ToolCall, 16)
	opts := attackedCore(t, dir, callingWorker(t, socket, calls))
	now := time.Now()
	if _, err := opts.Store.Rules().Grant(context.Background(), state.Rule{Tool: "run_shell", Pattern: "cp\x00x\x00notes.md",
		Words: "run_shell of exactly `cp x notes.md`", Granted: now, Expires: now.Add(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	serveCore(t, opts)
	o := joinAsOwner(t, socket)
	asks := func(command string) contracts.ApprovalRequest {
		t.Helper()
		calls <- contracts.ToolCall{ID: "sh", Name: "run_shell", Args: fmt.Sprintf(`{"command":%q}`, command)}
		o.send(contracts.KindInbound, contracts.Inbound{Text: "please run " + command})
		r := within(t, o.approvals, "the request to run "+command)
		o.send(contracts.KindDecision, contracts.Decision{Turn: r.Turn})
		return r
	}

	for _, tc := range []struct{ command, says string }{
		{"git mv a.txt b.txt", "moves files"},
		{"git stash", "shelves uncommitted changes"},
		{"sed -i 3d notes.md", "rewrites files in place"},
		{"cp x notes.md", "may overwrite notes.md"},
		{"rsync -a --delete src/ notes/", "deletes what notes/ holds that src/ lacks"},
		{"tar xf a.tar", "may overwrite any file it extracts from a.tar"},
	} {
		r := asks(tc.command)
		if r.Always != "" {
			t.Errorf("the card for %s offers the rule %q, want none", tc.command, r.Always)
		}
		if !strings.HasPrefix(r.Note, "look closely: ") || !strings.Contains(r.Note, tc.says) {
			t.Errorf("the card for %s reads %q, want it to look closely and say %q", tc.command, r.Note, tc.says)
		}
	}
	if r := asks("touch stamp.txt"); r.Always != "run_shell of exactly `touch stamp.txt`" {
		t.Errorf("the card for touch stamp.txt offers %q, want its rule", r.Always)
	}
}

// callingWorker is the attacker's worker: each fresh turn parks the next
// call waiting in calls (or answers "done" when none waits), and a turn
// resumed after the owner's decision answers "done".
func callingWorker(t *testing.T, socket string, calls <-chan contracts.ToolCall) func(context.Context, launch.Spec) {
	return func(ctx context.Context, spec launch.Spec) {
		turn := turnOf(spec)
		conn, in, err := joinAsWorker(ctx, socket, turn)
		if err != nil {
			t.Errorf("joining as the worker of %s: %v", turn, err)
			return
		}
		defer conn.Close()
		res := contracts.Result{OK: true, Payload: "done"}
		if in.Resume == nil {
			select {
			case call := <-calls:
				res = parkResult(call, contracts.Message{Role: contracts.ChatUser, Content: in.Text})
			default:
			}
		}
		env, _ := contracts.NewEnvelope(contracts.KindResult, turn, res)
		conn.Send(env)
	}
}
