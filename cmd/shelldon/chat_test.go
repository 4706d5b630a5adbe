package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/hub"
	"shelldon/daemon/hub/hubtest"
	"shelldon/testhost"
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
