package main

import (
	"io"
	"net/http"
	"net/http/httptest"
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

// These are a first run of `make run`: the owner types the phrases the
// demo banner lists, and the scripted demo model's persona (no script,
// only its fallback) makes the real tool calls and ops, so core's policy,
// the approvals, the sandbox and the tool gate run as with a real model.

// demoPet is a whole pet on the demo persona alone, and its workspace.
func demoPet(t *testing.T) (*pet, string) {
	t.Helper()
	p := newPet(t, demomodel.New())
	return p, statedir.Layout{Root: p.cfg.StateDir}.Workspace()
}

// idle waits until every turn the pet started has ended (core records a
// turn when it starts), so that a tap is not held for a turn still
// running.
func (p *pet) idle() {
	p.t.Helper()
	p.waitTurns(len(p.turns()))
}

// sayAndApprove types say, waits for the pet to ask about tool, and taps
// Approve once the asking turn is over.
func (p *pet) sayAndApprove(say, tool string) contracts.ApprovalRequest {
	p.t.Helper()
	p.say(say)
	p.reply(30 * time.Second) // the turn that parks asks
	req := p.approval(30 * time.Second)
	if req.Tool != tool {
		p.t.Fatalf("%q asked to use %q (%+v), want %s", say, req.Tool, req, tool)
	}
	p.idle()
	p.decide(req.Turn, true)
	return req
}

func TestDemoRunsAReadOnlyCommandAtOnce(t *testing.T) {
	imagetest.Image(t)
	p, ws := demoPet(t)
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.say("run ls")
	r := p.reply(30 * time.Second)
	if !strings.Contains(r.Text, "run_shell answered:\n```\nexit 0\nhello.txt\n```") || !strings.Contains(r.Text, "scripted demo model") {
		t.Errorf("run ls answered %q, want the sandbox's listing, introduced as the demo", r.Text)
	}
	select {
	case req := <-p.approvals:
		t.Errorf("a read-only command asked the owner: %+v", req)
	default:
	}
}

func TestDemoAsksBeforeACommandThatChanges(t *testing.T) {
	imagetest.Image(t)
	p, ws := demoPet(t)
	req := p.sayAndApprove("run touch hello.txt", "run_shell")
	if req.Detail != "touch hello.txt" {
		t.Errorf("the owner was shown %q, want the command", req.Detail)
	}
	if r := p.replyWith("run_shell answered:", 30*time.Second); !strings.Contains(r.Text, "exit 0") || !strings.Contains(r.Text, "created hello.txt") {
		t.Errorf("the answer after approving is %q, want the exit and what was applied", r.Text)
	}
	if _, err := os.Stat(filepath.Join(ws, "hello.txt")); err != nil {
		t.Errorf("hello.txt after the approved touch: %v", err)
	}
}

// TestDemoWritesAndEditsAFile: write_file and edit_file, each asked and
// approved, change the workspace.
func TestDemoWritesAndEditsAFile(t *testing.T) {
	p, ws := demoPet(t)
	poem := filepath.Join(ws, "poem.txt")
	req := p.sayAndApprove("write a haiku to poem.txt", "write_file")
	if !strings.HasPrefix(req.Detail, "write poem.txt:\n") || !strings.Contains(req.Detail, "moon") {
		t.Errorf("the owner was shown %q, want the path and the haiku", req.Detail)
	}
	if r := p.replyWith("Done:", 30*time.Second); !strings.Contains(r.Text, "to poem.txt") {
		t.Errorf("the answer after approving the write is %q", r.Text)
	}
	if b, err := os.ReadFile(poem); err != nil || !strings.Contains(string(b), "beneath the moon") {
		t.Fatalf("poem.txt = %q, %v; want the haiku", b, err)
	}

	p.sayAndApprove("replace moon with sun in poem.txt", "edit_file")
	p.replyWith("Done:", 30*time.Second)
	if b, err := os.ReadFile(poem); err != nil || !strings.Contains(string(b), "beneath the sun") || strings.Contains(string(b), "moon") {
		t.Errorf("poem.txt after the edit = %q, %v; want moon replaced by sun", b, err)
	}
}

func TestDemoRunsGitAfterAsking(t *testing.T) {
	imagetest.Image(t)
	p, ws := demoPet(t)
	req := p.sayAndApprove("git init", "git")
	if req.Detail != "git init" {
		t.Errorf("the owner was shown %q, want the git command", req.Detail)
	}
	// A new repository holds git's hooks and configuration, which make
	// git run commands: the owner gets a second look before they land.
	second := p.approval(30 * time.Second)
	if second.Tool != "the changes of git" || !strings.Contains(second.Detail, "git hooks, which git runs") || !strings.Contains(second.Detail, "created  .git/config") {
		t.Fatalf("second request = %+v, want the new .git shown to the owner", second)
	}
	if r := p.replyWith("git answered:", 30*time.Second); !strings.Contains(r.Text, "Initialized empty Git repository") || !strings.Contains(r.Text, "needs your own look") {
		t.Errorf("git init answered %q, want its output and word of the second look", r.Text)
	}
	p.idle()
	p.decide(second.Turn, true)
	p.replyWith("", 30*time.Second)
	if _, err := os.Stat(filepath.Join(ws, ".git", "HEAD")); err != nil {
		t.Errorf("the workspace is no repository after both approvals: %v", err)
	}
}

// TestDemoFetchIsAskedThenRefused: http_get of the page the demo model
// serves is asked about like any fetch, and then refused by the network
// policy, on the address dialled (loopback), and the pet says why. The
// page itself is real.
func TestDemoFetchIsAskedThenRefused(t *testing.T) {
	p, _ := demoPet(t)
	req := p.sayAndApprove("fetch the demo page", "http_get")
	if !strings.HasPrefix(req.Detail, "GET http://localhost:") || !strings.HasSuffix(req.Detail, "/demo/page") {
		t.Fatalf("the owner was shown %q, want the demo page's URL", req.Detail)
	}
	r := p.replyWith("network policy refused", 30*time.Second)
	if !strings.Contains(r.Text, "refused it: 127.0.0.1 is loopback.") || strings.Contains(r.Text, "tell them") {
		t.Errorf("the refusal was explained as %q, want the policy's reason whole, in the owner's words", r.Text)
	}
	page := httptest.NewServer(p.model)
	defer page.Close()
	resp, err := http.Get(page.URL + "/demo/page")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if body, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "demo model") {
		t.Errorf("the demo page answered %d %q, want the page", resp.StatusCode, body)
	}
}

// TestDemoWritesKeepsAndUsesATool: the pet writes itself a tool, the gate
// passes it, the owner keeps it, and the next message uses it.
func TestDemoWritesKeepsAndUsesATool(t *testing.T) {
	imagetest.Image(t)
	p, _ := demoPet(t)
	p.say("reverse hello world")
	if r := p.reply(15 * time.Second); !strings.Contains(r.Text, "no tool for that yet") {
		t.Fatalf("reverse before the tool exists answered %q", r.Text)
	}
	p.idle()
	req := p.sayAndApprove("make a tool that reverses text", "new tool reverse_text")
	if !strings.Contains(req.Detail, "text[::-1]") || !strings.Contains(req.Detail, "2 passed") {
		t.Errorf("the owner was shown %q, want the code and the gate's pytest run", req.Detail)
	}
	p.replyWith("Kept: reverse_text", 30*time.Second)
	p.idle()
	p.say("reverse hello world")
	if r := p.replyWith("My own tool says", 30*time.Second); !strings.Contains(r.Text, "dlrow olleh") {
		t.Errorf("the kept tool answered %q, want the text reversed", r.Text)
	}
}

// TestDemoRemindsLater: a reminder becomes a schedule, and core starts
// its turn by itself when it is due.
func TestDemoRemindsLater(t *testing.T) {
	p, _ := demoPet(t)
	p.say("remind me in 2s to stretch")
	if r := p.reply(15 * time.Second); !strings.Contains(r.Text, "I'll remind you in 2s") {
		t.Fatalf("the reminder was answered %q", r.Text)
	}
	if r := p.reply(20 * time.Second); !strings.Contains(r.Text, "reminder: stretch") {
		t.Fatalf("the due reminder said %q", r.Text)
	}
	if turns := p.waitTurns(2); turns[0].Kind != "scheduled" {
		t.Errorf("the reminder's turn is %+v, want a scheduled one", turns[0])
	}
}

func TestDemoRemembers(t *testing.T) {
	p, _ := demoPet(t)
	p.say("remember I like hazelnut coffee")
	p.reply(15 * time.Second)
	p.idle()
	notes, err := os.ReadFile(filepath.Join(p.cfg.StateDir, "memory", "notes.md"))
	if err != nil || !strings.Contains(string(notes), "I like hazelnut coffee") {
		t.Errorf("memory/notes.md = %q, %v; want the note", notes, err)
	}
}
