package worker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/tools"
)

// The agent loop's bounds.
const (
	// maxExecutions caps the tool calls one turn may run, parked ones and
	// refused ones not counted.
	maxExecutions = 6
	// bailWithin is how close to the deadline the loop stops asking the
	// model for more and answers with what it has.
	bailWithin = 2 * time.Second
)

// agentLoop converses with the model for one turn: it offers the tools,
// runs the FREE calls that run in the worker, and feeds every result back,
// until the model answers with text, a RISKY call parks the turn, or the
// budget runs out.
type agentLoop struct {
	tools *tools.Registry
	// offer lists the tools the model is told of; nil offers them all.
	offer    []contracts.ToolDefinition
	complete func(contracts.Job) (contracts.Completion, error)
	// exec asks core to run a sandboxed call; nil refuses such calls.
	exec     func(contracts.ToolCall) (string, error)
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
}

// loopEnd is how a loop ended: with the model's text, or parked on a
// RISKY call waiting for the owner, or failed.
type loopEnd struct {
	Text      string
	Park      *contracts.RequestToolApproval
	Err       error
	ModelTime time.Duration
	// Executions counts the tool calls that ran.
	Executions int
}

func (l *agentLoop) run(ctx context.Context, messages []contracts.Message) (end loopEnd) {
	defs := l.offer
	if defs == nil {
		defs = l.tools.Definitions()
	}
	for asked := false; ; asked = true {
		// The model is always asked once; after tool calls, a request
		// that could not come back in time is not made.
		if asked && l.deadline.Sub(l.now()) < bailWithin {
			end.Text = bestEffort(messages)
			return end
		}
		started := l.now()
		c, err := l.complete(contracts.Job{Messages: messages, Tools: defs, Deadline: l.deadline})
		end.ModelTime += l.now().Sub(started)
		switch {
		case err != nil:
			end.Err = fmt.Errorf("no completion: %w", err)
			return end
		case !c.OK:
			end.Err = fmt.Errorf("the model failed: %s", c.Error)
			return end
		case len(c.ToolCalls) == 0:
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
		asked := contracts.Message{Role: contracts.ChatAssistant, Content: c.Text, ToolCalls: c.ToolCalls}
		var answers []contracts.Message
		for i, call := range c.ToolCalls {
			tool, ok := l.tools.Lookup(call.Name)
			if !ok {
				answers = append(answers, failed(call, fmt.Sprintf("there is no tool named %q; the tools are listed with this request", call.Name)))
				continue
			}
			checked, err := tool.Check(call.Args)
			if err != nil {
				answers = append(answers, failed(call, err.Error()))
				continue
			}
			if checked.Tier == contracts.TierRisky && !l.canPark {
				answers = append(answers, failed(call, "this needs the owner's approval, which this pet cannot ask for yet; do without it, or use a read-only command"))
				continue
			}
			if checked.Tier == contracts.TierRisky {
				// The first RISKY call parks the turn. The assistant
				// message keeps the calls answered so far and this one;
				// the rest are dropped, and the model asks again after
				// the owner decides.
				asked.ToolCalls = c.ToolCalls[:i+1]
				parked := append(append(messages, asked), answers...)
				end.Park = &contracts.RequestToolApproval{Call: call, Summary: checked.Note, Messages: parked}
				return end
			}
			if end.Executions >= maxExecutions {
				answers = append(answers, failed(call, fmt.Sprintf("this turn has used its %d tool calls; answer the owner with what you have", maxExecutions)))
				continue
			}
			var run func() (string, error)
			if local, ok := tool.(tools.Local); ok && !checked.Sandboxed {
				run = func() (string, error) { return local.Run(ctx, call.Args) }
			} else if checked.Sandboxed && l.exec != nil {
				run = func() (string, error) { return l.exec(call) }
			} else {
				answers = append(answers, failed(call, "this call cannot run in this turn"))
				continue
			}
			end.Executions++
			out, err := run()
			if err != nil {
				answers = append(answers, failed(call, err.Error()))
				continue
			}
			answers = append(answers, contracts.Message{Role: contracts.ChatTool, ToolCallID: call.ID, Content: out})
		}
		messages = append(append(messages, asked), answers...)
	}
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

// bestEffort is the reply of a loop that ran out of time: whatever the
// model last said, or a plain admission.
func bestEffort(messages []contracts.Message) string {
	for i := len(messages) - 1; i >= 0; i-- {
		if m := messages[i]; m.Role == contracts.ChatAssistant && m.Content != "" {
			return m.Content
		}
	}
	return "I ran out of time before I could finish that. Ask me again and I'll pick it up."
}
