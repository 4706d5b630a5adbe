package main

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"shelldon/contracts"
	"shelldon/daemon/statedir"
	"shelldon/demomodel"
	"shelldon/sandbox/image/imagetest"
)

func writeCall(id, path, content string) demomodel.Step {
	return demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: id, Name: "write_file",
		Args: `{"path":"` + path + `","content":"` + content + `"}`}}}
}

// toolAnswer is the content of the tool message answering call id in the
// newest request the model got.
func toolAnswer(reqs []demomodel.Request, id string) string {
	msgs := reqs[len(reqs)-1].Messages
	for _, m := range msgs {
		if m.Role == contracts.ChatTool && m.ToolCallID == id {
			return m.Content
		}
	}
	return ""
}

// TestApprovals walks the owner's side of a RISKY call: the turn parks
// and the owner sees exactly what will run; Approve carries out core's
// own copy and the conversation goes on in a fresh worker; Deny answers
// "denied by owner"; a tap during a turn is carried out when the turn
// ends; a tap for nothing parked, or a second tap, does nothing; and a
// parked call survives a core restart.
func TestApprovals(t *testing.T) {
	model := demomodel.New(
		writeCall("w1", "todo.txt", "milk"), demomodel.Step{Text: "Saved your list."},
		writeCall("w2", "diary.txt", "nope"), demomodel.Step{Text: "All right, I won't."},
		writeCall("w3", "later.txt", "eggs"), demomodel.Step{Text: "busy turn done", Delay: 1500 * time.Millisecond},
		demomodel.Step{Text: "Saved the eggs."},
		writeCall("w4", "restart.txt", "ham"), demomodel.Step{Text: "Saved after the restart."},
	)
	p := newPet(t, model)
	ws := statedir.Layout{Root: p.cfg.StateDir}.Workspace()

	// Approve.
	p.say("put milk on my list")
	if r := p.reply(15 * time.Second); !strings.Contains(r.Text, "write_file") {
		t.Fatalf("parking reply = %+v, want the pet to ask", r)
	}
	req := p.approval(5 * time.Second)
	if req.Tool != "write_file" || req.Detail != "write todo.txt:\nmilk" || !strings.Contains(req.Note, "writes 4 bytes to todo.txt") {
		t.Fatalf("approval request = %+v, want the exact write and its note", req)
	}
	if _, err := os.Stat(filepath.Join(ws, "todo.txt")); err == nil {
		t.Fatal("todo.txt exists before the owner decided")
	}
	p.waitTurns(1) // the owner taps once the parking turn is over
	p.decide(req.Turn, true)
	p.settled(req.Turn, contracts.ApprovalApproved)
	if r := p.reply(15 * time.Second); r.Text != "Saved your list." {
		t.Fatalf("reply after approve = %+v", r)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "todo.txt")); err != nil || string(b) != "milk" {
		t.Errorf("todo.txt = %q, %v; want the approved content", b, err)
	}
	if got := toolAnswer(p.waitRequests(2), "w1"); got != "wrote 4 bytes to todo.txt" {
		t.Errorf("the model was told %q about its write", got)
	}
	p.waitTurns(2)
	p.decide(req.Turn, true) // a second tap
	if r := p.reply(10 * time.Second); !strings.Contains(r.Text, "settled already (approved)") {
		t.Errorf("second tap answered %+v", r)
	}
	p.settled(req.Turn, contracts.ApprovalApproved) // its card keeps its outcome

	// Deny.
	p.say("write a secret")
	p.reply(15 * time.Second)
	req = p.approval(5 * time.Second)
	p.waitTurns(3)
	p.decide(req.Turn, false)
	p.settled(req.Turn, contracts.ApprovalDenied)
	if r := p.reply(15 * time.Second); r.Text != "All right, I won't." {
		t.Fatalf("reply after deny = %+v", r)
	}
	if got := toolAnswer(p.waitRequests(4), "w2"); got != "denied by owner" {
		t.Errorf("the model was told %q about the denied write", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "diary.txt")); err == nil {
		t.Error("diary.txt was written although the owner said no")
	}

	// A tap while a turn runs is held, and carried out when the turn
	// ends: the owner need not tap again.
	p.say("eggs later")
	p.reply(15 * time.Second)
	req = p.approval(5 * time.Second)
	p.waitTurns(5)
	p.say("are you busy?") // a slow turn
	p.waitRequests(6)
	p.decide(req.Turn, true)
	if r := p.reply(10 * time.Second); !strings.Contains(r.Text, "as soon as I finish") {
		t.Fatalf("tap during a turn answered %+v", r)
	}
	if r := p.reply(15 * time.Second); r.Text != "busy turn done" {
		t.Fatalf("the busy turn answered %+v", r)
	}
	if r := p.reply(15 * time.Second); r.Text != "Saved the eggs." {
		t.Fatalf("the held decision's turn answered %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "later.txt")); string(b) != "eggs" {
		t.Errorf("later.txt = %q", b)
	}

	// A parked call survives a core restart.
	p.say("ham, and restart")
	p.reply(15 * time.Second)
	req = p.approval(5 * time.Second)
	p.waitTurns(8)
	p.stopCore()
	p.startCore()
	p.waitJoin(15 * time.Second)
	p.decide(req.Turn, true)
	if r := p.reply(15 * time.Second); r.Text != "Saved after the restart." {
		t.Fatalf("reply after approving across a restart = %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "restart.txt")); string(b) != "ham" {
		t.Errorf("restart.txt = %q", b)
	}

	// A tap for a turn that never parked.
	p.waitTurns(9)
	p.decide("0000000000000000", true)
	if r := p.reply(10 * time.Second); !strings.Contains(r.Text, "Nothing is waiting") {
		t.Errorf("a tap for nothing answered %+v", r)
	}
}

// TestApprovedCommandRunsCaptured: an approved shell command runs in the
// sandbox over a captured view, and what it changed is applied to the
// workspace and told to the model, file by file.
func TestApprovedCommandRunsCaptured(t *testing.T) {
	imagetest.Image(t)
	model := demomodel.New(
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "s1", Name: "run_shell", Args: `{"command": "echo hello > greeting.txt && echo done"}`}}},
		demomodel.Step{Text: "Greeting written."},
	)
	p := newPet(t, model)
	ws := statedir.Layout{Root: p.cfg.StateDir}.Workspace()
	p.say("write a greeting file")
	p.reply(15 * time.Second)
	req := p.approval(5 * time.Second)
	if req.Tool != "run_shell" || req.Detail != "echo hello > greeting.txt && echo done" {
		t.Fatalf("approval request = %+v", req)
	}
	p.waitTurns(1)
	p.decide(req.Turn, true)
	// The owner sees exactly what the command changed, then the answer.
	if r := p.reply(30 * time.Second); r.Text != "Applied to the workspace, from run_shell:\n  created  greeting.txt (6 bytes)" {
		t.Fatalf("first reply after approve = %q, want the list of what was applied", r.Text)
	}
	if r := p.reply(30 * time.Second); r.Text != "Greeting written." {
		t.Fatalf("reply after approve = %+v", r)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "greeting.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("greeting.txt = %q, %v", b, err)
	}
	got := toolAnswer(p.waitRequests(2), "s1")
	if !strings.HasPrefix(got, "exit 0\ndone") || !strings.Contains(got, "created greeting.txt") {
		t.Errorf("the model was told %q", got)
	}
}

// shellStep is a model step that runs one shell command.
func shellStep(id, command string) demomodel.Step {
	args, _ := json.Marshal(map[string]string{"command": command})
	return demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: id, Name: "run_shell", Args: string(args)}}}
}

// TestAChangeSetsVolumeIsBounded: one approved command that makes 20,000
// files brings none of them in — the set is refused whole, the model
// told why — and the owner reads it in a few lines: how many, where,
// the first paths (before, all 20,000 were applied, over a minute and a
// half, and the owner's listing ran to 717 KB, some 175 Telegram
// messages). A long set within the bound is applied, its listing summed
// up the same way, and the whole list comes as a file.
func TestAChangeSetsVolumeIsBounded(t *testing.T) {
	imagetest.Image(t)
	model := demomodel.New(
		shellStep("s1", "mkdir many && cd many && seq 20000 | xargs touch"),
		demomodel.Step{Text: "Made them."},
		shellStep("s2", "echo hi > top.txt && mkdir some && cd some && seq 300 | xargs touch"),
		demomodel.Step{Text: "Made some."},
	)
	p := newPet(t, model)
	ws := statedir.Layout{Root: p.cfg.StateDir}.Workspace()
	const maxListing = 4 << 10

	p.sayAndApprove("make many files", "run_shell")
	started := time.Now()
	told := p.reply(5 * time.Minute)
	t.Logf("20,000 files: told the owner %v after the tap, %d bytes", time.Since(started).Round(time.Millisecond), len(told.Text))
	if len(told.Text) > maxListing || !strings.Contains(told.Text, "nothing") || !strings.Contains(told.Text, "20001 paths") || !strings.Contains(told.Text, "many/") {
		t.Errorf("the owner was told (%d bytes) %.600q…, want in a few lines that nothing of the 20001 paths was applied, and where they were", len(told.Text), told.Text)
	}
	if _, err := os.Lstat(filepath.Join(ws, "many")); err == nil {
		t.Error("the 20,000 files are in the workspace")
	}
	if got := toolAnswer(p.waitRequests(2), "s1"); !strings.Contains(got, "none applied") {
		t.Errorf("the model was told %.300q, want that none of it was applied and why", got)
	}

	p.replyWith("Made them.", 15*time.Second)
	p.sayAndApprove("make some files", "run_shell")
	applied := p.reply(time.Minute)
	if len(applied.Text) > maxListing || !strings.Contains(applied.Text, "302 paths") || !strings.Contains(applied.Text, "some/") {
		t.Errorf("the owner was told (%d bytes) %.600q…, want the 302 paths summed up", len(applied.Text), applied.Text)
	}
	if list := string(applied.File); !strings.Contains(list, "some/300") || !strings.Contains(list, "top.txt") || !strings.HasSuffix(applied.FileName, ".txt") {
		t.Errorf("the whole list came as %q (%d bytes), want every path", applied.FileName, len(list))
	}
	if _, err := os.Lstat(filepath.Join(ws, "some", "300")); err != nil {
		t.Errorf("some/300 after the owner's approval: %v", err)
	}
}

// TestApprovedRunLogsOnceEachItsTurnAndActor: the log lines of an
// approved command, the reading of the workspace's tests around it
// included, name the turn that asked for it, and each line one actor.
func TestApprovedRunLogsOnceEachItsTurnAndActor(t *testing.T) {
	imagetest.Image(t)
	model := demomodel.New(
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "s1", Name: "run_shell", Args: `{"command": "echo hello > greeting.txt"}`}}},
		demomodel.Step{Text: "Greeting written."},
	)
	p := newPet(t, model)
	ws := statedir.Layout{Root: p.cfg.StateDir}.Workspace()
	if err := os.WriteFile(filepath.Join(ws, "test_greeting.py"), []byte("def test_nothing():\n    pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.say("write a greeting file")
	p.reply(15 * time.Second)
	req := p.approval(5 * time.Second)
	p.waitTurns(1)
	p.decide(req.Turn, true)
	p.reply(30 * time.Second)
	if r := p.reply(30 * time.Second); !strings.HasPrefix(r.Text, "Greeting written.") {
		t.Fatalf("reply after approve = %+v", r)
	}
	var runs int
	for _, line := range strings.Split(p.logs.String(), "\n") {
		if n := strings.Count(line, " actor="); n > 1 {
			t.Errorf("a log line names %d actors: %s", n, line)
		}
		if strings.Contains(line, `turn=""`) {
			t.Errorf("a log line names an empty turn: %s", line)
		}
		if strings.Contains(line, "sandboxed command") && strings.Contains(line, "turn="+req.Turn+" ") {
			runs++
		}
	}
	if runs != 1 { // the command alone: it left the tests as they were, so the guard read them on the host
		t.Errorf("%d sandboxed runs logged for turn %s, want 1: the command, which left the tests alone:\n%s", runs, req.Turn, p.logs.String())
	}
}

// TestExpiredAndMalformedDecisions: a tap on a request past its time does
// nothing and says so; a decision whose answer is not a plain yes counts
// as no.
func TestExpiredAndMalformedDecisions(t *testing.T) {
	model := demomodel.New(
		writeCall("e1", "old.txt", "stale"),
		writeCall("m1", "odd.txt", "maybe"), demomodel.Step{Text: "Understood, not writing it."},
	)
	p := newPet(t, model)
	ws := statedir.Layout{Root: p.cfg.StateDir}.Workspace()

	p.say("write old")
	p.reply(15 * time.Second)
	req := p.approval(5 * time.Second)
	p.waitTurns(1)
	db := p.database(t)
	if _, err := db.Exec(`UPDATE pending_approvals SET expires_at = 0 WHERE turn = ?`, req.Turn); err != nil {
		t.Fatal(err)
	}
	p.decide(req.Turn, true)
	if r := p.reply(10 * time.Second); !strings.Contains(r.Text, "expired") {
		t.Fatalf("a tap on an expired request answered %+v", r)
	}
	p.settled(req.Turn, contracts.ApprovalExpired)
	if _, err := os.Stat(filepath.Join(ws, "old.txt")); err == nil {
		t.Error("an expired request was carried out")
	}

	p.say("write odd")
	p.reply(15 * time.Second)
	req = p.approval(5 * time.Second)
	p.waitTurns(2)
	env, err := contracts.NewEnvelope(contracts.KindDecision, "", map[string]any{"turn": req.Turn, "approve": "maybe", "chat": "owner"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.transport.Send(env); err != nil {
		t.Fatal(err)
	}
	if r := p.reply(15 * time.Second); r.Text != "Understood, not writing it." {
		t.Fatalf("reply after a malformed decision = %+v", r)
	}
	if got := toolAnswer(p.waitRequests(3), "m1"); got != "denied by owner" {
		t.Errorf("a malformed decision told the model %q, want a denial", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "odd.txt")); err == nil {
		t.Error("a malformed decision was taken as a yes")
	}
}

// TestDoneMeansTheTestsPass: after an approved change, the model's answer
// is held against the workspace's tests (pytest in the sandbox, on a
// scratch view): a failure goes back to the model in the same turn, and
// the final reply says how the tests went.
func TestDoneMeansTheTestsPass(t *testing.T) {
	imagetest.Image(t)
	model := demomodel.New(
		writeCall("w1", "calc.py", `def add(a, b):\n    return a - b\n`),
		demomodel.Step{Text: "add() is written."},
		demomodel.Step{Text: "Sorry, add() is wrong; may I fix it?"},
	)
	p := newPet(t, model)
	ws := statedir.Layout{Root: p.cfg.StateDir}.Workspace()
	test := "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"
	if err := os.WriteFile(filepath.Join(ws, "test_calc.py"), []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	p.say("write add() for the test")
	p.reply(15 * time.Second)
	req := p.approval(5 * time.Second)
	p.waitTurns(1)
	p.decide(req.Turn, true)
	if r := p.reply(30 * time.Second); r.Text != "Sorry, add() is wrong; may I fix it?" {
		t.Fatalf("reply = %+v, want the model's answer after seeing the failing test", r)
	}
	reqs := p.waitRequests(3)
	told := reqs[2].Messages[len(reqs[2].Messages)-1]
	if told.Role != contracts.ChatUser || !strings.Contains(told.Content, "1 failed") {
		t.Errorf("after its first answer the model was told %+v, want the failing pytest run", told)
	}
}

// TestExistingTestsAreReadOnly: an approved write that weakens an
// existing test is put back, and the model is told why; one that only
// adds a test stays.
func TestExistingTestsAreReadOnly(t *testing.T) {
	imagetest.Image(t)
	weakened := `def test_add():\n    assert True\n`
	added := `def test_add():\n    assert 1 + 2 == 3  # reformatted comment\n\ndef test_more():\n    assert 2 + 2 == 4\n`
	model := demomodel.New(
		writeCall("w1", "test_calc.py", weakened), demomodel.Step{Text: "Made the test pass."},
		writeCall("w2", "test_calc.py", added), demomodel.Step{Text: "Added a test."},
	)
	p := newPet(t, model)
	ws := statedir.Layout{Root: p.cfg.StateDir}.Workspace()
	original := "def test_add():\n    assert 1 + 2 == 3\n"
	if err := os.WriteFile(filepath.Join(ws, "test_calc.py"), []byte(original), 0o644); err != nil {
		t.Fatal(err)
	}

	p.say("make the tests pass")
	p.reply(15 * time.Second)
	req := p.approval(5 * time.Second)
	p.waitTurns(1)
	p.decide(req.Turn, true)
	p.reply(30 * time.Second)
	if b, _ := os.ReadFile(filepath.Join(ws, "test_calc.py")); string(b) != original {
		t.Errorf("test_calc.py after a weakening write = %q, want it put back", b)
	}
	if got := toolAnswer(p.waitRequests(2), "w1"); !strings.Contains(got, "put test_calc.py back") || !strings.Contains(got, "test_add (changed)") {
		t.Errorf("the model was told %q, want why its test was put back", got)
	}

	p.say("add a test")
	p.reply(15 * time.Second)
	req = p.approval(5 * time.Second)
	p.waitTurns(3)
	p.decide(req.Turn, true)
	p.reply(30 * time.Second)
	if b, _ := os.ReadFile(filepath.Join(ws, "test_calc.py")); !strings.Contains(string(b), "test_more") {
		t.Errorf("test_calc.py after an added test = %q, want the addition kept", b)
	}
}

// TestWorkspaceModulesCannotForgeTheChecks: a module in the workspace
// named like one Python's own modules (ast.py, written by an earlier
// approved write) does not stand in for it in shelldon's checks: the
// read-only-tests guard still reads the tests' syntax (before, the forger
// told it no test parsed, and a weakened test stayed), and the done-check
// still runs pytest (before, the forger printed "1 passed").
func TestWorkspaceModulesCannotForgeTheChecks(t *testing.T) {
	imagetest.Image(t)
	model := demomodel.New(
		writeCall("w1", "test_calc.py", `def test_add():\n    assert True\n`),
		demomodel.Step{Text: "The tests pass now."},
		demomodel.Step{Text: "Sorry, add() is still wrong."},
	)
	p := newPet(t, model)
	ws := statedir.Layout{Root: p.cfg.StateDir}.Workspace()
	original := "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"
	forger := `import sys, json
if sys.argv[0] == "-c":
    print(json.dumps({p: None for p in sys.argv[1:]}))
else:
    print("1 passed in 0.01s")
sys.exit(0)
`
	for name, body := range map[string]string{"test_calc.py": original, "calc.py": "def add(a, b):\n    return a - b\n", "ast.py": forger} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p.sayAndApprove("make the tests pass", "write_file")
	if r := p.reply(30 * time.Second); r.Text != "Sorry, add() is still wrong." {
		t.Errorf("reply = %+v, want the model's answer after the failing tests", r)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "test_calc.py")); string(b) != original {
		t.Errorf("test_calc.py after a weakening write = %q, want it put back", b)
	}
	reqs := p.waitRequests(3)
	if got := toolAnswer(reqs[:2], "w1"); !strings.Contains(got, "put test_calc.py back") {
		t.Errorf("the model was told %q, want its weakened test put back", got)
	}
	if told := reqs[2].Messages[len(reqs[2].Messages)-1]; !strings.Contains(told.Content, "1 failed") {
		t.Errorf("after its answer the model was told %q, want the failing pytest run", told.Content)
	}
}

// TestApprovalIsReentrant: a resumed conversation may park again, and the
// second approval resumes it once more, with every call answered.
func TestApprovalIsReentrant(t *testing.T) {
	model := demomodel.New(
		writeCall("a1", "one.txt", "1"),
		writeCall("a2", "two.txt", "2"),
		demomodel.Step{Text: "Both written."},
	)
	p := newPet(t, model)
	ws := statedir.Layout{Root: p.cfg.StateDir}.Workspace()
	p.say("write two files")
	p.reply(15 * time.Second)
	for i, want := range []string{"write one.txt:\n1", "write two.txt:\n2"} {
		req := p.approval(15 * time.Second)
		if req.Detail != want {
			t.Fatalf("approval %d = %q, want %q", i+1, req.Detail, want)
		}
		p.waitTurns(i + 1)
		p.decide(req.Turn, true)
		if i == 0 {
			if r := p.reply(15 * time.Second); !strings.Contains(r.Text, "write_file") {
				t.Fatalf("the resumed turn answered %+v, want it to ask again", r)
			}
		}
	}
	if r := p.reply(15 * time.Second); r.Text != "Both written." {
		t.Fatalf("final reply = %+v", r)
	}
	for name, want := range map[string]string{"one.txt": "1", "two.txt": "2"} {
		if b, _ := os.ReadFile(filepath.Join(ws, name)); string(b) != want {
			t.Errorf("%s = %q, want %q", name, b, want)
		}
	}
	last := p.waitRequests(3)[2].Messages
	for _, id := range []string{"a1", "a2"} {
		if toolAnswer([]demomodel.Request{{Messages: last}}, id) == "" {
			t.Errorf("call %s is unanswered in the last request", id)
		}
	}
}

// database opens the pet's state database beside its core, as an
// attacker with the file would: a write waits for core's own to end
// (SQLite's busy timeout) rather than failing because core wrote at that
// moment.
func (p *pet) database(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(p.cfg.StateDir, "state.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
