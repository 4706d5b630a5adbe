package approval

import (
	"context"
	"testing"

	"shelldon/contracts"
)

// TestStatusesSayWhatTheAuthorityDid: what a transport reads of a
// request is what the authority did with it, however it went, and a
// request decided twice comes to what the first decision made of it.
func TestStatusesSayWhatTheAuthorityDid(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	statuses := NewStatuses(r.store.Approvals(), r.clk)
	status := func(key string) Status {
		t.Helper()
		st, err := statuses.Status(ctx, key)
		if err != nil {
			t.Fatalf("Status(%s) = %v", key, err)
		}
		return st
	}
	approved := r.park(callRequest("approved", "a.txt"))
	if st := status("approved"); st.State != Open || !st.Expires.Equal(approved.Expires) || !st.Created.Equal(approved.Created) {
		t.Errorf("a parked request's status = %+v, want open until %v", st, approved.Expires)
	}
	first := r.decide("approved", true, owner)
	r.slot = false
	second := r.decide("approved", false, owner)
	if first.Verdict != Approved || second.Verdict != Refused {
		t.Errorf("two decisions = %v, %v, want the first approved and the second refused", first.Verdict, second.Verdict)
	}
	if st := status("approved"); st.State != Settled || st.Outcome != contracts.ApprovalApproved || !st.At.Equal(r.clk.Now()) {
		t.Errorf("status after two decisions = %+v, want settled approved now", st)
	}

	r.park(callRequest("late", "b.txt"))
	r.park(promotionRequest("greet", "def greet(): pass\n"))
	newer := r.park(promotionRequest("greet", "def greet(): return 1\n"))
	r.clk.Advance(expiry)
	// Past its expiry before the sweep: a tap on it finds it expired.
	if st := status("late"); st.State != Settled || st.Outcome != contracts.ApprovalExpired {
		t.Errorf("status past the expiry, before the sweep = %+v, want settled expired", st)
	}
	r.auth.Expire(ctx)
	if st := status("late"); st.State != Settled || st.Outcome != contracts.ApprovalExpired {
		t.Errorf("status after the sweep = %+v, want settled expired", st)
	}
	if st := status(newer.Key); st.State != Settled || st.Outcome != contracts.ApprovalExpired {
		t.Errorf("the newer promotion's status = %+v, want expired", st)
	}
	if st := status("never-asked"); st.State != Unknown {
		t.Errorf("status of a key never parked = %+v, want unknown", st)
	}
	if r.decide("never-asked", true, owner); status("never-asked").State != Unknown {
		t.Error("a decision on a key never parked made it known")
	}
}

// TestAReplacedRequestIsSettledAsReplaced: a newer promotion of a tool
// settles the waiting one as replaced, for a tap on its old message.
func TestAReplacedRequestIsSettledAsReplaced(t *testing.T) {
	r := newRig(t)
	old := r.park(promotionRequest("greet", "def greet(): pass\n"))
	r.park(promotionRequest("greet", "def greet(): return 1\n"))
	st, err := NewStatuses(r.store.Approvals(), r.clk).Status(context.Background(), old.Key)
	if err != nil || st.State != Settled || st.Outcome != contracts.ApprovalReplaced {
		t.Errorf("the replaced promotion's status = %+v, %v, want settled replaced", st, err)
	}
}
