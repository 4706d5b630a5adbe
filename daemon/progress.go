package daemon

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"shelldon/contracts"
	"shelldon/daemon/owner"
	"shelldon/daemon/turns"
	"shelldon/daemon/visible"
)

// maxProgressSteps bounds the progress lines one turn sends: a worker
// runs at most a handful of calls, and one that floods core with steps
// reaches no transport past this.
const maxProgressSteps = 32

// maxOutcome bounds a finished command's outcome on its progress line.
const maxOutcome = 40

// handleStep takes a worker's word that it is about to run a call itself
// and tells the owner, in core's own words from its own check of the
// call. Only the turn in flight may say so, and only of a built-in tool
// that runs in the worker; anything else is dropped, since a step
// changes nothing but a line the owner sees.
func (c *Core) handleStep(env contracts.Envelope) {
	var step contracts.Step
	if err := env.Decode(&step); err != nil {
		c.log.Info("dropped an unreadable step", "turn", env.Turn, "err", err)
		return
	}
	t := c.turns.Current()
	if t == nil || t.ID != env.Turn || c.turns.Settled(t) {
		return
	}
	tool, ok := c.tools.Lookup(step.Call.Name)
	if !ok {
		return
	}
	checked, err := tool.Check(step.Call.Args)
	if err != nil || checked.Sandboxed || checked.Tier != contracts.TierFree {
		return
	}
	c.stepStarted(t, checked.Doing)
}

// stepStarted tells the owner of turn t that a step doing what doing
// says has started.
func (c *Core) stepStarted(t *turns.Turn, doing string) {
	r := c.run
	if r == nil || r.turn != t || r.steps >= maxProgressSteps {
		return
	}
	r.steps++
	c.say.progress(t.Admission.Origin, contracts.Progress{Turn: t.ID, Line: progressLine(doing, ""), Steps: r.steps})
}

// stepDone tells the owner of the turn in flight, if it is still turn,
// how a command it ran ended; described is the run as
// approved.DescribeRun told it to the model.
func (c *Core) stepDone(turn, doing, described string) {
	r := c.run
	if r == nil || r.turn.ID != turn || c.turns.Settled(r.turn) {
		return
	}
	c.say.progress(r.turn.Admission.Origin, contracts.Progress{Turn: turn, Line: progressLine(doing, runOutcome(described)), Steps: r.steps})
}

// settleProgress tells the owner that the steps of a turn are over: its
// reply has been sent. A turn that showed no step says nothing.
func (c *Core) settleProgress(r *turnRun) {
	if r == nil || r.steps == 0 {
		return
	}
	c.say.progress(r.turn.Admission.Origin, contracts.Progress{Turn: r.turn.ID, Line: settledLine(r.steps), Steps: r.steps, Settled: true})
}

// approvedProgress shows the owner the run of a call they approved,
// which core carries out between the parked turn and the one that takes
// it up again: a line under the parked turn's id while it runs, settled
// once it is done, before the resumed turn starts.
func (c *Core) approvedProgress(to turns.Origin, key, doing string, settled bool) {
	p := contracts.Progress{Turn: key, Line: progressLine(doing, ""), Steps: 1}
	if settled {
		p.Line, p.Settled = settledLine(1), true
	}
	c.say.progress(to, p)
}

// progressLine is the owner's line for a step: what it does, from the
// parsed call, then "…", then how it ended when it has (outcome), one
// visible line of at most contracts.MaxProgressLine characters.
func progressLine(doing, outcome string) string {
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
