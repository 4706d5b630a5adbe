package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"shelldon/bus"
	"shelldon/contracts"
	"shelldon/demomodel"
	"shelldon/testhost"
)

// The flooder: the test binary run as another user (see TestMain) with
// flooderEnv naming how it floods the bus at flooderSocketEnv.
const (
	flooderEnv       = "SHELLDON_TEST_FLOODER"
	flooderSocketEnv = "SHELLDON_TEST_FLOODER_SOCKET"
)

// How the flooder floods: each of its connections sends most of a
// 4 MiB frame before any hello (floodBeforeHello) or after a panel's
// hello (floodAsPanel), or sends nothing at all (floodSilent).
const (
	floodBeforeHello = "before-hello"
	floodAsPanel     = "as-panel"
	floodSilent      = "silent"
)

// floodConnections is how many connections the flooder opens: the 24
// of the review that took core from 15 MB to 115 MB.
const floodConnections = 24

// floodBulk is what each flooding connection sends of the 4 MiB frame
// it declares: most of it, the frame never complete.
const floodBulk = bus.DefaultMaxFrame - 256<<10

// flood plays a user in the state directory's group flooding core's bus
// as mode says. It prints one line of what became of its connections:
// "held N cut M" (how many connections took every byte the flooder sent,
// how many core closed or refused), and for floodSilent a second once
// core has closed every held one or 30 s passed, "still open N"; then it
// holds what it has until it is killed.
func flood(mode string) int {
	socket := os.Getenv(flooderSocketEnv)
	conns := make([]net.Conn, floodConnections)
	held := make([]bool, floodConnections)
	var wg sync.WaitGroup
	for i := range conns {
		nc, err := net.Dial("unix", socket)
		if err != nil {
			continue
		}
		conns[i] = nc
		wg.Add(1)
		go func() {
			defer wg.Done()
			held[i] = floodOne(nc, mode)
		}()
	}
	wg.Wait()
	var n int
	for _, h := range held {
		if h {
			n++
		}
	}
	fmt.Printf("held %d cut %d\n", n, floodConnections-n)
	if mode == floodSilent {
		open, until := 0, time.Now().Add(30*time.Second)
		for i, nc := range conns {
			if held[i] {
				nc.SetReadDeadline(until)
				if _, err := nc.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) {
					open++
				}
			}
		}
		fmt.Printf("still open %d\n", open)
	}
	select {}
}

// floodOne floods one connection as mode says and reports whether core
// took it all and still holds the connection open.
func floodOne(nc net.Conn, mode string) bool {
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if mode == floodSilent {
		// Core refuses a connection past its bounds at once: it answers
		// or closes; one it holds answers nothing.
		nc.SetReadDeadline(time.Now().Add(time.Second))
		_, err := nc.Read(make([]byte, 1))
		return errors.Is(err, os.ErrDeadlineExceeded)
	}
	if mode == floodAsPanel {
		hello, _ := contracts.NewEnvelope(contracts.KindHello, "", contracts.Hello{Role: contracts.RolePanel, Name: "flood"})
		if bus.WriteFrame(nc, hello, 0) != nil {
			return false
		}
		if welcome, err := bus.ReadFrame(nc, 0); err != nil || welcome.Kind != contracts.KindWelcome || !strings.Contains(string(welcome.Body), `"ok":true`) {
			return false
		}
	}
	var header [4]byte
	binary.BigEndian.PutUint32(header[:], bus.DefaultMaxFrame)
	if _, err := nc.Write(header[:]); err != nil {
		return false
	}
	chunk := make([]byte, 64<<10)
	for sent := 0; sent < floodBulk; sent += len(chunk) {
		if _, err := nc.Write(chunk); err != nil {
			return false
		}
	}
	return true
}

// flooder is one run of the flooder as another user.
type flooder struct {
	cmd   *exec.Cmd
	lines chan string
}

// runFlooder starts the flooder as cred flooding socket as mode says,
// and returns once it has said what became of its connections, with how
// many core held and how many it cut.
func runFlooder(t *testing.T, self string, cred syscall.Credential, mode, socket string) (f *flooder, held, cut int) {
	t.Helper()
	f = &flooder{lines: make(chan string, 4)}
	f.cmd = exec.Command(self, "-test.run=^$")
	f.cmd.Env = append(os.Environ(), flooderEnv+"="+mode, flooderSocketEnv+"="+socket)
	f.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &cred}
	f.cmd.Stderr = testOutput()
	stdout, err := f.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.cmd.Start(); err != nil {
		t.Fatalf("start the flooder as %+v: %v", cred, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			f.lines <- lines.Text()
		}
	}()
	t.Cleanup(func() {
		f.cmd.Process.Kill()
		<-done
		f.cmd.Wait()
	})
	line := f.next(t, 30*time.Second)
	if _, err := fmt.Sscanf(line, "held %d cut %d", &held, &cut); err != nil {
		t.Fatalf("the flooder said %q, want \"held N cut M\"", line)
	}
	return f, held, cut
}

// next is the flooder's next line.
func (f *flooder) next(t *testing.T, within time.Duration) string {
	t.Helper()
	select {
	case line := <-f.lines:
		return line
	case <-time.After(within):
		t.Fatalf("the flooder said nothing within %v", within)
		return ""
	}
}

// stop kills the flooder, closing every connection it held.
func (f *flooder) stop() {
	f.cmd.Process.Kill()
}

// floodGrowth bounds what a flood may add to core's resident memory:
// a small part of the 64 MB core has on a board.
const floodGrowth = 8

// TestABusFloodFromTheStateGroupLeavesCoreSmall: a user in the state
// directory's group (the panel's, say) floods core's bus, as the review
// did: 24 connections that say nothing, 24 that each send most of a
// 4 MiB frame before their hello, 24 that do so after a panel's hello.
// Core (its own process, as systemd runs it) holds only its bound of the
// user's connections, closes the silent ones once their time to say
// hello is up, reads no more than a hello of anyone who has not said who
// it is (and of a panel, which may send nothing), and so stays small; the
// owner's next message is answered as ever.
func TestABusFloodFromTheStateGroupLeavesCoreSmall(t *testing.T) {
	testhost.Root(t)
	const nobody, stateGroup = 65534, 4242
	stranger := syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{stateGroup}}
	self := testhost.SelfForOthers(t)
	p := newPet(t, demomodel.New(demomodel.Step{Text: "Still here."}), shareStateDir(t, stateGroup))
	p.stopCore() // core in a process of its own, whose memory is its own
	core := startDaemon(t, p)
	p.waitJoin(15 * time.Second)
	before, _ := smapsRollup(t, core.Process.Pid) // resident MB

	f, held, cut := runFlooder(t, self, stranger, floodSilent, p.cfg.Socket)
	t.Logf("silent: core held %d of %d connections, refused %d", held, floodConnections, cut)
	if held > 8 || cut < floodConnections-8 {
		t.Errorf("of %d silent connections core held %d and refused %d, want at most 8 held (its bound of one user's)", floodConnections, held, cut)
	}
	if line := f.next(t, 40*time.Second); line != "still open 0" {
		t.Errorf("30 s after the silent connections opened they were %s, want every one closed once its time to say hello was up", line)
	}
	f.stop()

	for _, mode := range []string{floodBeforeHello, floodAsPanel} {
		f, held, _ := runFlooder(t, self, stranger, mode, p.cfg.Socket)
		during, _ := smapsRollup(t, core.Process.Pid)
		t.Logf("%s: core's resident memory %.1f MB before the flood, %.1f MB under it (%d of %d connections held)", mode, before, during, held, floodConnections)
		if held > 0 {
			t.Errorf("%s: core took %d connections' most of a 4 MiB frame, want it to read no more than a hello of a caller that may send nothing", mode, held)
		}
		if during-before > floodGrowth {
			t.Errorf("%s: core's resident memory grew from %.1f MB to %.1f MB under the flood, want at most %d MB more", mode, before, during, floodGrowth)
		}
		f.stop()
	}

	p.say("are you there?")
	if r := p.reply(15 * time.Second); r.Text != "Still here." {
		t.Errorf("reply after the flood = %+v, want the scripted answer", r)
	}
}
