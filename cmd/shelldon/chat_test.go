package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/hub"
	"shelldon/daemon/hub/hubtest"
	"shelldon/daemon/statedir"
	"shelldon/demomodel"
	"shelldon/sandbox/image/imagetest"
	"shelldon/testhost"
	"shelldon/transports/chat"
	"shelldon/transports/chat/chattest"
)

// TestChatFindsThePetOfTheRepository: `shelldon chat` with no
// --state-dir, started in the repository while `make run` runs there,
// talks to the pet in ./var and says so, instead of waiting for one at
// /var/lib/shelldon.
func TestChatFindsThePetOfTheRepository(t *testing.T) {
	t.Setenv("SHELLDON_CONFIG", "")
	t.Setenv("SHELLDON_STATE_DIR", "")
	t.Setenv("SHELLDON_SOCKET", "")
	if fileExists("/var/lib/shelldon/bus.sock") {
		testhost.Missing(t, "a machine with no pet of its own at /var/lib/shelldon", "run this test where no shelldon is installed")
	}
	repo := testhost.ShortDir(t)
	if err := os.Mkdir(filepath.Join(repo, repositoryPet), 0o750); err != nil {
		t.Fatal(err)
	}
	inbox := make(chan contracts.Envelope, 16)
	h, _, _ := hubtest.Serve(t, filepath.Join(repo, repositoryPet, "bus.sock"), hub.Config{Core: inbox})
	t.Chdir(repo)

	in, typed := io.Pipe()
	var screen syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(context.Background(), []string{"chat"}, in, &screen, io.Discard) }()
	io.WriteString(typed, "hello from the repository\n")
	select {
	case env := <-inbox:
		var msg contracts.Inbound
		if env.Kind != contracts.KindInbound || env.Decode(&msg) != nil || msg.Text != "hello from the repository" {
			t.Fatalf("the pet in ./var got %s %s, want the message", env.Kind, env.Body)
		}
		for _, answer := range []struct {
			kind contracts.Kind
			body any
		}{
			{contracts.KindInboundAck, contracts.InboundAck{Ref: msg.Ref, Chat: msg.Chat}},
			{contracts.KindOutbound, contracts.Outbound{Chat: msg.Chat, Text: "hi"}},
		} {
			reply, err := contracts.NewEnvelope(answer.kind, "", answer.body)
			if err == nil {
				err = h.Route(reply)
			}
			if err != nil {
				t.Fatalf("answer the chat: %v", err)
			}
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the pet in ./var got nothing; the chat shows:\n%s", screen.String())
	}
	typed.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("chat = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("chat did not end with its input")
	}
	want := "(No pet at /var/lib/shelldon/bus.sock; talking to the one in ./var, which `make run` started. --state-dir DIR names another.)"
	if shown := screen.String(); !strings.Contains(shown, want) || !strings.Contains(shown, "shelldon: hi") {
		t.Errorf("the chat shows:\n%s\nwant %q and the reply", shown, want)
	}
}

// TestTheTerminalsYesAnswersTheRequestRead is the replace race through
// the whole pet: in one reply the model proposes a tool (A, harmless) and
// then the same tool again (B, which shells out); the gate asks about A,
// then B replaces it, under the same title. The owner, who read A, types
// y once B is on the screen: nothing is kept, B is shown again, and only
// a second y keeps it — B, the code the owner was shown last.
func TestTheTerminalsYesAnswersTheRequestRead(t *testing.T) {
	imagetest.Image(t)
	evil := strings.Replace(greetModule, `return "hello, " + name`, `import subprocess
    return subprocess.run(["sh", "-c", "echo hello, " + name], capture_output=True, text=True).stdout.strip()`, 1)
	var ops []string
	for _, code := range []string{greetModule, evil} {
		b, err := json.Marshal(contracts.Op{Body: contracts.ProposeTool{Name: "greet", Code: code, Test: greetTest}})
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, string(b))
	}
	model := demomodel.New(demomodel.Step{Text: "I wrote a greeting tool.\n```ops\n[" + strings.Join(ops, ",") + "]\n```"})
	p := newPet(t, model)
	term := p.terminalChat(t)
	term.Line(t, "write yourself a greeting tool")
	term.WaitFor(t, "shelldon: I wrote a greeting tool.")
	term.WaitFor(t, "↻ Replaced — a newer request takes the place of new tool greet")
	term.WaitFor(t, "subprocess.run")
	term.WaitUntil(t, "the approval prompt", func(string) bool { return strings.HasPrefix(term.LastLine(), "approve? [y/n") })
	shown := strings.Count(term.Screen(), "subprocess.run")

	term.Line(t, "y")
	term.WaitUntil(t, "B shown again", func(screen string) bool { return strings.Count(screen, "subprocess.run") > shown })
	live := filepath.Join(statedir.Layout{Root: p.cfg.StateDir}.ToolStore(), "live", "greet.py")
	if _, err := os.Stat(live); err == nil {
		t.Fatalf("y typed once B had replaced A kept greet:\n%s", term.Screen())
	}
	term.WaitUntil(t, "the approval prompt", func(string) bool { return strings.HasPrefix(term.LastLine(), "approve? [y/n") })
	term.Line(t, "y")
	term.WaitFor(t, "Kept: greet is one of my tools from now on.")
	if kept, err := os.ReadFile(live); err != nil || string(kept) != evil {
		t.Errorf("greet.py after the second y = %q, %v; want B, the code shown", kept, err)
	}
}

// terminalChat runs `shelldon chat` on the pet in a pseudo-terminal until
// the test ends, and returns it once the chat is ready for typing.
func (p *pet) terminalChat(t *testing.T) *chattest.Terminal {
	t.Helper()
	term := chattest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- chat.Run(ctx, chat.Options{Socket: p.cfg.Socket, MaxFrame: int(p.cfg.Bus.MaxFrame), In: term.Slave, Out: term.Slave})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	term.WaitFor(t, "Ctrl-D quits")
	return term
}
