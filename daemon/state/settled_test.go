package state

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/statedir"
)

// outcomeOf is what the store says turn came to, "" when it knows none.
func outcomeOf(t *testing.T, s *Store, turn string) string {
	t.Helper()
	_, settled, err := s.Approvals().Get(context.Background(), turn)
	if err != nil && !errors.Is(err, ErrNoApproval) {
		t.Fatalf("Approval(%q) = %v", turn, err)
	}
	return settled.Outcome
}

// TestARequestsOutcomeIsKeptWithItsTaking: a request leaves the parked
// ones and is recorded settled in one step, whichever way it goes, so
// that nothing asked of the store can see it neither parked nor settled;
// and parked again under the same key, it is open again.
func TestARequestsOutcomeIsKeptWithItsTaking(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	park(t, s, parkedAt("approved", epoch))
	park(t, s, parkedAt("late", epoch))
	park(t, s, parkedAt("swept", epoch.Add(time.Minute)))
	if got := outcomeOf(t, s, "approved"); got != "" {
		t.Errorf("a parked request's outcome = %q, want none", got)
	}
	if _, err := s.Approvals().Take(ctx, "approved", epoch.Add(time.Minute), contracts.ApprovalApproved); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Approvals().Take(ctx, "late", epoch.Add(2*time.Hour), contracts.ApprovalApproved); err == nil {
		t.Fatal("Approvals.Take of an expired request = nil, want ErrApprovalExpired")
	}
	if _, err := s.Approvals().Expire(ctx, epoch.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// A second take, as of a second tap: nothing to take, the outcome stays.
	if _, err := s.Approvals().Take(ctx, "approved", epoch.Add(3*time.Hour), contracts.ApprovalDenied); err == nil {
		t.Error("a second Approvals.Take = nil, want ErrNoApproval")
	}
	for turn, want := range map[string]string{"approved": contracts.ApprovalApproved, "late": contracts.ApprovalExpired, "swept": contracts.ApprovalExpired} {
		if got := outcomeOf(t, s, turn); got != want {
			t.Errorf("outcome of %s = %q, want %q", turn, got, want)
		}
	}
	park(t, s, parkedAt("approved", epoch.Add(4*time.Hour)))
	if got := outcomeOf(t, s, "approved"); got != "" {
		t.Errorf("a key parked again has the outcome %q of its earlier request, want none", got)
	}
}

// TestSettledRequestsAreForgottenInTime: a pet runs for months; the
// settled requests are kept KeepSettledApprovals, and at most
// MaxSettledApprovals of them, the latest.
func TestSettledRequestsAreForgottenInTime(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	settle := func(turn string, at time.Time) {
		t.Helper()
		park(t, s, parkedAt(turn, at))
		if _, err := s.Approvals().Take(ctx, turn, at, contracts.ApprovalDenied); err != nil {
			t.Fatal(err)
		}
	}
	settle("old", epoch)
	settle("recent", epoch.Add(KeepSettledApprovals/2))
	settle("now", epoch.Add(KeepSettledApprovals+time.Millisecond))
	for turn, want := range map[string]string{"old": "", "recent": contracts.ApprovalDenied, "now": contracts.ApprovalDenied} {
		if got := outcomeOf(t, s, turn); got != want {
			t.Errorf("outcome of %s past the retention = %q, want %q", turn, got, want)
		}
	}
	base := epoch.Add(KeepSettledApprovals + time.Hour)
	for i := range MaxSettledApprovals {
		settle(fmt.Sprintf("n%04d", i), base.Add(time.Duration(i)*time.Second))
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM settled_approvals`).Scan(&n); err != nil || n != MaxSettledApprovals {
		t.Errorf("settled requests kept = %d, %v, want %d", n, err, MaxSettledApprovals)
	}
	if got := outcomeOf(t, s, "recent"); got != "" {
		t.Errorf("the oldest past the bound = %q, want forgotten", got)
	}
	if got := outcomeOf(t, s, fmt.Sprintf("n%04d", MaxSettledApprovals-1)); got != contracts.ApprovalDenied {
		t.Errorf("the latest = %q, want kept", got)
	}
}

// TestUpgradeToTheAuthoritysStatus opens a database of schema version
// 18, where the Telegram transport kept a status of its own for each
// request, with today's code: what it had settled is settled, what it
// showed stays to be edited, and what is parked stays parked.
func TestUpgradeToTheAuthoritysStatus(t *testing.T) {
	l := statedir.Layout{Root: t.TempDir()}
	ctx := context.Background()
	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = migrations[:18]
	before := openStore(t, l)
	for _, q := range []string{
		`INSERT INTO pending_approvals (turn, kind, call, summary, messages, payload, shown, digest, created_at, expires_at)
			VALUES ('waiting', 'memory', '{}', 'keeps a note', '[]', '{}', '[]', 'd', 1700000000000, 1700003600000)`,
		`INSERT INTO approval_status (transport, turn, state, outcome, at) VALUES
			('telegram', 'waiting', 'open', '', 1700000000000),
			('telegram', 'denied', 'closed', 'denied', 1700000001000),
			('telegram', 'tapped', 'tapped', '', 1700000002000)`,
		`INSERT INTO approval_messages (transport, turn, chat, message_id, html) VALUES
			('telegram', 'denied', '42', 7, '<b>rm?</b>'), ('telegram', 'orphan', '42', 8, '?')`,
	} {
		if _, err := before.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	before.Close()
	migrations = saved

	s := openStore(t, l)
	if v := userVersion(t, s.db.DB); v != len(migrations) {
		t.Errorf("user_version after the upgrade = %d, want %d", v, len(migrations))
	}
	for turn, want := range map[string]string{"denied": contracts.ApprovalDenied, "waiting": "", "tapped": ""} {
		if got := outcomeOf(t, s, turn); got != want {
			t.Errorf("outcome of %s after the upgrade = %q, want %q", turn, got, want)
		}
	}
	if _, _, err := s.Approvals().Get(ctx, "waiting"); err != nil {
		t.Errorf("the parked request after the upgrade: %v", err)
	}
	msgs, err := s.Queues().ApprovalMessages(ctx, "telegram", "denied")
	if err != nil || len(msgs) != 1 || msgs[0].MessageID != 7 || !msgs[0].At.Equal(time.UnixMilli(1700000001000)) {
		t.Errorf("the settled request's message after the upgrade = %+v, %v, want message 7 dated by its settling", msgs, err)
	}
	if msgs, _ := s.Queues().ApprovalMessages(ctx, "telegram", "orphan"); len(msgs) != 1 || msgs[0].At.Before(time.Now().Add(-time.Hour)) {
		t.Errorf("a message without a status after the upgrade = %+v, want it dated by the upgrade", msgs)
	}
	if _, err := s.db.ExecContext(ctx, `SELECT 1 FROM approval_status`); err == nil {
		t.Error("the transport's status table is still there after the upgrade")
	}
}
