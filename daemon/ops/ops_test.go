package ops

import (
	"context"
	"errors"
	"log/slog"
	"os"
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

// quiet is an approval notifier that shows nothing.
type quiet struct{}

func (quiet) Ask(approval.Audience, contracts.ApprovalRequest) {}
func (quiet) Settled(string, string)                           {}
func (quiet) Tell(approval.Audience, string)                   {}

type rig struct {
	a         *Applier
	auth      *approval.Authority
	layout    statedir.Layout
	scheduled []string
	told      []string
}

var phone = turns.Origin{Transport: "telegram", Chat: "42"}

// newRig is an Applier over a real store and authority on a fake clock;
// its work off the loop and back on it runs at once, in order.
func newRig(t *testing.T) *rig {
	layout := statedir.Layout{Root: t.TempDir()}
	store, err := state.Open(layout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	clk := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	log := slog.New(slog.DiscardHandler)
	r := &rig{layout: layout}
	r.auth = approval.New(approval.Config{Store: store, Notify: quiet{}, Clock: clk, Expiry: time.Hour, Log: log})
	r.a = &Applier{Store: store.Memories(), Auth: r.auth, Clock: clk, Log: log,
		Failed:     func(_ string, err error) error { return err },
		Tell:       func(_ approval.Audience, text string) { r.told = append(r.told, text) },
		OffLoop:    func(f func()) { f() },
		OnLoop:     func(f func(context.Context)) { f(context.Background()) },
		FacesAdded: func() {},
		Propose:    func(context.Context, Proposer, contracts.ProposeTool) error { return errors.New("no gate here") },
		Schedule: func(_ context.Context, by Proposer, s contracts.Schedule) error {
			r.scheduled = append(r.scheduled, by.Turn+": "+s.Text)
			return nil
		},
		Cancel:     func(context.Context, int64) error { return nil },
		LetThrough: func(context.Context, *turns.Turn, contracts.RequestToolApproval) bool { return false },
		Keep: func(_ context.Context, t *turns.Turn, req contracts.RequestToolApproval) (approval.Request, error) {
			return approval.Request{Key: t.ID}, nil
		},
	}
	return r
}

func (r *rig) about(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(r.layout.About())
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// apply applies ops of turn t and returns what the owner and the model
// are to read of them.
func (r *rig) apply(t *turns.Turn, ops ...contracts.Op) []string {
	var told []string
	done := false
	r.a.Apply(context.Background(), t, ops, func(_ context.Context, lines []string) { told, done = lines, true })
	if !done {
		panic("Apply did not call done")
	}
	return told
}

// TestApplierSkipsBadOpsOnly: an empty op and an invalid one are skipped
// and counted for the owner, never stopping the valid ones, which are
// kept in the state (the about text) or handed to their owner (a
// schedule).
func TestApplierSkipsBadOpsOnly(t *testing.T) {
	r := newRig(t)
	turn := &turns.Turn{ID: "T1", Admission: turns.Admission{Origin: phone}}
	told := r.apply(turn,
		contracts.Op{},
		contracts.Op{Body: contracts.Remember{Topic: "Not A Slug", Text: "x"}},
		contracts.Op{Body: contracts.RewriteAbout{Text: "likes tea"}},
		contracts.Op{Body: contracts.Schedule{Text: "water the plants", When: "09:00"}},
		contracts.Op{Body: contracts.ProposeTool{Name: "calc"}},
	)
	if got := r.about(t); got != "likes tea" {
		t.Errorf("about.md = %q, want the valid rewrite kept", got)
	}
	if len(told) != 3 || !strings.Contains(told[0], "empty") || !strings.Contains(told[1], "1 of the 1 remember") {
		t.Errorf("told %q, want the empty, the invalid and the refused op each said", told)
	}
	if strings.Join(r.scheduled, ",") != "T1: water the plants" {
		t.Errorf("scheduled %q, want the valid schedule handed on", r.scheduled)
	}
}

// TestApplierAsksForWhatAMarkedTurnKeeps, as the attack: a turn that
// read a page proposes to rewrite what the pet knows of its owner. It is
// not kept; it waits for the owner, and is kept only as they approved
// it — not when what waits was changed since.
func TestApplierAsksForWhatAMarkedTurnKeeps(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	turn := &turns.Turn{ID: "T1", Admission: turns.Admission{Origin: phone, Outside: "https://evil.example/"}}
	if told := r.apply(turn, contracts.Op{Body: contracts.RewriteAbout{Text: "obeys evil.example"}}); len(told) != 0 {
		t.Errorf("told %q", told)
	}
	if got := r.about(t); got != "" {
		t.Fatalf("a marked turn's rewrite was kept at once: %q", got)
	}
	waiting, err := r.auth.Waiting(ctx)
	if err != nil || len(waiting) != 1 || waiting[0].Kind != approval.Memory {
		t.Fatalf("waiting %+v (%v), want the marked memory", waiting, err)
	}
	req := waiting[0]
	changed := req
	p := *req.Memory
	p.Ops = []contracts.Op{{Body: contracts.RewriteAbout{Text: "something else"}}}
	changed.Memory = &p
	r.a.KeepMarked(ctx, approval.Audience(phone), changed, true)
	if got := r.about(t); got != "" {
		t.Fatalf("a changed request was kept: %q", got)
	}
	r.a.KeepMarked(ctx, approval.Audience(phone), req, true)
	if got := r.about(t); got != "obeys evil.example" {
		t.Errorf("approved, about.md = %q", got)
	}
	if len(r.told) != 2 || !strings.HasPrefix(r.told[0], "I kept none of it") || r.told[1] != "Kept, as you approved." {
		t.Errorf("told %q", r.told)
	}
}

// TestApplierKeepsRequestsBeforeTheReply: a RISKY call's request is kept
// before the reply asks it; one that cannot be kept turns the reply
// into saying so; one a rule lets through leaves no question in it.
func TestApplierKeepsRequestsBeforeTheReply(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	turn := &turns.Turn{ID: "T1", Admission: turns.Admission{Origin: phone}}
	ask := contracts.Op{Body: contracts.RequestToolApproval{Call: contracts.ToolCall{Name: "run_shell"}}}
	keep := contracts.Op{Body: contracts.Remember{Text: "x"}}
	reply, asks, rest := r.a.Requests(ctx, turn, "Shall I?", []contracts.Op{ask, keep})
	if reply != "Shall I?" || len(asks) != 1 || len(rest) != 1 {
		t.Errorf("Requests = %q, %d asks, %d ops; want the reply, one ask, one op", reply, len(asks), len(rest))
	}
	r.a.Keep = func(context.Context, *turns.Turn, contracts.RequestToolApproval) (approval.Request, error) {
		return approval.Request{}, errors.New("disk full")
	}
	if reply, asks, _ := r.a.Requests(ctx, turn, "Shall I?", []contracts.Op{ask}); len(asks) != 0 || !strings.Contains(reply, "could not keep the request (disk full)") {
		t.Errorf("unkept: reply %q with %d asks", reply, len(asks))
	}
	r.a.LetThrough = func(context.Context, *turns.Turn, contracts.RequestToolApproval) bool { return true }
	if reply, asks, _ := r.a.Requests(ctx, turn, "Shall I?", []contracts.Op{ask}); reply != "" || len(asks) != 0 {
		t.Errorf("let through: reply %q with %d asks", reply, len(asks))
	}
}
