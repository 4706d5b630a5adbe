package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/visible"
	"shelldon/policy"
	"shelldon/tools"
)

// bailWithin is how close to the deadline the loop stops asking the
// model for more and answers with what it has. The loop's caps are
// policy's (policy.MayCallModel, policy.MayExecute).
const bailWithin = 2 * time.Second

// agentLoop converses with the model for one turn: it offers the tools,
// runs the FREE calls that run in the worker, and feeds every result back,
// until the model answers with text, a RISKY call parks the turn, or a
// bound cuts it short: the model calls used up, the same call failing the
// same way twice, the time nearly gone.
type agentLoop struct {
	tools *tools.Registry
	// offer lists the tools the model is told of; nil offers them all.
	offer []contracts.ToolDefinition
	// held are the tools the model knows by name alone (the prompt names
	// them); one it calls joins offer for the rest of the turn, so it
	// sees the parameters it should have passed.
	held     []contracts.ToolDefinition
	complete func(contracts.Job) (contracts.Completion, error)
	// exec asks core to run a sandboxed call; nil refuses such calls.
	exec func(contracts.ToolCall) (string, error)
	// step tells core that a call is about to run here, in the worker, so
	// the owner sees what the turn is doing; nil tells nobody. A call exec
	// sends needs none: core runs it, and sees it.
	step     func(contracts.ToolCall)
	now      func() time.Time
	deadline time.Time
	// canPark lets a RISKY call park the turn for the owner; without it
	// the call is answered as refused, so the model can do without.
	canPark bool
	// changed says the workspace changed in this conversation (an
	// approved call was carried out), so the model's answer is checked
	// against the workspace's tests first, through runTests.
	changed  bool
	runTests func() (passed bool, report string, err error)
	// maxCalls caps the model calls (turn.max_model_calls); under 1 it
	// counts as 1.
	maxCalls int
	// log keeps what the owner's audit trail needs; nil discards it.
	log *slog.Logger
}

// loopEnd is how a loop ended: with the model's text, or parked on a
// RISKY call waiting for the owner, or cut short by a bound with a reply
// that says so, or failed.
type loopEnd struct {
	Text string
	Park *contracts.RequestToolApproval
	Err  error
	// OwnerFix is the model's failure the owner must fix, with Err.
	OwnerFix string
	// Stop says how the loop ended, one of contracts.Stop…; empty with Err.
	Stop      string
	ModelTime time.Duration
	// ModelCalls counts the completions asked for, Usage their tokens
	// per provider that answered.
	ModelCalls int
	Usage      contracts.UsageByProvider
	// Executions counts the tool calls that ran.
	Executions int
}

// cut ends the loop on one of its bounds, with the reply for the owner.
func (e loopEnd) cut(stop, text string) loopEnd {
	e.Stop, e.Text = stop, text
	return e
}

// errOutOfExecutions refuses a call past policy.MaxExecutions. It is the
// turn's budget that fails, not the call, so it never counts as the
// call's failure.
var errOutOfExecutions = fmt.Errorf("this turn has used its %d tool calls; answer the owner with what you have", policy.MaxExecutions)

func (l *agentLoop) run(ctx context.Context, messages []contracts.Message) (end loopEnd) {
	defs := l.offer
	if defs == nil {
		defs = l.tools.Definitions()
	}
	// This turn's own words start here. Before them are the prompt and
	// the history, or the parked conversation a resumed turn takes up:
	// an earlier turn's, which no reply of this one may pass off as its
	// own.
	own := len(messages)
	// called lists the tools the model asked for, in order, for the owner
	// if the cap cuts the loop short; failures holds each call that failed,
	// with its error, and the model call whose answer asked for it first.
	var called []string
	failures := map[string]int{}
	for {
		// The model is always asked once. After that, tool calls or the
		// tests' verdict want it asked again, which the bounds may not
		// allow: the calls of the last answer have run (a RISKY one among
		// them parked the turn instead), but no model call reads them.
		if !policy.MayCallModel(end.ModelCalls, l.maxCalls) {
			return end.cut(contracts.StopModelCallCap, capReply(end.ModelCalls, called))
		}
		// A request that could not come back in time is not made.
		if end.ModelCalls > 0 && l.deadline.Sub(l.now()) < bailWithin {
			return end.cut(contracts.StopDeadline, bestEffort(messages[own:]))
		}
		started := l.now()
		c, err := l.complete(contracts.Job{Messages: messages, Tools: defs, Deadline: contracts.OnThisClock(l.deadline)})
		end.ModelTime += l.now().Sub(started)
		end.ModelCalls++
		if c.Provider != "" || c.Usage != (contracts.Usage{}) {
			end.Usage = end.Usage.Add(c.Provider, c.Usage)
		}
		switch {
		case err != nil:
			end.Err = fmt.Errorf("no completion: %w", err)
			return end
		case !c.OK:
			end.Err, end.OwnerFix = fmt.Errorf("the model failed: %s", c.Error), c.OwnerFix
			return end
		case len(c.ToolCalls) == 0:
			end.Stop = contracts.StopAnswer
			if l.changed && l.runTests != nil {
				// Done means the tests pass: a failure goes back to the
				// model, inside the same budget.
				l.changed = false
				passed, report, err := l.runTests()
				switch {
				case err != nil:
					end.Text = c.Text + "\n\n(I could not run the tests: " + err.Error() + ")"
				case passed && strings.TrimSpace(report) == "":
					end.Text = c.Text // no tests to run
				case passed:
					end.Text = c.Text + "\n\nTests: " + lastLine(report)
				default:
					messages = append(messages,
						contracts.Message{Role: contracts.ChatAssistant, Content: c.Text},
						contracts.Message{Role: contracts.ChatUser, Content: "The workspace's tests fail after the change, so the task is not done. Fix the code (not the tests), or tell the owner why you cannot.\n\n" + report})
					continue
				}
				return end
			}
			end.Text = c.Text
			return end
		}
		for _, call := range c.ToolCalls {
			called = append(called, call.Name)
			if i := slices.IndexFunc(l.held, func(d contracts.ToolDefinition) bool { return d.Name == call.Name }); i >= 0 {
				defs = append(slices.Clip(defs), l.held[i])
				l.held = slices.Delete(l.held, i, i+1)
			}
		}
		asked := contracts.Message{Role: contracts.ChatAssistant, Content: c.Text, ToolCalls: c.ToolCalls}
		var answers []contracts.Message
		for i, call := range c.ToolCalls {
			out, checked, err := l.try(ctx, call, &end)
			switch {
			case err == nil && checked.Tier == contracts.TierRisky:
				// The first RISKY call parks the turn. The assistant
				// message keeps the calls answered so far and this one;
				// the rest are dropped, and the model asks again after
				// the owner decides.
				asked.ToolCalls = c.ToolCalls[:i+1]
				parked := append(append(withoutImages(messages), asked), answers...)
				end.Stop = contracts.StopParked
				end.Park = &contracts.RequestToolApproval{Call: call, Summary: checked.Note, Messages: parked}
				return end
			case err == nil:
				answers = append(answers, contracts.Message{Role: contracts.ChatTool, ToolCallID: call.ID, Content: out})
			default:
				answers = append(answers, failed(call, err.Error()))
				if errors.Is(err, errOutOfExecutions) {
					continue
				}
				// A model that saw a call fail and asks for it again, to
				// fail the same way, is going round in circles. Calls of
				// one answer are asked for before any of them is seen, so
				// only a failure of an earlier answer counts.
				key := call.Name + "\x00" + call.Args + "\x00" + err.Error()
				first, seen := failures[key]
				if seen && first < end.ModelCalls {
					return end.cut(contracts.StopRepeatedFailure, repeatReply(call, err.Error()))
				}
				if !seen {
					failures[key] = end.ModelCalls
				}
			}
		}
		messages = append(append(messages, asked), answers...)
	}
}

// try runs one call of the model's, or says why it did not run. A RISKY
// call that can park the turn is neither: try returns it checked, with
// no output and no error, for the loop to park.
func (l *agentLoop) try(ctx context.Context, call contracts.ToolCall, end *loopEnd) (string, tools.Checked, error) {
	tool, ok := l.tools.Lookup(call.Name)
	if !ok {
		return "", tools.Checked{}, fmt.Errorf("there is no tool named %q; the tools are listed with this request", call.Name)
	}
	checked, err := tool.Check(call.Args)
	switch {
	case err != nil:
		var refused *tools.FetchRefusal
		if l.log != nil && errors.As(err, &refused) {
			l.log.Warn("http_get refused", contracts.AuditEvent, contracts.EventHTTPGet, "url", refused.URL, "decision", "refused", "why", refused.Err.Error())
		}
		return "", checked, err
	case checked.Tier == contracts.TierRisky && !l.canPark:
		return "", checked, errors.New("this needs the owner's approval, which this pet cannot ask for yet; do without it, or use a read-only command")
	case checked.Tier == contracts.TierRisky:
		return "", checked, nil
	case !policy.MayExecute(end.Executions):
		return "", checked, errOutOfExecutions
	}
	var run func() (string, error)
	if local, ok := tool.(tools.Local); ok && !checked.Sandboxed {
		run = func() (string, error) {
			if l.step != nil {
				l.step(call)
			}
			return local.Run(ctx, call.Args)
		}
	} else if checked.Sandboxed && l.exec != nil {
		run = func() (string, error) { return l.exec(call) }
	} else {
		return "", checked, errors.New("this call cannot run in this turn")
	}
	end.Executions++
	out, err := run()
	return out, checked, err
}

// lastLine is the last non-empty line of a report: pytest's summary.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// failed is a tool message that tells the model why its call did not run.
func failed(call contracts.ToolCall, why string) contracts.Message {
	return contracts.Message{Role: contracts.ChatTool, ToolCallID: call.ID, Content: "error: " + why}
}

// bestEffort is the reply of a loop that ran out of time: what the model
// last said in this turn's own messages, or a plain admission. Words the
// tests' verdict came after are not taken: the work they claim is not
// done.
func bestEffort(own []contracts.Message) string {
	for i := len(own) - 1; i >= 0 && own[i].Role != contracts.ChatUser; i-- {
		if m := own[i]; m.Role == contracts.ChatAssistant && m.Content != "" {
			return m.Content
		}
	}
	return "I ran out of time before I could finish that. Ask me again and I'll pick it up."
}

// capReply tells the owner that the turn used its model calls without an
// answer, and which tools the model kept calling instead.
func capReply(calls int, called []string) string {
	var b strings.Builder
	plural := "s"
	if calls == 1 {
		plural = ""
	}
	fmt.Fprintf(&b, "I stopped after %d model call%s without an answer", calls, plural)
	if len(called) > 0 {
		b.WriteString(": I kept calling tools (" + tally(called) + ")")
	}
	b.WriteString(". Ask me again, perhaps in smaller steps.")
	return b.String()
}

// repeatReply tells the owner which call failed twice and how.
func repeatReply(call contracts.ToolCall, why string) string {
	// The name, the arguments and the error are the model's and the
	// tool's words, shown as the text they are, on one line.
	why = strings.TrimRight(why, ". \n") // the reply puts its own full stop
	return fmt.Sprintf("I stopped: %s %s failed twice in the same way: %s. Ask me again, or tell me what to do differently.",
		visible.Line(cutEnd(call.Name, maxShownName)), visible.Line(cutEnd(call.Args, maxShownArgs)), visible.Line(cutEnd(why, maxShownError)))
}

// How much of a call the owner is shown when a bound cuts the loop short.
const (
	maxShownName  = 40
	maxShownArgs  = 120
	maxShownError = 200
	maxShownTools = 5
)

// tally counts names, "get_time ×7, read_file ×1", in the order each was
// first asked for; past maxShownTools names it says how many more.
func tally(names []string) string {
	var order []string
	counts := map[string]int{}
	for _, n := range names {
		if counts[n] == 0 {
			order = append(order, n)
		}
		counts[n]++
	}
	var parts []string
	for i, n := range order {
		if i == maxShownTools {
			parts = append(parts, fmt.Sprintf("%d more", len(order)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", visible.Line(cutEnd(n, maxShownName)), counts[n]))
	}
	return strings.Join(parts, ", ")
}

// withoutImages is messages with their images left out, for a parked
// conversation, which core keeps in its database: the text keeps the
// photo's placeholder, and the turn that resumes it goes on without the
// image.
func withoutImages(messages []contracts.Message) []contracts.Message {
	out := slices.Clone(messages)
	for i := range out {
		out[i].Images = nil
	}
	return out
}
