package chat

import (
	"context"
	"errors"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/transports/chat/chattest"
	"shelldon/transports/transporttest"
)

// TestConformance runs the transport suite over the terminal chat, on a
// real pseudo-terminal. The chat holds nothing past its own end, so it
// promises nothing across its restart; it prints a line per step of a
// turn, which stays.
func TestConformance(t *testing.T) {
	transporttest.Run(t, []transporttest.Impl{
		{Name: "chat", New: conformingChat},
	})
}

func conformingChat(t *testing.T, core *transporttest.Core) transporttest.Target {
	o := &terminalOwner{socket: core.Socket()}
	o.start(t)
	return transporttest.Target{Owner: o, Chat: TransportName, InputBound: maxMessage}
}

// terminalOwner is the owner at a terminal running `shelldon chat`.
type terminalOwner struct {
	socket string
	term   *chattest.Terminal
	cancel context.CancelFunc
	done   chan error
}

// start runs a chat in a fresh pseudo-terminal, and waits until it says
// how to talk to it. The chat ends before its terminal closes.
func (o *terminalOwner) start(t *testing.T) {
	t.Helper()
	o.term = chattest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	o.cancel, o.done = cancel, make(chan error, 1)
	go func() {
		o.done <- Run(ctx, Options{Socket: o.socket, MaxFrame: 1 << 20, In: o.term.Slave, Out: o.term.Slave})
	}()
	// At the test's end the last message may still wait for core's
	// confirmation, on its way: the chat says it never reached core.
	t.Cleanup(func() { o.stop(t, ErrUndelivered) })
	o.term.WaitFor(t, "Ctrl-D quits")
}

// stop ends the chat, once, which must end with no error but allowed.
func (o *terminalOwner) stop(t *testing.T, allowed error) {
	t.Helper()
	if o.done == nil {
		return
	}
	o.cancel()
	select {
	case err := <-o.done:
		if err != nil && !errors.Is(err, allowed) {
			t.Errorf("the chat ended with %v, want nil", err)
		}
	case <-time.After(waitLimit):
		t.Error("the chat did not end with its context")
	}
	o.done = nil
}

func (o *terminalOwner) Say(t *testing.T, text string) { o.term.Line(t, text) }

func (o *terminalOwner) Shown() string { return o.term.Screen() }

// Answer types the command that answers the request it names, which
// is how a request is answered when several wait, and works as well
// when one does.
func (o *terminalOwner) Answer(t *testing.T, req contracts.ApprovalRequest, answer transporttest.Answer) {
	command := map[transporttest.Answer]string{transporttest.Deny: "/no ", transporttest.Approve: "/yes ", transporttest.Always: "/always "}[answer]
	o.term.Line(t, command+req.Turn[:min(idLength, len(req.Turn))])
}

// Restart quits the chat and opens a new one, in a new terminal.
func (o *terminalOwner) Restart(t *testing.T) {
	o.stop(t, nil)
	o.start(t)
}
