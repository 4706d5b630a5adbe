package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/statedir"
	"shelldon/demomodel"
	"shelldon/sandbox/image/imagetest"
	"shelldon/testhost"
)

// TestTrackedCredentialsNeverReachTheModel: the owner's repository
// tracks .env (committed, and a newer key only staged). The attacker who
// writes the model's answers asks for every view of git's that prints
// it — git diff, git show, git log -p --all, the blob by its object name,
// git grep --cached — and gets one git show approved by an owner who
// reads the card; none of what the model is told holds either key, while
// the rest of history reads as it is. What would print objects past the
// masks asks, with a card that says so.
func TestTrackedCredentialsNeverReachTheModel(t *testing.T) {
	imagetest.Image(t)
	const committed, staged = "OPENAI_API_KEY=sk-test-committed-51c0", "OPENAI_API_KEY=sk-test-staged-93ad"
	model := demomodel.New()
	p := newPet(t, model)
	ws := statedir.Layout{Root: p.cfg.StateDir}.Workspace()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testhost.Git(t, ws, "init", "-q", "-b", "main")
	write("app.py", "print('v1')")
	testhost.Git(t, ws, "add", "-A")
	testhost.Git(t, ws, "commit", "-qm", "first")
	write("app.py", "print('v2')")
	write(".env", committed)
	testhost.Git(t, ws, "add", "-A")
	testhost.Git(t, ws, "commit", "-qm", "second, with the key by mistake")
	write(".env", staged)
	testhost.Git(t, ws, "add", ".env")
	blob := testhost.Git(t, ws, "rev-parse", "HEAD:.env")

	shell := func(id, command string) contracts.ToolCall {
		return contracts.ToolCall{ID: id, Name: "run_shell", Args: `{"command": "` + command + `"}`}
	}
	model.Enqueue(
		demomodel.Step{ToolCalls: []contracts.ToolCall{
			shell("c1", "git diff --cached"),
			shell("c2", "git show HEAD"),
			shell("c3", "git log -p --all"),
			shell("c4", "git cat-file -p "+blob),
			shell("c5", "git grep --cached OPENAI"),
			shell("c6", "git diff"),
		}},
		demomodel.Step{Text: "Looked."},
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "g1", Name: "git", Args: `{"args": "show HEAD"}`}}},
		demomodel.Step{Text: "Approved and shown."},
		demomodel.Step{ToolCalls: []contracts.ToolCall{shell("b1", "git cat-file --batch-all-objects --batch")}},
		demomodel.Step{Text: "All right."},
	)

	p.say("what changed in the repository?")
	p.replyWith("Looked.", 60*time.Second)
	answers := map[string]string{}
	for _, m := range p.waitRequests(2)[1].Messages {
		if m.Role == contracts.ChatTool {
			answers[m.ToolCallID] = m.Content
		}
	}
	for _, id := range []string{"c1", "c2", "c3", "c4", "c5", "c6"} {
		// git grep finds nothing in the masked index: its exit 1.
		if a := answers[id]; !strings.HasPrefix(a, "exit 0") && !(id == "c5" && strings.HasPrefix(a, "error: exit 1")) {
			t.Errorf("%s ran as %q, want it run at once", id, a)
		}
	}
	if !strings.Contains(answers["c3"], "+print('v2')") || !strings.Contains(answers["c3"], "masked by shelldon") {
		t.Errorf("git log -p --all showed %q, want app.py's history and .env masked", answers["c3"])
	}

	p.waitTurns(1)
	p.say("show me the last commit")
	req := p.approval(30 * time.Second)
	p.waitTurns(2)
	p.decide(req.Turn, true)
	p.replyWith("Approved and shown.", 60*time.Second)

	p.waitTurns(3)
	p.say("print every object")
	req = p.approval(30 * time.Second)
	if !strings.Contains(req.Note, "turns the sandbox's masks off") {
		t.Errorf("the card for cat-file --batch-all-objects --batch says %q, not why it asks", req.Note)
	}
	p.waitTurns(4)
	p.decide(req.Turn, false)
	p.replyWith("All right.", 30*time.Second)

	told := 0
	for _, r := range p.model.Requests() {
		for _, m := range r.Messages {
			if m.Role == contracts.ChatTool {
				told++
			}
			if strings.Contains(m.Content, "sk-test-") {
				t.Errorf("the model was told a key (%s message %q): %q", m.Role, m.ToolCallID, m.Content)
			}
		}
	}
	if told < 7 {
		t.Errorf("the model was told %d tool answers, want the six views and the approved show", told)
	}
}
