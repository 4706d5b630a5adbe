package daemon

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/statedir"
	"shelldon/testhost"
)

// TestAGrantedRuleLetsOnlyItsShapeThrough is the attack after the owner
// tapped "Always" on write_file to notes.md: the model, in one turn after
// another, writes notes.md again (let through, and reported), then tries
// the variants — another path to it, a link planted at it, a write after
// reading a page — each of which asks; then the owner revokes the rule
// and notes.md asks again.
func TestAGrantedRuleLetsOnlyItsShapeThrough(t *testing.T) {
	dir := testhost.ShortDir(t)
	socket := filepath.Join(dir, "bus.sock")
	calls := make(chan contracts.ToolCall, 16) // what each new turn's worker asks for
	serveCore(t, attackedCore(t, dir, callingWorker(t, socket, calls)))
	o := joinAsOwner(t, socket)
	ws := statedir.Layout{Root: dir}.Workspace()
	write := func(path string) contracts.ToolCall {
		return contracts.ToolCall{ID: "w", Name: "write_file", Args: `{"path":"` + path + `","content":"hello"}`}
	}
	replyWith := func(part string) contracts.Outbound {
		t.Helper()
		deadline := time.After(waitLimit)
		for {
			select {
			case r := <-o.replies:
				if strings.Contains(r.Text, part) {
					return r
				}
			case <-deadline:
				t.Fatalf("no reply saying %q within %v", part, waitLimit)
			}
		}
	}
	asks := func(what string, call contracts.ToolCall) contracts.ApprovalRequest {
		t.Helper()
		calls <- call
		o.send(contracts.KindInbound, contracts.Inbound{Text: what})
		return within(t, o.approvals, "the request for "+what)
	}

	first := asks("write my notes", write("notes.md"))
	if first.Always != "write_file to `notes.md`" {
		t.Fatalf("the first request offers %q, want the rule write_file to `notes.md`", first.Always)
	}
	o.send(contracts.KindDecision, contracts.Decision{Turn: first.Turn, Approve: true, Always: true})
	replyWith("Rule 1 kept")
	replyWith("done")

	calls <- write("notes.md")
	o.send(contracts.KindInbound, contracts.Inbound{Text: "write my notes again"})
	replyWith("Ran under rule 1 (write_file to `notes.md`)")
	select {
	case r := <-o.approvals:
		t.Fatalf("a call the rule covers asked: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}

	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, variant := range []string{"./notes.md", "sub/../notes.md", "notes.md.bak"} {
		if r := asks("write "+variant, write(variant)); r.Tool != "write_file" {
			t.Errorf("the variant %s: request %+v, want write_file to ask", variant, r)
		}
	}
	// A link planted where the rule's path is: the write would land in
	// .git/hooks.
	if err := writeLink(ws, ".git/hooks/pre-commit", "notes.md"); err != nil {
		t.Fatal(err)
	}
	if r := asks("write my notes through the link", write("notes.md")); r.Tool != "write_file" {
		t.Errorf("a write through a link planted at notes.md: request %+v, want it to ask", r)
	}

	o.send(contracts.KindInbound, contracts.Inbound{Text: "/rules"})
	if list := replyWith("1. write_file to `notes.md`"); !strings.Contains(list.Text, "used 1 time(s)") {
		t.Errorf("/rules = %q, want rule 1 used once", list.Text)
	}
	o.send(contracts.KindInbound, contracts.Inbound{Text: "/rules revoke 1"})
	replyWith("Rule 1 revoked")
	o.send(contracts.KindInbound, contracts.Inbound{Text: "/rules revoke 1"})
	if r := replyWith("There is no rule 1"); !r.Refused {
		t.Errorf("revoking a revoked rule = %+v, want it refused", r)
	}
}

// writeLink puts a link at name in the workspace, in place of what is
// there, pointing at target, whose directory it creates.
func writeLink(ws, target, name string) error {
	if err := os.MkdirAll(filepath.Join(ws, filepath.Dir(target)), 0o755); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(ws, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Symlink(target, filepath.Join(ws, name))
}
