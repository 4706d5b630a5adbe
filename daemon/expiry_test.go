package daemon

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/launch"
	"shelldon/daemon/state"
	"shelldon/testhost"
)

// TestUnansweredRequestsExpire: a request nobody decides on is dropped at
// its expiry; the owner is told, and every transport hears that it is
// settled, so its buttons go.
func TestUnansweredRequestsExpire(t *testing.T) {
	cfg, store := coreState(t, testhost.ShortDir(t))
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	call := contracts.ToolCall{ID: "c1", Name: "write_file", Args: `{"path":"a.txt","content":"x"}`}
	ctx := context.Background()
	if err := store.Approvals().Park(ctx, state.PendingApproval{
		Turn: "0123456789abcdef", Kind: "call", Call: call, Summary: "writes 1 byte to a.txt", Title: "write_file", Digest: "d",
		Shown:     []state.Audience{{Transport: "test", Chat: "owner"}},
		Messages:  []contracts.Message{{Role: contracts.ChatAssistant, ToolCalls: []contracts.ToolCall{call}}},
		Transport: "test", Chat: "owner", Created: clk.Now(), Expires: clk.Now().Add(90 * time.Second),
	}); err != nil {
		t.Fatal(err)
	}
	serveCore(t, Options{Config: cfg, Store: store, Launcher: launch.Child{}, WorkerArgv: []string{"worker"}, Clock: clk,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	got := make(chan contracts.Envelope, 16)
	listen(t, cfg.Socket, contracts.RoleTransport, func(env contracts.Envelope) { got <- env })

	var closed contracts.ApprovalClosed
	var told contracts.Outbound
	// The expiry check runs every minute of core's clock; the clock moves
	// a minute at a time until core has spoken (a check due before it was
	// set would otherwise be missed).
	deadline := time.After(10 * time.Second)
	for closed.Turn == "" || told.Text == "" {
		clk.Advance(expiryCheck)
		select {
		case env := <-got:
			switch env.Kind {
			case contracts.KindApprovalClosed:
				env.Decode(&closed)
			case contracts.KindOutbound:
				env.Decode(&told)
			}
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("core said nothing of the expired request (closed %+v, told %+v)", closed, told)
		}
	}
	if closed.Turn != "0123456789abcdef" || closed.Outcome != contracts.ApprovalExpired {
		t.Errorf("settled %+v, want the request expired", closed)
	}
	if !strings.Contains(told.Text, "Nobody answered my request (write_file: writes 1 byte to a.txt)") || told.Chat != "owner" {
		t.Errorf("the owner was told %+v", told)
	}
	if parked, err := store.Approvals().Waiting(ctx); err != nil || len(parked) != 0 {
		t.Errorf("still parked: %+v, %v", parked, err)
	}
}
