package progress

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/turns"
	"shelldon/tools"
)

// reporter is a Reporter over the built-in tools whose turn in flight is
// *running ("" for none), and the lines it sent.
func reporter(t *testing.T, running *string) (*Reporter, *[]string) {
	var sent []string
	r := &Reporter{
		Send: func(to turns.Origin, p contracts.Progress) {
			sent = append(sent, fmt.Sprintf("%s/%s %s %d settled=%v", to.Transport, p.Turn, p.Line, p.Steps, p.Settled))
		},
		Tools:   tools.Builtins(tools.Env{Workspace: t.TempDir(), Vault: t.TempDir(), Clock: clock.NewFake(time.Unix(0, 0))}),
		Running: func(turn string) bool { return turn != "" && turn == *running },
		Log:     slog.New(slog.DiscardHandler),
	}
	return r, &sent
}

func step(turn string, call contracts.ToolCall) contracts.Envelope {
	env, _ := contracts.NewEnvelope(contracts.KindStep, turn, contracts.Step{Call: call})
	return env
}

// TestReporterWordsOnlyTheTurnInFlight: a worker's step is worded from
// core's own check of the call, only for the turn in flight and only for
// a FREE call the worker runs itself; a finished command's outcome
// follows; the lines settle once, and nothing is said after.
func TestReporterWordsOnlyTheTurnInFlight(t *testing.T) {
	running := "T1"
	r, sent := reporter(t, &running)
	r.Begin("T1", turns.Origin{Transport: "chat"})
	r.Step(step("T1", contracts.ToolCall{Name: "read_file", Args: `{"path":"notes.md"}`}))
	r.Step(step("T1", contracts.ToolCall{Name: "format_disk", Args: `{}`}))             // no such tool
	r.Step(step("T1", contracts.ToolCall{Name: "run_shell", Args: `{"command":"ls"}`})) // core runs it: EXEC says so
	r.Step(step("T0", contracts.ToolCall{Name: "read_file", Args: `{"path":"old.md"}`}))
	r.Started("T1", "running `pytest -q`")
	r.Done("T1", "running `pytest -q`", "exit 0\n..\n2 passed in 0.01s")
	running = "" // the turn settled: a late outcome is not shown
	r.Done("T1", "running `ls`", "exit 0\n")
	r.Step(step("T1", contracts.ToolCall{Name: "read_file", Args: `{"path":"late.md"}`}))
	r.Settle("T1")
	r.Started("T1", "reading late.md")
	r.Settle("T1")
	want := []string{
		"chat/T1 reading notes.md… 1 settled=false",
		"chat/T1 running `pytest -q`… 2 settled=false",
		"chat/T1 running `pytest -q`… 2 passed 2 settled=false",
		"chat/T1 done (2 steps) 2 settled=true",
	}
	if got := strings.Join(*sent, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("sent\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}

// TestReporterBoundsTheSteps: a worker flooding core with steps reaches
// the owner with at most maxSteps lines, and a turn without steps
// settles silently.
func TestReporterBoundsTheSteps(t *testing.T) {
	running := "T1"
	r, sent := reporter(t, &running)
	r.Begin("T1", turns.Origin{Transport: "chat"})
	for range 1000 {
		r.Step(step("T1", contracts.ToolCall{Name: "read_file", Args: `{"path":"a"}`}))
	}
	if len(*sent) != maxSteps {
		t.Errorf("1000 steps sent %d lines, want %d", len(*sent), maxSteps)
	}
	running = "T2"
	r.Begin("T2", turns.Origin{Transport: "chat"})
	r.Settle("T2")
	if len(*sent) != maxSteps {
		t.Errorf("a turn without steps sent %q", (*sent)[maxSteps:])
	}
}

// A command the owner approved shows one line under the parked turn's
// key while it runs, settled once it is done.
func ExampleReporter_Approved() {
	r := &Reporter{Send: func(to turns.Origin, p contracts.Progress) {
		fmt.Printf("to %s: %s\n", to.Transport, p.Line)
	}}
	r.Approved(turns.Origin{Transport: "telegram"}, "T7", "running `git push`", false)
	r.Approved(turns.Origin{Transport: "telegram"}, "T7", "running `git push`", true)
	// Output:
	// to telegram: running `git push`…
	// to telegram: done (1 step)
}

func draftOf(turn, text string) contracts.Envelope {
	env, _ := contracts.NewEnvelope(contracts.KindDraft, turn, contracts.Draft{Turn: turn, Text: text})
	return env
}

// TestDraftsOnlyOfTheTurnInFlight: a worker's draft of its reply reaches
// the transport its turn came from only while that turn runs, only when
// it changed, cut at contracts.MaxDraftRunes; another turn's, and any
// after the turn settled, reach nobody.
func TestDraftsOnlyOfTheTurnInFlight(t *testing.T) {
	running := "T1"
	r, _ := reporter(t, &running)
	var shown []string
	r.ShowDraft = func(to turns.Origin, d contracts.Draft) {
		shown = append(shown, fmt.Sprintf("%s/%s %d:%s", to.Transport, d.Turn, len([]rune(d.Text)), d.Text[:min(len(d.Text), 12)]))
	}
	r.Begin("T1", turns.Origin{Transport: "cli", Chat: "cli"})
	r.Draft(draftOf("T1", "Hello"))
	r.Draft(draftOf("T1", "Hello"))         // no change
	r.Draft(draftOf("T0", "an old turn's")) // not the turn in flight
	r.Draft(draftOf("T1", "Hello, owner"))
	r.Draft(draftOf("T1", strings.Repeat("é", 5000)))
	running = ""
	r.Draft(draftOf("T1", "Hello, owner, late"))
	r.Settle("T1")
	r.Draft(draftOf("T1", "Hello, owner, later"))
	want := []string{"cli/T1 5:Hello", "cli/T1 12:Hello, owner", "cli/T1 4000:" + strings.Repeat("é", 6)}
	if strings.Join(shown, "\n") != strings.Join(want, "\n") {
		t.Errorf("drafts shown:\n%s\nwant:\n%s", strings.Join(shown, "\n"), strings.Join(want, "\n"))
	}
}
