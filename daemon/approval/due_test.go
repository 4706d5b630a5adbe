package approval

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/policy"
)

const ruleLife = 24 * time.Hour

// loggedAuthority replaces r's authority by one that grants rules for
// ruleLife and logs into the returned buffer.
func loggedAuthority(r *rig) *bytes.Buffer {
	var logged bytes.Buffer
	r.auth = New(Config{Store: r.store, Notify: r.notes, Clock: r.clk, Expiry: expiry, RuleLife: ruleLife,
		Log: slog.New(slog.NewTextHandler(&logged, nil)), Executor: r.exec, Host: r.host})
	return &logged
}

// TestAnIdleCheckLeavesTheStoreAlone: once the check knows that nothing
// kept can expire before a time, its minutes until then do not reach the
// store — an idle pet's check runs no SQL, so the code its release paged
// out stays out. The store is closed under it to show that.
func TestAnIdleCheckLeavesTheStoreAlone(t *testing.T) {
	r := newRig(t)
	logged := loggedAuthority(r)
	ctx := context.Background()
	r.park(callRequest("t1", "a.txt"))
	r.auth.Expire(ctx) // learns when t1 expires
	r.auth.ExpireRules(ctx)
	if err := r.store.Close(); err != nil {
		t.Fatal(err)
	}
	logged.Reset()
	for range 59 {
		r.clk.Advance(time.Minute)
		if got := r.auth.Expire(ctx); len(got) != 0 {
			t.Fatalf("Expire at %s = %+v, want nothing", r.clk.Now(), got)
		}
		r.auth.ExpireRules(ctx)
	}
	if logged.Len() != 0 {
		t.Errorf("the checks before anything was due reached the store:\n%s", logged)
	}
}

// TestWhatIsKeptAfterAnIdleCheckExpiresOnTime: a request parked and a rule
// granted after the check learned that nothing was kept still expire at
// their time, to the millisecond.
func TestWhatIsKeptAfterAnIdleCheckExpiresOnTime(t *testing.T) {
	r := newRig(t)
	loggedAuthority(r)
	ctx := context.Background()
	r.auth.Expire(ctx) // learns that nothing is kept
	r.auth.ExpireRules(ctx)

	granting := callRequest("t0", "a.txt")
	granting.Call.Offer = &policy.Rule{Tool: "write_file", Pattern: "a.txt", Words: "write a.txt"}
	r.park(granting)
	always := contracts.Decision{Turn: "t0", Approve: true, Always: true, Chat: owner.Chat}
	if out := r.auth.Decide(ctx, always, owner, r.claim); out.Verdict != Approved {
		t.Fatalf("Decide(always) = %+v", out)
	}
	r.slot = false
	r.park(callRequest("t1", "b.txt"))

	r.clk.Advance(expiry - time.Millisecond)
	if got := r.auth.Expire(ctx); len(got) != 0 {
		t.Fatalf("expired early: %+v", got)
	}
	r.clk.Advance(time.Millisecond)
	if got := r.auth.Expire(ctx); len(got) != 1 || got[0].Key != "t1" {
		t.Fatalf("Expire at its time = %+v, want t1", got)
	}

	rules := func() int {
		t.Helper()
		all, err := r.store.Rules().All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(all)
	}
	r.auth.ExpireRules(ctx)
	if rules() != 1 {
		t.Fatalf("%d rules kept after the grant, want 1", rules())
	}
	r.clk.Advance(ruleLife - expiry - time.Millisecond)
	r.auth.ExpireRules(ctx)
	if rules() != 1 {
		t.Fatalf("the rule expired early")
	}
	r.clk.Advance(time.Millisecond)
	r.auth.ExpireRules(ctx)
	if rules() != 0 {
		t.Errorf("the rule outlived its time")
	}
}
