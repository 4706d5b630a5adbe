package tokencap

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/daemon/turns"
)

// shown records what the authority shows the owner.
type shown struct{ asked []contracts.ApprovalRequest }

func (s *shown) Ask(_ approval.Audience, req contracts.ApprovalRequest) {
	s.asked = append(s.asked, req)
}
func (*shown) Settled(string, string)         {}
func (*shown) Tell(approval.Audience, string) {}

// messages stands in for the intake: it records what it is asked.
type messages struct{ did []string }

func (m *messages) Overflow(text string) string { return " [" + text + " kept]" }
func (m *messages) Admit(_ context.Context, _ turns.Origin, in contracts.Inbound) ([]int64, bool) {
	m.did = append(m.did, "admit "+in.Text)
	return []int64{9}, false
}
func (m *messages) Answered(_ context.Context, ids []int64) error {
	m.did = append(m.did, fmt.Sprint("answered ", ids))
	return nil
}

type rig struct {
	gate     *Gate
	auth     *approval.Authority
	shown    *shown
	intake   *messages
	today    int
	todayErr error
	begun    []string
	released int
	told     []string
}

var phone = turns.Origin{Transport: "telegram", Chat: "42"}

// newRig is a Gate with a cap of 1000 over a real approval authority and
// store, on a fake clock.
func newRig(t *testing.T) *rig {
	store, err := state.Open(statedir.Layout{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	log := slog.New(slog.DiscardHandler)
	r := &rig{shown: &shown{}, intake: &messages{}}
	r.auth = approval.New(approval.Config{Store: store, Notify: r.shown, Clock: clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)), Expiry: time.Hour, Log: log})
	r.gate = &Gate{Cap: 1000, Auth: r.auth, Intake: r.intake, Log: log,
		Today:   func(context.Context) (int, error) { return r.today, r.todayErr },
		Failed:  func(_ string, err error) error { return err },
		Tell:    func(_ approval.Audience, text string) { r.told = append(r.told, text) },
		Begin:   func(_ context.Context, adm turns.Admission) { r.begun = append(r.begun, adm.Text) },
		Release: func(context.Context) { r.released++ },
	}
	return r
}

// TestGateAsksPastTheCap: below the cap a turn starts; at it, the owner
// is asked instead, the request holds the message (no longer waiting as
// admitted) and the slot is handed on; a sum that cannot be read starts
// the turn.
func TestGateAsksPastTheCap(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.today = 999
	r.gate.Start(ctx, turns.Admission{Text: "below", Origin: phone, Messages: []int64{1}})
	r.today = 1000
	r.gate.Start(ctx, turns.Admission{Text: "past", Origin: phone, Messages: []int64{2}, Overflow: "more"})
	r.todayErr = errors.New("disk on fire")
	r.gate.Start(ctx, turns.Admission{Text: "unknown", Origin: phone, Messages: []int64{3}})
	if got := strings.Join(r.begun, ","); got != "below,unknown" {
		t.Errorf("turns begun: %s, want below,unknown", got)
	}
	if r.released != 1 || len(r.shown.asked) != 1 || strings.Join(r.intake.did, ",") != "answered [2]" {
		t.Errorf("released %d, asked %d, intake did %q; want the one past the cap asked, held and handed on", r.released, len(r.shown.asked), r.intake.did)
	}
	waiting, err := r.auth.Waiting(ctx)
	if err != nil || len(waiting) != 1 || waiting[0].TokenCap.Text != "past [more kept]" {
		t.Fatalf("the authority holds %+v (%v), want the message past the cap with its overflow", waiting, err)
	}
}

// TestGateCarriesOutOnlyWhatWasApproved: approved, the kept message is
// admitted again and its turn starts; a message changed after it was
// shown starts nothing; denied, it is let go politely.
func TestGateCarriesOutOnlyWhatWasApproved(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.today = 5000
	r.gate.Start(ctx, turns.Admission{Text: "past", Origin: phone})
	waiting, _ := r.auth.Waiting(ctx)
	req := waiting[0]
	if !r.gate.CarryOut(ctx, approval.Outcome{Verdict: approval.Approved, Request: req}) || strings.Join(r.begun, ",") != "past" {
		t.Errorf("approved: begun %q, want the kept message's turn", r.begun)
	}
	tampered := req
	tampered.TokenCap = &approval.TokenCapPayload{Text: "something else", Today: 5000, Cap: 1000}
	if r.gate.CarryOut(ctx, approval.Outcome{Verdict: approval.Approved, Request: tampered}) || len(r.begun) != 1 {
		t.Errorf("a changed message started a turn: begun %q", r.begun)
	}
	if r.gate.CarryOut(ctx, approval.Outcome{Verdict: approval.Denied, Request: req}) || len(r.begun) != 1 {
		t.Errorf("a denied message started a turn: begun %q", r.begun)
	}
	if len(r.told) != 2 || !strings.Contains(r.told[0], "not what you approved") || !strings.Contains(r.told[1], "leave") {
		t.Errorf("told %q", r.told)
	}
}
