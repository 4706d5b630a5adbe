package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"shelldon/config"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/daemon/turns"
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

// TestABrokerKilledMidTurnIsNoticedAtOnce: kill -9 of the broker while it
// holds a turn's job degrades the turn within two seconds, naming the
// cause in `shelldon turns` — not after the worker's whole budget — and
// the next broker answers the next message.
func TestABrokerKilledMidTurnIsNoticedAtOnce(t *testing.T) {
	model := demomodel.New(
		demomodel.Step{Text: "never heard", Delay: 8 * time.Second},
		demomodel.Step{Text: "back"},
	)
	// A worker budget far longer than the 2 s the test allows: the turn
	// must not end by running out of it.
	p := newPet(t, model, fastTimeouts(20*time.Second, 22*time.Second, 25*time.Second), func(c *config.Config) { c.Worker.CPUSeconds = 22 })
	p.stopBroker()
	config := writeConfig(t, p)
	brokerProcess := startProcess(t, os.Args[0], "broker", "--config", config)
	p.say("a slow question")
	p.waitRequests(1) // the broker has the job, and waits on the model
	killed := time.Now()
	if err := brokerProcess.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r := p.reply(10 * time.Second)
	if took := time.Since(killed); !r.Degraded || took > 2*time.Second {
		t.Fatalf("after the broker's kill: %+v after %v, want the degrade answer within 2 s", r, took)
	}
	turns := p.waitTurns(1)
	if !strings.Contains(turns[0].Error, "broker left the bus") {
		t.Errorf("shelldon turns says the turn failed because %q, want that the broker left", turns[0].Error)
	}
	startProcess(t, os.Args[0], "broker", "--config", config)
	p.say("again?")
	if r := p.replyWith("back", 20*time.Second); r.Degraded {
		t.Errorf("the next message answered %+v", r)
	}
}

// TestABurstOfHugeMessagesFailsNothing: 100 messages of 60 KB during a
// slow turn make one catch-up turn of at most what a turn takes — the rest
// kept in the workspace, the model told where — and the turns after it
// are normal; nothing oversized follows them in the history.
func TestABurstOfHugeMessagesFailsNothing(t *testing.T) {
	model := demomodel.New(
		demomodel.Step{Text: "slow answer", Delay: 1500 * time.Millisecond},
		demomodel.Step{Text: "caught up"},
		demomodel.Step{Text: "normal again"},
	)
	p := newPet(t, model)
	ws := statedir.Layout{Root: p.cfg.StateDir}.Workspace()
	p.say("first")
	p.waitRequests(1)
	chunk := strings.Repeat("0123456789", 6<<10) // 60 KiB
	for i := range 100 {
		p.say(fmt.Sprintf("%03d %s", i, chunk))
	}
	for _, want := range []string{"slow answer", "caught up"} {
		if r := p.reply(30 * time.Second); r.Text != want || r.Degraded {
			t.Fatalf("reply = %.100q (degraded %v), want %q", r.Text, r.Degraded, want)
		}
	}
	reqs := p.waitRequests(2)
	asked := lastUser(reqs[1])
	if len(asked) > turns.MaxCatchUpBytes+1024 || !strings.Contains(asked, "in my workspace at inbox/") {
		t.Errorf("the catch-up turn asked the model %d bytes ending %q, want at most %d and where the rest is", len(asked), asked[max(0, len(asked)-200):], turns.MaxCatchUpBytes)
	}
	kept, _ := filepath.Glob(filepath.Join(ws, "inbox", "while-busy-*.txt"))
	if len(kept) != 1 {
		t.Fatalf("the workspace's inbox holds %q, want the rest of the burst", kept)
	}
	if b, _ := os.ReadFile(kept[0]); !strings.Contains(string(b), "099 0123456789") {
		t.Errorf("the kept rest does not end with the last message")
	}
	p.waitTurns(2)
	p.say("and now?")
	if r := p.reply(15 * time.Second); r.Text != "normal again" || r.Degraded {
		t.Fatalf("the turn after the burst answered %+v", r)
	}
	for _, m := range p.waitRequests(3)[2].Messages {
		if len(m.Content) > 64<<10 {
			t.Errorf("the next turn's prompt carries a message of %d bytes", len(m.Content))
		}
	}
}

// TestAHugeAnswerFailsOnlyItsTurn: an answer of 2.5 MB, and one of 7 MiB
// (past the bus's frame limit, under the broker's read cap), each fail
// their own turn at once, saying why in `shelldon turns`; the next turn
// is normal, with nothing of them in its history.
func TestAHugeAnswerFailsOnlyItsTurn(t *testing.T) {
	model := demomodel.New(
		demomodel.Step{Text: strings.Repeat("a", 2500<<10)},
		demomodel.Step{Text: "normal"},
		demomodel.Step{Text: strings.Repeat("b", 7<<20)},
		demomodel.Step{Text: "normal again"},
	)
	p := newPet(t, model)
	for i, want := range []string{"normal", "normal again"} {
		p.say("answer at length")
		started := time.Now()
		if r := p.reply(20 * time.Second); !r.Degraded {
			t.Fatalf("a huge answer was delivered (%d bytes)", len(r.Text))
		}
		if took := time.Since(started); took > 5*time.Second {
			t.Errorf("the huge answer's turn took %v to fail, want it at once, not the worker's budget", took)
		}
		turns := p.waitTurns(2*i + 1)
		if got := turns[0]; !strings.Contains(got.Error, "more than the 256 KiB one turn takes") {
			t.Errorf("shelldon turns says %q of the huge answer's turn, want why", got.Error)
		}
		p.say("and now?")
		if r := p.reply(15 * time.Second); r.Text != want || r.Degraded {
			t.Fatalf("the turn after a huge answer answered %.80q", r.Text)
		}
		p.waitTurns(2*i + 2)
	}
	for _, m := range p.waitRequests(4)[3].Messages {
		if len(m.Content) > 64<<10 {
			t.Errorf("a later prompt carries a message of %d bytes", len(m.Content))
		}
	}
}
