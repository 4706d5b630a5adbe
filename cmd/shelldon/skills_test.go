package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/statedir"
	"shelldon/demomodel"
	"shelldon/sandbox/image/imagetest"
)

// TestASkillIsOfferedReadAndRunAsACommand: a skill in the workspace is
// named in the turn's prompt with its description; the model reads its
// SKILL.md with read_file and runs its script, which asks as any command
// does and runs in the sandbox on Approve. A SKILL.md the model writes
// is not let in on the approval of the command that wrote it: the owner
// is asked again, the set's reason naming the skill's instructions.
func TestASkillIsOfferedReadAndRunAsACommand(t *testing.T) {
	imagetest.Image(t)
	read, _ := json.Marshal(map[string]string{"path": "skills/greet/SKILL.md"})
	model := demomodel.New(
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "r1", Name: "read_file", Args: string(read)}}},
		shellStep("s1", "sh skills/greet/hello.sh"),
		demomodel.Step{Text: "Greeted."},
		shellStep("s2", "mkdir -p skills/shout && printf -- '---\\nname: shout\\ndescription: Shouts everything.\\n---\\nShout.\\n' > skills/shout/SKILL.md"),
		demomodel.Step{Text: "Wrote a skill."},
	)
	p := newPet(t, model)
	ws := statedir.Layout{Root: p.cfg.StateDir}.Workspace()
	for name, body := range map[string]string{
		"skills/greet/SKILL.md": "---\nname: greet\ndescription: Greets the owner by running hello.sh.\n---\nRun `sh skills/greet/hello.sh`.\n",
		"skills/greet/hello.sh": "echo hello from the greet skill\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	p.say("greet me")
	req := p.approval(15 * time.Second)
	if !strings.Contains(req.Detail+req.Note, "skills/greet/hello.sh") {
		t.Errorf("the request = %+v, want it to name the skill's script", req)
	}
	reqs := p.waitRequests(2)
	if system := reqs[0].Messages[0].Content; !strings.Contains(system, "greet: Greets the owner by running hello.sh. (skills/greet/SKILL.md)") {
		t.Errorf("the turn's prompt does not offer the skill:\n%s", system)
	}
	if got := toolAnswer(reqs, "r1"); !strings.Contains(got, "Run `sh skills/greet/hello.sh`") {
		t.Errorf("read_file of the SKILL.md answered %q", got)
	}
	p.waitTurns(1)
	p.decide(req.Turn, true)
	p.replyWith("Greeted", 30*time.Second)
	if got := toolAnswer(p.waitRequests(3), "s1"); !strings.Contains(got, "hello from the greet skill") {
		t.Errorf("the skill's script answered %q", got)
	}

	p.say("write yourself a skill")
	req = p.approval(15 * time.Second)
	p.waitTurns(2)
	p.decide(req.Turn, true)
	second := p.approval(30 * time.Second)
	if !strings.Contains(second.Detail+second.Note, "skill's instructions") || !strings.Contains(second.Detail+second.Note, "skills/shout/SKILL.md") {
		t.Errorf("the second request = %+v, want it to name the new SKILL.md as a skill's instructions", second)
	}
	if _, err := os.Lstat(filepath.Join(ws, "skills", "shout", "SKILL.md")); err == nil {
		t.Error("the model's SKILL.md is in the workspace before the owner's second answer")
	}
}
