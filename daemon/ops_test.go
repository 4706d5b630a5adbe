package daemon

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"shelldon/contracts"
	"shelldon/daemon/launch"
	"shelldon/daemon/statedir"
	"shelldon/policy"
	"shelldon/testhost"
)

// TestCoreRefusesABatchTheWorkerLetThrough: a worker that does not check
// the bounds of a reply's ops (the attacker's, here) hands core one op
// more than a reply may hold. Core refuses the batch whole — not a prefix
// of it — and the reply says so.
func TestCoreRefusesABatchTheWorkerLetThrough(t *testing.T) {
	dir := testhost.ShortDir(t)
	var ops []contracts.Op
	for i := range policy.MaxOpsPerReply + 1 {
		ops = append(ops, contracts.Op{Body: contracts.Remember{Topic: fmt.Sprintf("t%d", i), Text: "x"}})
	}
	worker := func(ctx context.Context, spec launch.Spec) {
		turn := turnOf(spec)
		conn, _, err := joinAsWorker(ctx, dir+"/bus.sock", turn)
		if err != nil {
			t.Errorf("joining as the worker of %s: %v", turn, err)
			return
		}
		defer conn.Close()
		env, _ := contracts.NewEnvelope(contracts.KindResult, turn, contracts.Result{OK: true, Payload: "Noted.", Ops: ops})
		conn.Send(env)
	}
	serveCore(t, attackedCore(t, dir, worker))
	o := joinAsOwner(t, dir+"/bus.sock")
	o.send(contracts.KindInbound, contracts.Inbound{Text: "remember all of it"})

	reply := within(t, o.replies, "the reply")
	if want := fmt.Sprintf("%d ops in one reply", policy.MaxOpsPerReply+1); !strings.HasPrefix(reply.Text, "Noted.") ||
		!strings.Contains(reply.Text, want) || !strings.Contains(reply.Text, "none of them was applied") {
		t.Errorf("the reply = %q, want the worker's words and that none of the %s was applied", reply.Text, want)
	}
	o.send(contracts.KindInbound, contracts.Inbound{Text: "/status"}) // behind the ops, on the loop
	within(t, o.replies, "the answer to /status")
	if kept, _ := os.ReadDir(statedir.Layout{Root: dir}.MemoryDir()); len(kept) != 0 {
		t.Errorf("%d memory files were written from a batch over its bound, want none", len(kept))
	}
}
