package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"shelldon/config"
	"shelldon/contracts"
	"shelldon/demomodel"
)

// demoTokens is what the demo model says a request cost: a token per
// four bytes, plus one, of the roles, contents and tool calls it was sent
// and of the answer's bytes (its text, or its calls' names and arguments).
func demoTokens(req demomodel.Request, answer int) contracts.Usage {
	sent := 0
	for _, m := range req.Messages {
		sent += len(m.Role) + len(m.Content)
		for _, c := range m.ToolCalls {
			sent += len(c.Name) + len(c.Args)
		}
	}
	return contracts.Usage{PromptTokens: sent/4 + 1, CompletionTokens: answer/4 + 1}
}

// TestTurnOfAModelThatOnlyCallsToolsIsCapped: issue 17's model, which
// answers every request with one more get_time call, is asked exactly
// turn.max_model_calls times through the whole pet. The owner gets a
// reply that says so, made of this turn alone (not the history's answer
// the old loop passed off as new), and `shelldon turns` shows the turn
// capped, with the tokens the model counted, summed over its calls.
func TestTurnOfAModelThatOnlyCallsToolsIsCapped(t *testing.T) {
	const (
		calls = 5
		sunny = "It is sunny today."
	)
	getTime := contracts.ToolCall{Name: "get_time", Args: "{}"}
	model := demomodel.New(demomodel.Step{Text: sunny})
	model.Fallback = func(demomodel.Request) demomodel.Step {
		return demomodel.Step{ToolCalls: []contracts.ToolCall{getTime}}
	}
	p := newPet(t, model, func(c *config.Config) { c.Turn.MaxModelCalls = calls })

	p.say("how is the weather?")
	if r := p.reply(15 * time.Second); r.Text != sunny {
		t.Fatalf("first reply = %+v", r)
	}
	p.waitTurns(1)
	p.say("what time is it?")
	r := p.reply(15 * time.Second)
	want := fmt.Sprintf("I stopped after %d model calls without an answer: I kept calling tools (get_time ×%d). Ask me again, perhaps in smaller steps.", calls, calls)
	if r.Text != want || r.Degraded {
		t.Fatalf("reply = %+v, want %q", r, want)
	}
	p.waitTurns(2)
	p.noReply(300 * time.Millisecond)
	reqs := p.model.Requests()
	if len(reqs) != 1+calls {
		t.Fatalf("the model was asked %d times, want 1 for the first turn and %d for the capped one", len(reqs), calls)
	}
	first := demoTokens(reqs[0], len(sunny))
	var tokens contracts.Usage
	for _, req := range reqs[1:] {
		tokens = tokens.Add(demoTokens(req, len(getTime.Name)+len(getTime.Args)))
	}

	out, _, err := runCLI(t, "turns", "--state-dir", p.cfg.StateDir)
	if err != nil {
		t.Fatalf("shelldon turns = %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("shelldon turns printed\n%s\nwant a header and 2 turns", out)
	}
	for _, want := range []string{fmt.Sprintf(" %d+%d ", tokens.PromptTokens, tokens.CompletionTokens), " capped: model-call-cap ", `"what time is it?"`} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("the capped turn's row = %q, want it to show %q", lines[1], want)
		}
	}
	for _, want := range []string{fmt.Sprintf(" %d+%d ", first.PromptTokens, first.CompletionTokens), " ok ", `"how is the weather?"`} {
		if !strings.Contains(lines[2], want) {
			t.Errorf("the first turn's row = %q, want it to show %q", lines[2], want)
		}
	}

	out, _, err = runCLI(t, "turns", "--state-dir", p.cfg.StateDir, "--json", "-n", "1")
	if err != nil {
		t.Fatalf("shelldon turns --json = %v", err)
	}
	var j turnJSON
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("shelldon turns --json printed %q: %v", out, err)
	}
	if j.Outcome != "capped" || j.Error != contracts.StopModelCallCap || j.PromptTokens != tokens.PromptTokens || j.CompletionTokens != tokens.CompletionTokens {
		t.Errorf("shelldon turns --json = %+v, want capped by the model-call cap after %+v", j, tokens)
	}
}
