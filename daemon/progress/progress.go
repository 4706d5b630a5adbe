// Package progress words what a turn is doing for the owner, one line
// per step, in core's own words from core's own check of each call: a
// worker's word that it is about to run a call, a command core runs for
// it, a call the owner approved. The transport the turn came from shows
// the lines under the turn's id and settles them once the turn has
// replied. While the model writes the turn's reply, the same transport
// is shown its draft as it grows, until the reply replaces it.
package progress

import (
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"

	"shelldon/contracts"
	"shelldon/daemon/owner"
	"shelldon/daemon/turns"
	"shelldon/daemon/visible"
	"shelldon/tools"
)

// maxSteps bounds the progress lines one turn sends: a worker runs at
// most a handful of calls, and one that floods core with steps reaches
// no transport past this.
const maxSteps = 32

// maxOutcome bounds a finished command's outcome on its progress line.
const maxOutcome = 40

// Tools looks up the tools a worker's step may name: the built-in ones
// ([tools.Registry]).
type Tools interface {
	Lookup(name string) (tools.Tool, bool)
}

// Reporter counts and words the steps of the turn in flight. It is used
// from core's loop only, so it needs no lock.
type Reporter struct {
	// Send delivers a line to where a turn came from.
	Send func(to turns.Origin, p contracts.Progress)
	// ShowDraft delivers a draft of a turn's reply to where the turn came
	// from.
	ShowDraft func(to turns.Origin, d contracts.Draft)
	// Tools checks a worker's step as the worker's own tools do.
	Tools Tools
	// Running reports whether turn is the turn in flight and has not
	// settled yet: a step of any other is dropped.
	Running func(turn string) bool
	Log     *slog.Logger

	turn    string // the turn whose steps are counted; "" between turns
	origin  turns.Origin
	steps   int
	drafted string // the draft of the turn's reply shown last
}

// Begin starts counting the steps of turn, which came from origin.
func (r *Reporter) Begin(turn string, origin turns.Origin) {
	r.turn, r.origin, r.steps, r.drafted = turn, origin, 0, ""
}

// Draft takes a worker's draft of its turn's reply and shows it where
// the turn came from: only the turn in flight's, only while it runs, only
// when it changed, at most contracts.MaxDraftRunes characters of it (a
// longer one cut, with an ellipsis). A
// draft is shown and forgotten: never kept, never history; the reply
// replaces it.
func (r *Reporter) Draft(env contracts.Envelope) {
	var d contracts.Draft
	if err := env.Decode(&d); err != nil {
		r.Log.Info("dropped an unreadable draft", "turn", env.Turn, "err", err)
		return
	}
	if env.Turn == "" || env.Turn != r.turn || !r.Running(env.Turn) || r.origin.Transport == "" {
		return
	}
	text := owner.Shorten(d.Text, contracts.MaxDraftRunes-1)
	if text == r.drafted {
		return
	}
	r.drafted = text
	r.ShowDraft(r.origin, contracts.Draft{Turn: env.Turn, Text: text})
}

// Step takes a worker's word that it is about to run a call itself and
// tells the owner. Only the turn in flight may say so, and only of a
// built-in tool that runs in the worker; anything else is dropped, since
// a step changes nothing but a line the owner sees.
func (r *Reporter) Step(env contracts.Envelope) {
	var step contracts.Step
	if err := env.Decode(&step); err != nil {
		r.Log.Info("dropped an unreadable step", "turn", env.Turn, "err", err)
		return
	}
	if !r.Running(env.Turn) {
		return
	}
	tool, ok := r.Tools.Lookup(step.Call.Name)
	if !ok {
		return
	}
	checked, err := tool.Check(step.Call.Args)
	if err != nil || checked.Sandboxed || checked.Tier != contracts.TierFree {
		return
	}
	r.Started(env.Turn, checked.Doing)
}

// Started tells the owner of turn that a step doing what doing says has
// started.
func (r *Reporter) Started(turn, doing string) {
	if turn == "" || turn != r.turn || r.steps >= maxSteps {
		return
	}
	r.steps++
	r.Send(r.origin, contracts.Progress{Turn: turn, Line: line(doing, ""), Steps: r.steps})
}

// Done tells the owner of turn, if it is still in flight, how a command
// it ran ended; described is the run as approved.DescribeRun told it to
// the model.
func (r *Reporter) Done(turn, doing, described string) {
	if turn == "" || turn != r.turn || !r.Running(turn) {
		return
	}
	r.Send(r.origin, contracts.Progress{Turn: turn, Line: line(doing, runOutcome(described)), Steps: r.steps})
}

// Settle tells the owner that the steps of turn are over: its reply has
// been sent. A turn that showed no step says nothing.
func (r *Reporter) Settle(turn string) {
	if turn == "" || turn != r.turn {
		return
	}
	if r.steps > 0 {
		r.Send(r.origin, contracts.Progress{Turn: turn, Line: settledLine(r.steps), Steps: r.steps, Settled: true})
	}
	r.turn, r.steps = "", 0
}

// Approved shows the owner the run of a call they approved, which core
// carries out between the parked turn and the one that takes it up
// again: a line under the parked turn's key while it runs, settled once
// it is done, before the resumed turn starts.
func (r *Reporter) Approved(to turns.Origin, key, doing string, settled bool) {
	p := contracts.Progress{Turn: key, Line: line(doing, ""), Steps: 1}
	if settled {
		p.Line, p.Settled = settledLine(1), true
	}
	r.Send(to, p)
}

// line is the owner's line for a step: what it does, from the parsed
// call, then "…", then how it ended when it has (outcome), one visible
// line of at most contracts.MaxProgressLine characters.
func line(doing, outcome string) string {
	if doing = strings.TrimSpace(doing); doing == "" {
		doing = "working"
	}
	tail := "…"
	if outcome != "" {
		tail += " " + fit(outcome, maxOutcome)
	}
	return fit(doing, contracts.MaxProgressLine-len([]rune(tail))) + tail
}

// fit is s as one visible line of at most n characters, cut with an
// ellipsis. s is cut before it is made visible too, so a long argument
// costs no more than its bound.
func fit(s string, n int) string {
	n = max(n, 2)
	return owner.Shorten(visible.Line(owner.Shorten(s, n-1)), n-1)
}

// settledLine is what a settled progress line says.
func settledLine(steps int) string {
	if steps == 1 {
		return "done (1 step)"
	}
	return fmt.Sprintf("done (%d steps)", steps)
}

// pytestSummary finds pytest's summary line, with or without its "="
// rule: "12 passed in 0.03s", "1 failed, 11 passed, 2 warnings in 1.20s",
// "no tests ran in 0.01s".
var pytestSummary = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^=*\s*((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected|rerun)(?:, )?)+|no tests ran) in [0-9.]+s\b`)
})

// runOutcome is a command's outcome in a few words, from the run as
// approved.DescribeRun told it (its first line "exit N" or "killed: …",
// then the output): pytest's counts when its summary line says them,
// else the exit status when it failed, else "done".
func runOutcome(described string) string {
	head, output, _ := strings.Cut(described, "\n")
	if m := pytestSummary().FindAllStringSubmatch(output, -1); m != nil {
		return strings.TrimSuffix(m[len(m)-1][1], ", ")
	}
	switch {
	case strings.HasPrefix(head, "error:"):
		return "failed"
	case head == "exit 0":
		return "done"
	case strings.HasPrefix(head, "exit "), strings.HasPrefix(head, "killed: "):
		head, _, _ = strings.Cut(head, ",") // ", its disk full" is for the model
		return head
	}
	return "done"
}
