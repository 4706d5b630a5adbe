package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"shelldon/daemon/state"
	"shelldon/demomodel"
)

// TestASecondCoreIsRefusedWithoutSideEffects: `shelldon daemon` on a
// state directory a live core serves, while a turn runs, is refused at
// once — and the live turn's record is left as it is, where a refused core
// once marked it interrupted on its way out; the turn then ends as it
// would have.
func TestASecondCoreIsRefusedWithoutSideEffects(t *testing.T) {
	model := demomodel.New(demomodel.Step{Text: "slow answer", Delay: 2 * time.Second})
	p := newPet(t, model)
	p.say("think slowly")
	p.waitRequests(1)
	var stderr strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := run(ctx, []string{"daemon", "--state-dir", p.cfg.StateDir}, nil, &strings.Builder{}, &stderr)
	if !errors.Is(err, state.ErrLocked) {
		t.Fatalf("a second shelldon daemon = %v, want it refused because a core holds the state directory", err)
	}
	turns := p.turns()
	if len(turns) != 1 || !turns[0].Ended.IsZero() || turns[0].Outcome != "" {
		t.Fatalf("the live turn after the refusal = %+v, want it still running", turns)
	}
	if r := p.reply(15 * time.Second); r.Text != "slow answer" {
		t.Errorf("the live turn answered %+v", r)
	}
	if turns := p.waitTurns(1); turns[0].Outcome != "ok" {
		t.Errorf("the live turn ended %q, want ok", turns[0].Outcome)
	}
}
