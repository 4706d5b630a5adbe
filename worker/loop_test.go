package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/statedir"
	"shelldon/policy"
	"shelldon/tools"
)

// scripted answers the loop's jobs from a list, recording each job.
type scripted struct {
	answers []contracts.Completion
	jobs    []contracts.Job
}

func (s *scripted) complete(job contracts.Job) (contracts.Completion, error) {
	s.jobs = append(s.jobs, job)
	if len(s.answers) == 0 {
		return contracts.Completion{}, errors.New("the script ran out")
	}
	c := s.answers[0]
	s.answers = s.answers[1:]
	return c, nil
}

func calls(cs ...contracts.ToolCall) contracts.Completion {
	return contracts.Completion{OK: true, ToolCalls: cs}
}

func call(id, name, args string) contracts.ToolCall {
	return contracts.ToolCall{ID: id, Name: name, Args: args}
}

func text(s string) contracts.Completion { return contracts.Completion{OK: true, Text: s} }

func newLoop(t *testing.T, s *scripted) *agentLoop {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("buy milk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := clock.NewFake(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	return &agentLoop{
		tools:    tools.Builtins(tools.Env{Workspace: ws, Vault: filepath.Join(t.TempDir(), "vault"), Clock: fake}),
		complete: s.complete,
		now:      fake.Now,
		deadline: fake.Now().Add(25 * time.Second),
		canPark:  true,
		maxCalls: 8,
	}
}

// answered checks that every tool call of every assistant message is
// answered by a tool message before the next assistant message, as the
// providers require.
func answered(t *testing.T, messages []contracts.Message, except string) {
	t.Helper()
	open := map[string]bool{}
	for _, m := range messages {
		switch m.Role {
		case contracts.ChatAssistant:
			for id := range open {
				t.Errorf("tool call %s was never answered", id)
			}
			open = map[string]bool{}
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		case contracts.ChatTool:
			if !open[m.ToolCallID] {
				t.Errorf("tool message answers %q, which no open call has", m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		}
	}
	for id := range open {
		if id != except {
			t.Errorf("tool call %s was never answered", id)
		}
	}
}

func start() []contracts.Message {
	return []contracts.Message{{Role: contracts.ChatSystem, Content: "be a pet"}, {Role: contracts.ChatUser, Content: "hi"}}
}

func TestLoopRunsFreeCallsAndEndsInText(t *testing.T) {
	s := &scripted{answers: []contracts.Completion{
		calls(call("1", "get_time", `{}`), call("2", "read_file", `{"path":"notes.txt"}`)),
		text("You wanted to buy milk."),
	}}
	end := newLoop(t, s).run(context.Background(), start())
	if end.Err != nil || end.Text != "You wanted to buy milk." || end.Executions != 2 || end.Stop != contracts.StopAnswer || end.ModelCalls != 2 {
		t.Fatalf("run = %+v, want the final text, the model's answer, after 2 executions and 2 model calls", end)
	}
	if len(s.jobs) != 2 || len(s.jobs[0].Tools) == 0 {
		t.Fatalf("jobs = %d, tools offered %d; want 2 jobs with tools", len(s.jobs), len(s.jobs[0].Tools))
	}
	second := s.jobs[1].Messages
	answered(t, second, "")
	last := second[len(second)-1]
	if last.Role != contracts.ChatTool || last.ToolCallID != "2" || !strings.Contains(last.Content, "buy milk") {
		t.Errorf("last message of the second job = %+v, want read_file's answer", last)
	}
	if !strings.Contains(second[len(second)-2].Content, "2026-11-30") {
		t.Errorf("get_time answered %q, want the fake clock's date", second[len(second)-2].Content)
	}
}

func TestLoopFailuresAreResultsNotCrashes(t *testing.T) {
	s := &scripted{answers: []contracts.Completion{
		calls(call("1", "launch_rockets", `{}`), call("2", "read_file", `{"path": 7}`), call("3", "read_file", `not json`), call("4", "read_file", `{"path":"../../etc/passwd"}`)),
		text("Sorry, I could not."),
	}}
	end := newLoop(t, s).run(context.Background(), start())
	if end.Err != nil || end.Text != "Sorry, I could not." {
		t.Fatalf("run = %+v, want the model's answer after the failures", end)
	}
	msgs := s.jobs[1].Messages
	answered(t, msgs, "")
	for _, m := range msgs[len(msgs)-4:] {
		if !strings.HasPrefix(m.Content, "error: ") {
			t.Errorf("answer to call %s = %q, want an error for the model", m.ToolCallID, m.Content)
		}
	}
	if !strings.Contains(msgs[len(msgs)-4].Content, `no tool named "launch_rockets"`) {
		t.Errorf("unknown tool answered %q", msgs[len(msgs)-4].Content)
	}
}

func TestLoopCapsExecutions(t *testing.T) {
	var answers []contracts.Completion
	for i := range 4 {
		id := string(rune('a' + 2*i))
		answers = append(answers, calls(call(id, "get_time", `{}`), call(id+"'", "get_time", `{}`)))
	}
	s := &scripted{answers: append(answers, text("done"))}
	end := newLoop(t, s).run(context.Background(), start())
	if end.Text != "done" || end.Executions != policy.MaxExecutions {
		t.Fatalf("run = %+v, want %d executions and the final text", end, policy.MaxExecutions)
	}
	msgs := s.jobs[len(s.jobs)-1].Messages
	answered(t, msgs, "")
	var refused int
	for _, m := range msgs {
		if strings.Contains(m.Content, "used its 6 tool calls") {
			refused++
		}
	}
	if refused != 2 {
		t.Errorf("%d calls refused for the cap, want 2", refused)
	}
}

func TestLoopBailsNearTheDeadline(t *testing.T) {
	s := &scripted{answers: []contracts.Completion{
		{OK: true, Text: "Let me look.", ToolCalls: []contracts.ToolCall{call("1", "get_time", `{}`)}},
	}}
	l := newLoop(t, s)
	fake := clock.NewFake(l.now())
	l.now = fake.Now
	l.complete = func(job contracts.Job) (contracts.Completion, error) {
		fake.Advance(24 * time.Second) // the model is slow
		return s.complete(job)
	}
	end := l.run(context.Background(), start())
	if end.Err != nil || end.Text != "Let me look." || len(s.jobs) != 1 || end.Stop != contracts.StopDeadline {
		t.Fatalf("run = %+v after %d jobs, want the model's last words, no second request, stopped by the deadline", end, len(s.jobs))
	}
}

// withHistory is a prompt whose history holds an earlier turn's answer,
// which no reply of this turn may repeat.
func withHistory() []contracts.Message {
	return []contracts.Message{
		{Role: contracts.ChatSystem, Content: "be a pet"},
		{Role: contracts.ChatUser, Content: "how was the weather?"},
		{Role: contracts.ChatAssistant, Content: "It was sunny yesterday."},
		{Role: contracts.ChatUser, Content: "what time is it?"},
	}
}

// forever answers every job with one more get_time call and its usage,
// as the model of issue 17 did; past a hundred jobs it fails, so that a
// loop without a cap ends the test rather than hangs it.
type forever struct{ jobs int }

func (f *forever) complete(contracts.Job) (contracts.Completion, error) {
	f.jobs++
	if f.jobs > 100 {
		return contracts.Completion{}, errors.New("asked more than a hundred times")
	}
	c := calls(call(fmt.Sprint("t", f.jobs), "get_time", `{}`))
	c.Usage = contracts.Usage{PromptTokens: 100, CompletionTokens: 5}
	return c, nil
}

// TestLoopStopsAtTheModelCallCap: a model that only ever calls a tool is
// asked exactly the cap's number of times, and the reply says what
// happened in this turn, never an earlier answer from the history.
func TestLoopStopsAtTheModelCallCap(t *testing.T) {
	model := &forever{}
	l := newLoop(t, &scripted{})
	l.complete = model.complete
	l.maxCalls = 4
	end := l.run(context.Background(), withHistory())
	if end.Err != nil || model.jobs != 4 || end.ModelCalls != 4 || end.Stop != contracts.StopModelCallCap {
		t.Fatalf("run = %+v after %d jobs, want 4 model calls and the cap's stop", end, model.jobs)
	}
	want := "I stopped after 4 model calls without an answer: I kept calling tools (get_time ×4). Ask me again, perhaps in smaller steps."
	if end.Text != want {
		t.Errorf("reply = %q, want %q", end.Text, want)
	}
	if end.Usage.Total() != (contracts.Usage{PromptTokens: 400, CompletionTokens: 20}) {
		t.Errorf("usage = %+v, want the four calls' summed", end.Usage)
	}
}

// TestLoopParksOnTheLastModelCall: the cap does not drop the last
// answer's RISKY call; parking needs no further model call of this turn.
func TestLoopParksOnTheLastModelCall(t *testing.T) {
	s := &scripted{answers: []contracts.Completion{
		calls(call("1", "get_time", `{}`)),
		calls(call("2", "write_file", `{"path":"todo.txt","content":"milk"}`)),
	}}
	l := newLoop(t, s)
	l.maxCalls = 2
	if end := l.run(context.Background(), start()); end.Park == nil || end.Stop != contracts.StopParked || len(s.jobs) != 2 {
		t.Fatalf("run = %+v after %d jobs, want the write parked on the second and last call", end, len(s.jobs))
	}
}

// TestLoopStopsOnARepeatedFailure: the same call failing the same way
// again, after the model saw it fail, ends the loop at once, with the call
// and its error named; another call failing, or the same call asked for
// twice in one answer (before the model saw either fail), does not.
func TestLoopStopsOnARepeatedFailure(t *testing.T) {
	missing := call("", "read_file", `{"path":"missing.txt"}`)
	with := func(id string, c contracts.ToolCall) contracts.ToolCall { c.ID = id; return c }
	t.Run("the same call, the same error", func(t *testing.T) {
		s := &scripted{answers: []contracts.Completion{
			calls(with("1", missing)),
			calls(call("2", "get_time", `{}`), with("3", missing), call("4", "get_time", `{}`)),
			text("unused"),
		}}
		end := newLoop(t, s).run(context.Background(), withHistory())
		if end.Err != nil || len(s.jobs) != 2 || end.Stop != contracts.StopRepeatedFailure || end.Executions != 3 {
			t.Fatalf("run = %+v after %d jobs, want the loop stopped at the second failure, before the last get_time", end, len(s.jobs))
		}
		for _, want := range []string{"I stopped: read_file {\"path\":\"missing.txt\"} failed twice in the same way", "no such file"} {
			if !strings.Contains(end.Text, want) {
				t.Errorf("reply = %q, want it to say %q", end.Text, want)
			}
		}
		if strings.Contains(end.Text, "sunny") {
			t.Errorf("reply = %q, taken from the history", end.Text)
		}
	})
	t.Run("different calls, or one answer's", func(t *testing.T) {
		s := &scripted{answers: []contracts.Completion{
			calls(with("1", missing), call("2", "read_file", `{"path":"gone.txt"}`), call("3", "read_file", `{"path": 7}`), with("4", missing)),
			calls(call("5", "read_file", `{"path":"missing.txt" }`)),
			text("I cannot find it."),
		}}
		end := newLoop(t, s).run(context.Background(), start())
		if end.Text != "I cannot find it." || end.Stop != contracts.StopAnswer {
			t.Fatalf("run = %+v, want the model's answer", end)
		}
	})
}

// TestLoopDeadlineBestEffortIsThisTurnsOnly: out of time, the reply is
// what the model said in this turn, or else an admission; never the
// history's words, nor those of the conversation a resumed turn takes up.
func TestLoopDeadlineBestEffortIsThisTurnsOnly(t *testing.T) {
	parked := []contracts.Message{
		{Role: contracts.ChatSystem, Content: "be a pet"},
		{Role: contracts.ChatUser, Content: "note milk"},
		{Role: contracts.ChatAssistant, Content: "I'll write it down.", ToolCalls: []contracts.ToolCall{call("w1", "write_file", `{"path":"todo.txt","content":"milk"}`)}},
		{Role: contracts.ChatTool, ToolCallID: "w1", Content: "wrote 4 bytes to todo.txt"},
	}
	for name, messages := range map[string][]contracts.Message{"history": withHistory(), "resumed": parked} {
		t.Run(name, func(t *testing.T) {
			s := &scripted{answers: []contracts.Completion{calls(call("1", "get_time", `{}`))}}
			l := newLoop(t, s)
			fake := clock.NewFake(l.now())
			l.now = fake.Now
			l.complete = func(job contracts.Job) (contracts.Completion, error) {
				fake.Advance(24 * time.Second)
				return s.complete(job)
			}
			end := l.run(context.Background(), messages)
			if end.Stop != contracts.StopDeadline || !strings.HasPrefix(end.Text, "I ran out of time") {
				t.Fatalf("run = %+v, want the admission: this turn said nothing", end)
			}
		})
	}
}

func TestLoopParksTheFirstRiskyCall(t *testing.T) {
	s := &scripted{answers: []contracts.Completion{
		calls(call("1", "get_time", `{}`), call("2", "write_file", `{"path":"todo.txt","content":"milk"}`), call("3", "read_file", `{"path":"notes.txt"}`)),
	}}
	end := newLoop(t, s).run(context.Background(), start())
	if end.Park == nil || end.Stop != contracts.StopParked {
		t.Fatalf("run = %+v, want the write parked", end)
	}
	p := end.Park
	if p.Call.ID != "2" || p.Call.Name != "write_file" || p.Summary == "" {
		t.Errorf("parked call = %+v, summary %q", p.Call, p.Summary)
	}
	asked := p.Messages[len(p.Messages)-2]
	if len(asked.ToolCalls) != 2 || asked.ToolCalls[1].ID != "2" {
		t.Errorf("the parked assistant message asks %+v, want the FREE prefix and the risky call only", asked.ToolCalls)
	}
	answered(t, p.Messages, "2")
	if end.Executions != 1 {
		t.Errorf("%d executions before parking, want the one FREE call", end.Executions)
	}
}

func TestLoopWithoutApprovalsRefusesRiskyCalls(t *testing.T) {
	s := &scripted{answers: []contracts.Completion{
		calls(call("1", "run_shell", `{"command":"rm -rf notes.txt"}`)),
		text("I won't then."),
	}}
	l := newLoop(t, s)
	l.canPark = false
	end := l.run(context.Background(), start())
	if end.Park != nil || end.Text != "I won't then." {
		t.Fatalf("run = %+v, want the call refused and the turn to go on", end)
	}
	msgs := s.jobs[1].Messages
	answered(t, msgs, "")
	if last := msgs[len(msgs)-1]; !strings.Contains(last.Content, "owner's approval") {
		t.Errorf("risky call answered %q", last.Content)
	}
}

func TestLoopSendsSandboxedCallsToCore(t *testing.T) {
	s := &scripted{answers: []contracts.Completion{
		calls(call("1", "run_shell", `{"command":"ls"}`), call("2", "run_shell", `{"command":"cat missing.txt"}`)),
		text("done"),
	}}
	l := newLoop(t, s)
	var asked []string
	l.exec = func(c contracts.ToolCall) (string, error) {
		asked = append(asked, c.ID)
		if c.ID == "2" {
			return "", errors.New("exit 1: cat: missing.txt: No such file")
		}
		return "exit 0\nnotes.txt\n", nil
	}
	end := l.run(context.Background(), start())
	if end.Text != "done" || strings.Join(asked, ",") != "1,2" || end.Executions != 2 {
		t.Fatalf("run = %+v, core asked for %q", end, asked)
	}
	msgs := s.jobs[1].Messages
	if got := msgs[len(msgs)-2].Content; !strings.Contains(got, "notes.txt") {
		t.Errorf("ls answered %q", got)
	}
	if got := msgs[len(msgs)-1].Content; !strings.HasPrefix(got, "error: exit 1") {
		t.Errorf("failing cat answered %q", got)
	}
}

// TestLoopTellsCoreOfTheStepsItRuns: a call the worker runs itself is
// announced to core before it runs, for the owner's progress line; one
// core runs (exec), one refused and one parked are not, since core sees
// the first and nothing runs of the others.
func TestLoopTellsCoreOfTheStepsItRuns(t *testing.T) {
	s := &scripted{answers: []contracts.Completion{
		calls(call("1", "read_file", `{"path":"notes.txt"}`), call("2", "run_shell", `{"command":"ls"}`), call("3", "read_file", `{"path":"../x"}`)),
		calls(call("4", "write_file", `{"path":"a.txt","content":"x"}`)),
	}}
	l := newLoop(t, s)
	var steps, order []string
	l.step = func(c contracts.ToolCall) { steps = append(steps, c.ID); order = append(order, "step "+c.ID) }
	l.exec = func(c contracts.ToolCall) (string, error) { order = append(order, "exec "+c.ID); return "exit 0", nil }
	end := l.run(context.Background(), start())
	if end.Park == nil {
		t.Fatalf("run = %+v, want it parked on write_file", end)
	}
	if got := strings.Join(steps, ","); got != "1" {
		t.Errorf("steps told = %q, want %q (only the call run in the worker)", got, "1")
	}
	if got := strings.Join(order, ", "); got != "step 1, exec 2" {
		t.Errorf("order = %q, want the step told before the next call", got)
	}
}

// TestLoopCountsTokensPerProvider: a turn whose calls the fallback chain
// answered from two providers keeps each provider's tokens apart, in the
// order they first answered, and a provider that did not say what an
// answer cost is listed all the same.
func TestLoopCountsTokensPerProvider(t *testing.T) {
	first := calls(call("1", "get_time", `{}`))
	first.Provider, first.Usage = "primary", contracts.Usage{PromptTokens: 100, CompletionTokens: 5}
	second := calls(call("2", "get_time", `{}`))
	second.Provider, second.Usage = "backup", contracts.Usage{PromptTokens: 120, CompletionTokens: 7}
	third := calls(call("3", "get_time", `{}`))
	third.Provider, third.Usage = "primary", contracts.Usage{PromptTokens: 140, CompletionTokens: 9}
	last := text("It is nine.")
	last.Provider = "quiet" // says nothing of its usage
	end := newLoop(t, &scripted{answers: []contracts.Completion{first, second, third, last}}).run(context.Background(), start())
	want := contracts.UsageByProvider{
		{Provider: "primary", Usage: contracts.Usage{PromptTokens: 240, CompletionTokens: 14}},
		{Provider: "backup", Usage: contracts.Usage{PromptTokens: 120, CompletionTokens: 7}},
		{Provider: "quiet"},
	}
	if end.Err != nil || !slices.Equal(end.Usage, want) {
		t.Fatalf("run = %+v, want the usage %+v", end, want)
	}
	if total := end.Usage.Total(); total != (contracts.Usage{PromptTokens: 360, CompletionTokens: 21}) {
		t.Errorf("Total() = %+v, want 360+21", total)
	}
}

func TestLoopModelFailure(t *testing.T) {
	s := &scripted{answers: []contracts.Completion{{OK: false, Error: "every provider failed"}}}
	if end := newLoop(t, s).run(context.Background(), start()); end.Err == nil || !strings.Contains(end.Err.Error(), "every provider failed") {
		t.Errorf("run = %+v, want the model's failure", end)
	}
}

// TestServeParksAndResumes: with approvals, a RISKY call parks the turn
// as a RequestToolApproval op; the resumed turn takes the conversation up
// from the parked messages and the owner's answer.
func TestServeParksAndResumes(t *testing.T) {
	layout := statedir.Layout{Root: t.TempDir()}
	if err := os.MkdirAll(layout.Workspace(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(layout.Directive(), []byte("be a pet"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(25 * time.Second)
	write := calls(call("w1", "write_file", `{"path":"todo.txt","content":"milk"}`))
	write.Provider, write.Usage = "primary", contracts.Usage{PromptTokens: 300, CompletionTokens: 12}
	s := &scripted{answers: []contracts.Completion{write}}
	res := serve(context.Background(), layout, contracts.TurnInput{Turn: "t1", Text: "note milk", Deadline: deadline, Approvals: true, MaxModelCalls: 8}, nil, bridge{complete: s.complete})
	if !res.OK || len(res.Ops) != 1 || res.Stop != contracts.StopParked || !slices.Equal(res.Usage, contracts.UsageByProvider{{Provider: "primary", Usage: write.Usage}}) {
		t.Fatalf("serve = %+v, want one op parking the write", res)
	}
	park, ok := res.Ops[0].Body.(contracts.RequestToolApproval)
	if !ok || park.Call.ID != "w1" || !strings.Contains(res.Payload, "write_file") {
		t.Fatalf("op = %#v, payload %q", res.Ops[0].Body, res.Payload)
	}

	s2 := &scripted{answers: []contracts.Completion{text("Noted: milk.")}}
	answer := contracts.Message{Role: contracts.ChatTool, ToolCallID: "w1", Content: "wrote 4 bytes to todo.txt"}
	res = serve(context.Background(), layout, contracts.TurnInput{Turn: "t2", Deadline: deadline, Approvals: true,
		Resume: &contracts.Resume{Messages: park.Messages, Answer: answer}}, nil, bridge{complete: s2.complete})
	if !res.OK || res.Payload != "Noted: milk." || res.Stop != contracts.StopAnswer {
		t.Fatalf("resumed serve = %+v", res)
	}
	sent := s2.jobs[0].Messages
	answered(t, sent, "")
	if last := sent[len(sent)-1]; last.ToolCallID != "w1" || last.Content != answer.Content {
		t.Errorf("the resumed request ends %+v, want the owner's answer to the parked call", last)
	}
}

func TestLoopDoneMeansTheTestsPass(t *testing.T) {
	cases := []struct {
		name    string
		changed bool
		results []bool // what each test run says
		answers []contracts.Completion
		want    string
		runs    int
	}{
		{"nothing changed, no tests run", false, nil, []contracts.Completion{text("done")}, "done", 0},
		{"changed and passing", true, []bool{true}, []contracts.Completion{text("done")}, "done\n\nTests: 3 passed in 0.1s", 1},
		{"changed and failing goes back to the model", true, []bool{false}, []contracts.Completion{text("done"), text("The tests fail: add() is wrong; I need your approval to fix it.")},
			"The tests fail: add() is wrong; I need your approval to fix it.", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &scripted{answers: tc.answers}
			l := newLoop(t, s)
			l.changed = tc.changed
			runs := 0
			l.runTests = func() (bool, string, error) {
				passed := tc.results[runs]
				runs++
				if passed {
					return true, "...\n3 passed in 0.1s\n", nil
				}
				return false, "exit 1\nF\nFAILED test_calc.py::test_add - assert 3 == 4\n1 failed in 0.1s", nil
			}
			end := l.run(context.Background(), start())
			if end.Text != tc.want || runs != tc.runs {
				t.Fatalf("run = %q after %d test runs, want %q after %d", end.Text, runs, tc.want, tc.runs)
			}
			if tc.runs == 1 && !tc.results[0] {
				last := s.jobs[1].Messages[len(s.jobs[1].Messages)-1]
				if last.Role != contracts.ChatUser || !strings.Contains(last.Content, "FAILED test_calc.py::test_add") {
					t.Errorf("the model was told %+v, want the failing test", last)
				}
			}
		})
	}
}

// TestServeEvaluatesInAChildProcess: the turn's python_eval calls run in
// the evaluator the worker was given, one process each, and what stops
// one is an answer to the model like any other failure.
func TestServeEvaluatesInAChildProcess(t *testing.T) {
	layout := statedir.Layout{Root: t.TempDir()}
	if err := os.MkdirAll(layout.Workspace(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(layout.Directive(), []byte("be a pet"), 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A dict key is hashed in one step: 10^12 items, until the kill.
	const forever = `(lambda t: {t: 1})((lambda a: tuple([a] * 1000))((lambda b: tuple([b] * 1000))((lambda c: tuple([c] * 1000))(tuple([0] * 1000)))))`
	s := &scripted{answers: []contracts.Completion{
		calls(call("e1", "python_eval", `{"expression": "6 * 7"}`), call("e2", "python_eval", `{"expression": "`+strings.ReplaceAll(forever, `"`, `\"`)+`"}`)),
		text("42, and the other one was too much."),
	}}
	deadline := time.Now().Add(25 * time.Second)
	res := serve(context.Background(), layout, contracts.TurnInput{Turn: "t1", Text: "compute", Deadline: deadline, MaxModelCalls: 8}, nil, bridge{complete: s.complete, evaluator: []string{self}})
	if !res.OK || len(s.jobs) != 2 {
		t.Fatalf("serve = %+v after %d jobs, want the final text after 2", res, len(s.jobs))
	}
	answers := map[string]string{}
	for _, m := range s.jobs[1].Messages {
		if m.Role == contracts.ChatTool {
			answers[m.ToolCallID] = m.Content
		}
	}
	if answers["e1"] != "42" {
		t.Errorf("python_eval(6 * 7) answered %q, want 42", answers["e1"])
	}
	if want := "error: python_eval: stopped after 2 s"; !strings.HasPrefix(answers["e2"], want) {
		t.Errorf("python_eval of a hash that never ends answered %q, want %q...", answers["e2"], want)
	}
}

// TestParkedPhotoKeepsOnlyItsPlaceholder: a turn about the owner's photo
// parks on a RISKY call; the model was sent the image, but the parked
// conversation, which core keeps in its database, holds only the text.
func TestParkedPhotoKeepsOnlyItsPlaceholder(t *testing.T) {
	s := &scripted{answers: []contracts.Completion{calls(call("1", "write_file", `{"path":"bird.txt","content":"a robin"}`))}}
	messages := start()
	messages[len(messages)-1] = contracts.Message{Role: contracts.ChatUser, Content: "[photo: note this bird]",
		Images: []contracts.Image{{MIME: "image/jpeg", Data: []byte("jpeg")}}}
	end := newLoop(t, s).run(context.Background(), messages)
	if end.Park == nil {
		t.Fatalf("run = %+v, want the write parked", end)
	}
	if sent := s.jobs[0].Messages; len(sent[len(sent)-1].Images) != 1 {
		t.Errorf("the model was sent %+v, want the photo with the owner's words", sent[len(sent)-1])
	}
	for _, m := range end.Park.Messages {
		if len(m.Images) > 0 {
			t.Errorf("the parked conversation keeps an image in %q", m.Content)
		}
	}
	if !slices.ContainsFunc(end.Park.Messages, func(m contracts.Message) bool { return m.Content == "[photo: note this bird]" }) {
		t.Errorf("the parked conversation lost the photo's placeholder")
	}
}

// TestLoopOffersAHeldToolOnceCalled: a self-coded tool the model knows
// by name alone is called all the same, through core, and from the next
// model call on its definition is offered with the others.
func TestLoopOffersAHeldToolOnceCalled(t *testing.T) {
	s := &scripted{answers: []contracts.Completion{calls(call("1", "greet", `{"name":"owner"}`)), text("done")}}
	l := newLoop(t, s)
	greet := contracts.ToolDefinition{Name: "greet", Description: "Greets.", Tier: contracts.TierFree,
		ParamsSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}
	shout := greet
	shout.Name = "shout"
	l.tools = l.tools.WithSelfCoded([]contracts.ToolDefinition{greet, shout})
	l.offer, l.held = offered(l.tools, true, []string{"greet", "shout"})
	l.exec = func(c contracts.ToolCall) (string, error) { return "exit 0\nhello, owner", nil }
	end := l.run(context.Background(), start())
	if end.Text != "done" || end.Executions != 1 {
		t.Fatalf("run = %+v, want greet run and the answer done", end)
	}
	offeredNames := func(job contracts.Job) []string {
		var out []string
		for _, d := range job.Tools {
			out = append(out, d.Name)
		}
		return out
	}
	for i, want := range []bool{false, true} {
		if got := slices.Contains(offeredNames(s.jobs[i]), "greet"); got != want {
			t.Errorf("model call %d offers greet = %v, want %v", i+1, got, want)
		}
		if slices.Contains(offeredNames(s.jobs[i]), "shout") {
			t.Errorf("model call %d offers shout in full, which was never called", i+1)
		}
	}
}
