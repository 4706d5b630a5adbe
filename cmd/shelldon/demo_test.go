package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/mcp/mcptest"
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

// withDemoMCP configures the example MCP server as `make run` does
// (demoMCP), built from cmd/shelldon-demo-mcp.
func withDemoMCP(t testing.TB) petOption {
	dir := mcptest.Build(t, "shelldon/cmd/shelldon-demo-mcp", demoMCPBinary)
	return func(c *config.Config) { c.MCP = []config.MCP{quickDemoMCP(dir)} }
}

// quickDemoMCP is demoMCP with a call timeout under the tests' worker
// timeout.
func quickDemoMCP(dir string) config.MCP {
	m := demoMCP(dir)
	m.CallTimeout.Duration = 5 * time.Second
	return m
}

// TestDemoCallsItsMCPServer: the demo's two MCP phrases through the whole
// pet, the example server in its sandbox container. The tool `make run`
// marks read-only runs at once; the other asks, its card naming the
// server and the tool, with the exact arguments, and the server's own
// read-only annotation shown as its claim, not believed; on Approve it
// runs, and the owner reads the server's words.
func TestDemoCallsItsMCPServer(t *testing.T) {
	imagetest.Image(t)
	p := newPet(t, demomodel.New(), withDemoMCP(t))
	p.waitListed(30 * time.Second)

	p.say("count the letters in hello world")
	if r := p.reply(30 * time.Second); !strings.Contains(r.Text, "The MCP server demo says, from its container: “10 letters, 2 words”.") {
		t.Errorf("the read-only MCP tool answered %q, want the server's count", r.Text)
	}
	select {
	case req := <-p.approvals:
		t.Errorf("the tool `make run` marks read-only asked the owner: %+v", req)
	default:
	}
	p.idle()

	req := p.sayAndApprove("shout hello world", "mcp_demo_shout")
	if !strings.Contains(req.Note, "calls shout of the MCP server demo, in its container; the server claims: read-only (not believed") ||
		!strings.Contains(req.Detail, `"text": "hello world"`) || req.Always != "" {
		t.Errorf("the owner was shown %+v; want the server, the tool, its claim as a claim, the exact arguments and no Always", req)
	}
	if r := p.replyWith("The MCP server demo says", 30*time.Second); !strings.Contains(r.Text, "“HELLO WORLD!”") {
		t.Errorf("the approved MCP call answered %q, want the server's shout", r.Text)
	}
}

// TestDemoMCPWithoutASandbox: where the sandbox cannot run (here no
// systemd-nspawn is on $PATH; for a developer's `make run`, not root or
// no image), the pet starts all the same; the demo's MCP phrase says the
// server's tools are not offered and names the sandbox, and /tools says
// the server is not started and why.
func TestDemoMCPWithoutASandbox(t *testing.T) {
	p := newPet(t, demomodel.New(), func(c *config.Config) {
		// Once the worker is built (testConfig builds it with go from
		// $PATH first), before core looks for systemd-nspawn.
		t.Setenv("PATH", t.TempDir())
		c.MCP = []config.MCP{quickDemoMCP(t.TempDir())}
	})
	p.say("count the letters in hello world")
	if r := p.reply(30 * time.Second); !strings.Contains(r.Text, "mcp_demo_count_letters is not among the tools I was given") ||
		!strings.Contains(r.Text, "it can start only where the sandbox can") {
		t.Errorf("the MCP phrase without a sandbox answered %q, want the missing tool and the sandbox named", r.Text)
	}
	p.idle()
	p.say("/tools")
	if r := p.replyWith("MCP server demo", 10*time.Second); !strings.Contains(r.Text, "MCP server demo (not started: there is no sandbox to run it in (") {
		t.Errorf("/tools says %q, want the server not started for want of a sandbox, and why", r.Text)
	}
}

// TestUpGivesTheDemoModelItsMCPServer: `up` on the demo model configures
// the example server found beside its binary, as a table that passes
// the configuration's checks; without one it configures none.
func TestUpGivesTheDemoModelItsMCPServer(t *testing.T) {
	cfg := config.Default()
	cfg.MCP = []config.MCP{demoMCP(t.TempDir())}
	if err := cfg.Validate(); err != nil {
		t.Errorf("the demo's [[mcp]] table fails the configuration's checks: %v", err)
	}
	if got := demoMCPBesideThisBinary(slog.New(slog.DiscardHandler)); got != nil {
		t.Errorf("with no %s beside the test binary, up configured %+v", demoMCPBinary, got)
	}
}
