package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	godbus "github.com/godbus/dbus/v5"

	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/launch"
	"shelldon/demomodel"
	"shelldon/testhost/systemdhost"
)

// TestTurnInASystemdUnit runs a whole turn the way a board does: core
// asks a real systemd (booted in a container) for a shelldon-turn@ unit,
// the worker runs in it and joins core's bus, and the worker's log lands
// in that systemd's journal under the turn's id.
func TestTurnInASystemdUnit(t *testing.T) {
	host := systemdhost.Boot(t)
	ctx := context.Background()
	model := demomodel.New(demomodel.Step{Text: "hello from a unit", Delay: 500 * time.Millisecond})
	p := newPetInUnits(t, host, model, workerBinary(t))
	p.say("hi there, pet")
	// While the model thinks, the owner can see the turn as a unit.
	p.waitRequests(1)
	status, err := host.Exec(ctx, "systemctl", "status", "--no-pager", "shelldon-turn@*")
	if !strings.Contains(string(status), "shelldon turn: hi there, pet") || !strings.Contains(string(status), "shelldon-turns.slice") {
		t.Errorf("systemctl status 'shelldon-turn@*' during the turn = %v\n%s\nwant the turn's unit, described by its first words, in shelldon-turns.slice", err, status)
	}
	if r := p.reply(30 * time.Second); r.Text != "hello from a unit" || r.Degraded {
		t.Fatalf("reply = %+v, want the model's answer through a worker in a unit", r)
	}
	turn := p.waitTurns(1)[0]
	if turn.Outcome != "ok" || turn.WorkerExit != launch.ResultSuccess {
		t.Errorf("turn = %+v, want ok, with the unit's result success", turn)
	}

	// The unit is collected once it succeeded; its story stays in the
	// journal, found by the turn's id.
	unit := launch.UnitName(turn.ID)
	var journal string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		out, _ := host.Exec(ctx, "journalctl", "--no-pager", "-o", "export", "SHELLDON_TURN="+turn.ID)
		journal = string(out)
		if strings.Contains(journal, "SYSLOG_IDENTIFIER=shelldon-worker") {
			break
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	for _, want := range []string{"SYSLOG_IDENTIFIER=shelldon-worker", "_SYSTEMD_UNIT=" + unit, "SHELLDON_TURN=" + turn.ID} {
		if !strings.Contains(journal, want) {
			t.Errorf("journal entries for the turn lack %q:\n%s", want, journal)
		}
	}
}

// TestToolCallsInASystemdUnit: python_eval's evaluator starts, bounds
// itself and is killed inside a turn's unit, under its system call
// filter, task limit and the rest of its sandboxing.
func TestToolCallsInASystemdUnit(t *testing.T) {
	host := systemdhost.Boot(t)
	// A dict key is hashed in one step: 10^12 items, until the kill.
	const forever = `(lambda t: {t: 1})((lambda a: tuple([a] * 1000))((lambda b: tuple([b] * 1000))((lambda c: tuple([c] * 1000))(tuple([0] * 1000)))))`
	model := demomodel.New(
		demomodel.Step{ToolCalls: []contracts.ToolCall{
			{ID: "c1", Name: "python_eval", Args: `{"expression": "6 * 7"}`},
			{ID: "c2", Name: "python_eval", Args: `{"expression": "` + strings.ReplaceAll(forever, `"`, `\"`) + `"}`},
			{ID: "c3", Name: "python_eval", Args: `{"expression": "(lambda l: len([zip(l, l) for i in range(14)]))(list(range(262144)))"}`},
		}},
		demomodel.Step{Text: "It is 42."},
	)
	p := newPetInUnits(t, host, model, workerBinary(t))
	p.say("what is six times seven?")
	if r := p.reply(30 * time.Second); r.Text != "It is 42." {
		t.Fatalf("reply = %+v", r)
	}
	answers := map[string]string{}
	for _, m := range p.waitRequests(2)[1].Messages {
		if m.Role == contracts.ChatTool {
			answers[m.ToolCallID] = m.Content
		}
	}
	if answers["c1"] != "42" {
		t.Errorf("python_eval(6 * 7) answered %q in a unit, want 42", answers["c1"])
	}
	if want := "error: python_eval: stopped after 2 s"; !strings.HasPrefix(answers["c2"], want) {
		t.Errorf("python_eval of a hash that never ends answered %q in a unit, want %q...", answers["c2"], want)
	}
	// The unit's CPU quota on a busy machine may bring the time limit
	// first: as clear an answer.
	if c3 := answers["c3"]; !strings.Contains(c3, "ran out of memory (128 MiB)") && !strings.Contains(c3, "took longer than 2 seconds") && !strings.Contains(c3, "stopped after 2 s") {
		t.Errorf("python_eval that holds too much answered %q in a unit, want it out of memory", c3)
	}
}

// newPetInUnits is a pet whose core asks host's systemd for a unit per
// turn, running workerBin (staged where both sides see it at the same
// path: a unit's /tmp is its own) as the worker.
func newPetInUnits(t testing.TB, host *systemdhost.Host, model *demomodel.Server, workerBin string) *pet {
	t.Helper()
	bin := host.Stage(t, workerBin)
	sd, err := launch.NewSystemd(context.Background(), func() (*godbus.Conn, error) { return systemdhost.Dial(host.BusAddress) }, launch.SystemdOptions{})
	if err != nil {
		t.Fatalf("NewSystemd: %v", err)
	}
	t.Cleanup(sd.Close)
	state := filepath.Join(host.Dir, "state")
	return newPetLaunchedBy(t, sd, model, func(c *config.Config) {
		c.StateDir = state
		c.Socket = filepath.Join(state, "bus.sock")
		c.Turn.WorkerCommand = []string{bin}
	})
}

func TestWorkerUser(t *testing.T) {
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(&logged, nil))
	for name, want := range map[string]string{"": "", "root": "root", "no-such-user-7d3f": ""} {
		if got := workerUser(name, log); got != want {
			t.Errorf("workerUser(%q) = %q, want %q", name, got, want)
		}
	}
	if !strings.Contains(logged.String(), "no-such-user-7d3f") {
		t.Errorf("a missing worker user was not logged: %q", logged.String())
	}
}
