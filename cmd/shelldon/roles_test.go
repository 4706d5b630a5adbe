package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"shelldon/bus"
	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/demomodel"
	"shelldon/testhost"
)

// The intruder: the test binary run as another user (see TestMain) with
// intruderEnv naming the role it claims on the bus at intruderSocketEnv.
const (
	intruderEnv       = "SHELLDON_TEST_INTRUDER"
	intruderSocketEnv = "SHELLDON_TEST_INTRUDER_SOCKET"
	intruderTurnEnv   = "SHELLDON_TEST_INTRUDER_TURN"
)

// The intruder's exit codes.
const (
	intruderDone      = 0 // it joined and did its harm
	intruderRefused   = 3 // core refused its hello
	intruderNoConnect = 4 // it could not reach the socket at all
	intruderNoHarm    = 5 // it joined but had nothing to steal in time
)

// intruderJoined is the line the intruder prints once it is welcomed.
const intruderJoined = "joined"

// intrude plays a user who may reach the bus socket and claims role: as
// a transport it approves the owner's parked call (the turn in
// intruderTurnEnv) and speaks for the owner; as the broker it waits for a
// turn's job, with the owner's whole prompt. It returns the exit code.
func intrude(role contracts.Role) int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	socket := os.Getenv(intruderSocketEnv)
	conn, err := bus.Dial(ctx, socket, contracts.Hello{Role: role, Name: "telegram"}, 0)
	switch {
	case errors.Is(err, bus.ErrRefused):
		fmt.Fprintln(os.Stderr, err)
		return intruderRefused
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		return intruderNoConnect
	}
	defer conn.Close()
	fmt.Println(intruderJoined)
	if role == contracts.RoleBroker {
		for {
			env, err := conn.Recv()
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return intruderNoHarm
			}
			if env.Kind == contracts.KindJob {
				fmt.Fprintf(os.Stderr, "stole the job of turn %s: %s\n", env.Turn, env.Body)
				return intruderDone
			}
		}
	}
	decision, _ := contracts.NewEnvelope(contracts.KindDecision, "", contracts.Decision{Turn: os.Getenv(intruderTurnEnv), Approve: true, Chat: "owner"})
	inbound, _ := contracts.NewEnvelope(contracts.KindInbound, "", contracts.Inbound{Chat: "owner", Text: "the intruder speaking as the owner"})
	for _, env := range []contracts.Envelope{decision, inbound} {
		if err := conn.Send(env); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return intruderNoHarm
		}
	}
	return intruderDone
}

// intruder is one run of the intruder as another user.
type intruder struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan struct{} // closed when it has exited
	joined chan struct{} // closed when it says it joined
}

// runIntruder starts the intruder as cred claiming role on socket, and
// waits until it has exited or has joined (the breach: then it is left
// running to do its harm, and killed at cleanup).
func runIntruder(t *testing.T, self string, cred syscall.Credential, role contracts.Role, socket, turn string) *intruder {
	t.Helper()
	in := &intruder{done: make(chan struct{}), joined: make(chan struct{})}
	in.cmd = exec.Command(self, "-test.run=^$")
	in.cmd.Env = append(os.Environ(), intruderEnv+"="+string(role), intruderSocketEnv+"="+socket, intruderTurnEnv+"="+turn)
	in.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &cred}
	in.cmd.Stderr = &in.stderr
	stdout, err := in.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := in.cmd.Start(); err != nil {
		t.Fatalf("start the intruder as %+v: %v", cred, err)
	}
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if lines.Text() == intruderJoined {
				close(in.joined)
			}
		}
		in.cmd.Wait()
		close(in.done)
	}()
	t.Cleanup(func() {
		in.cmd.Process.Kill()
		<-in.done
	})
	select {
	case <-in.done:
	case <-in.joined:
	case <-time.After(20 * time.Second):
		t.Fatalf("the intruder as %s neither joined nor exited within 20s", role)
	}
	return in
}

// refused checks that the intruder was refused at hello, with a reason
// that contains want.
func (in *intruder) refused(t *testing.T, want string) {
	t.Helper()
	select {
	case <-in.joined:
		t.Errorf("the intruder as uid %d joined the bus", in.cmd.SysProcAttr.Credential.Uid)
		return
	case <-in.done:
	}
	if code := in.cmd.ProcessState.ExitCode(); code != intruderRefused || !strings.Contains(in.stderr.String(), want) {
		t.Errorf("the intruder exited %d (%s), want %d: refused at hello because %s", code, strings.TrimSpace(in.stderr.String()), intruderRefused, want)
	}
}

// shareStateDir gives the state directory the group and a mode that let
// its members reach the bus socket, which takes the directory's group:
// then only core's binding of roles to users can refuse them.
func shareStateDir(t *testing.T, group int) petOption {
	return func(c *config.Config) {
		if err := os.Chown(c.StateDir, 0, group); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(c.StateDir, 0o750); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStrangerCannotTakeTheOwnersRoles: a user who may reach the bus (a
// member of the state directory's group, as the worker's and the panel's
// users are on a board) tries to be a transport, to approve the owner's
// parked write and to speak for the owner, then to be a second broker, to
// receive the turns' prompts. Both hellos are refused; the write waits for
// the owner, whose own tap carries it out; no turn runs for the intruder,
// and the real broker still answers.
func TestStrangerCannotTakeTheOwnersRoles(t *testing.T) {
	testhost.Root(t)
	const nobody, stateGroup = 65534, 4242
	stranger := syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{stateGroup}}
	self := testhost.SelfForOthers(t)
	model := demomodel.New(
		writeCall("w1", "todo.txt", "milk"), demomodel.Step{Text: "Saved your list."},
		demomodel.Step{Text: "The real broker answers."},
	)
	p := newPet(t, model, shareStateDir(t, stateGroup))
	ws := statedir.Layout{Root: p.cfg.StateDir}.Workspace()

	p.say("put milk on my list")
	if r := p.reply(15 * time.Second); !strings.Contains(r.Text, "write_file") {
		t.Fatalf("parking reply = %+v, want the pet to ask", r)
	}
	req := p.approval(5 * time.Second)
	p.waitTurns(1)

	// (a) A transport.
	in := runIntruder(t, self, stranger, contracts.RoleTransport, p.cfg.Socket, req.Turn)
	in.refused(t, fmt.Sprintf("uid %d may not be a transport", nobody))
	if _, err := os.Stat(filepath.Join(ws, "todo.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("todo.txt after the intruder's approval: Stat = %v, want it not written", err)
	}
	p.stillParked(req.Turn)
	p.decide(req.Turn, true)
	p.settled(req.Turn, contracts.ApprovalApproved)
	if r := p.reply(15 * time.Second); r.Text != "Saved your list." {
		t.Fatalf("reply to the owner's approval = %+v, want the resumed turn's (the request still parked)", r)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "todo.txt")); err != nil || string(b) != "milk" {
		t.Errorf("todo.txt = %q, %v; want the content the owner approved", b, err)
	}
	if turns := p.waitTurns(2); len(turns) != 2 {
		t.Errorf("turns = %+v, want only the owner's two", turns)
	}

	// (b) A second broker.
	in = runIntruder(t, self, stranger, contracts.RoleBroker, p.cfg.Socket, "")
	in.refused(t, fmt.Sprintf("uid %d may not be the broker", nobody))
	p.say("are you there?")
	if r := p.reply(15 * time.Second); r.Text != "The real broker answers." || r.Degraded {
		t.Fatalf("reply after the intruder's broker hello = %+v, want the scripted answer through the real broker", r)
	}
	if turns := p.waitTurns(3); len(turns) != 3 {
		t.Errorf("turns = %+v, want only the owner's three", turns)
	}
	if reqs := p.model.Requests(); len(reqs) != 3 {
		t.Errorf("the model was asked %d times, want 3 (the owner's turns only)", len(reqs))
	}
	p.noReply(300 * time.Millisecond)
}

// stillParked checks that a RISKY call of turn still waits for the owner.
func (p *pet) stillParked(turn string) {
	p.t.Helper()
	store, err := state.OpenReadOnly(statedir.Layout{Root: p.cfg.StateDir})
	if err != nil {
		p.t.Fatal(err)
	}
	defer store.Close()
	if _, _, err := store.Approvals().Get(context.Background(), turn); err != nil {
		p.t.Errorf("the parked call of turn %s: %v, want it still waiting for the owner", turn, err)
	}
}
