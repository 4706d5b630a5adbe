package hub_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"shelldon/bus"
	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/hub"
)

// dialRaw opens a connection to the hub that has said nothing yet.
func dialRaw(t *testing.T, path string) net.Conn {
	t.Helper()
	nc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// closedByHub checks that the hub closes nc within the patience, having
// written it at most a refusal.
func closedByHub(t *testing.T, nc net.Conn, why string) {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(patience))
	_, err := io.Copy(io.Discard, nc)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the hub kept open a connection %s", why)
	}
}

// header writes a frame's header declaring n bytes, and the first sent
// of them.
func header(t *testing.T, nc net.Conn, n, sent int) {
	t.Helper()
	frame := binary.BigEndian.AppendUint32(nil, uint32(n))
	frame = append(frame, strings.Repeat("x", sent)...)
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
}

// TestASilentCallerIsClosedWhenItsTimeToSayHelloIsUp: a caller that
// connects and says nothing holds its connection until HelloTimeout has
// passed on the hub's clock, then it is closed and logged.
func TestASilentCallerIsClosedWhenItsTimeToSayHelloIsUp(t *testing.T) {
	clk := clock.NewFake(time.Now())
	f := serve(t, hub.Config{Clock: clk, HelloTimeout: 5 * time.Second})
	nc := dialRaw(t, f.path)
	deadline := time.Now().Add(patience)
	for {
		if d, ok := clk.Next(); ok {
			if d != 5*time.Second {
				t.Fatalf("the hub's first timer is due in %v, want the 5s the caller has to say hello", d)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hub set no timer for a caller's hello")
		}
		time.Sleep(time.Millisecond)
	}
	clk.Advance(5*time.Second - time.Millisecond)
	nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := nc.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("before its time was up the silent caller read %v, want its connection still open", err)
	}
	clk.Advance(time.Millisecond)
	closedByHub(t, nc, "whose caller said nothing for its whole time to say hello")
	f.logs.WaitFor(t, "sent no hello")
}

// TestAHelloIsReadNoFurtherThanAHello: a caller that has not said who it
// is declares a frame far larger than a hello (within MaxFrame) and sends
// some of it: the hub reads no more than the header and closes it. A
// hello of the largest size is still read.
func TestAHelloIsReadNoFurtherThanAHello(t *testing.T) {
	f := serve(t, hub.Config{})
	nc := dialRaw(t, f.path)
	header(t, nc, bus.DefaultMaxFrame, 64<<10)
	closedByHub(t, nc, "that sent most of a 4 MiB frame before its hello")
	f.logs.WaitFor(t, "frame too large")

	name := strings.Repeat("n", contracts.MaxHelloFrame-100)
	hello := envelope(t, contracts.KindHello, "", contracts.Hello{Role: contracts.RolePanel, Name: name})
	for len(hello.Body) < contracts.MaxHelloFrame-len(`{"kind":"HELLO","body":}`) {
		name += "n"
		hello = envelope(t, contracts.KindHello, "", contracts.Hello{Role: contracts.RolePanel, Name: name})
	}
	if w := handshake(t, f.path, hello); !w.OK {
		t.Errorf("a hello of %d bytes was refused: %s", len(hello.Body), w.Reason)
	}
}

// TestAPanelIsReadNoFurtherThanAHello: anyone who may connect may be a
// panel, and a panel may send nothing, so once joined its frames are read
// no further than a hello's size: one larger ends its connection before
// its body is read.
func TestAPanelIsReadNoFurtherThanAHello(t *testing.T) {
	f := serve(t, hub.Config{})
	panel, _ := f.join(t, contracts.Hello{Role: contracts.RolePanel, Name: "big"})
	send(t, panel, envelope(t, contracts.KindSnapshot, "", strings.Repeat("s", 100)))
	f.logs.WaitFor(t, fmt.Sprintf(`dropped %s from panel "big"`, contracts.KindSnapshot))
	big := envelope(t, contracts.KindSnapshot, "", strings.Repeat("s", 64<<10))
	send(t, panel, big)
	if p := f.waitLeave(t); p.Hello.Name != "big" {
		t.Errorf("peer %+v left, want the panel that sent a frame of %d bytes", p.Hello, len(big.Body))
	}
	f.logs.WaitFor(t, "frame too large")
}

// TestConnectionsPastTheBoundAreRefused: the hub holds at most MaxConns
// connections at once, joined or still to say hello; the next caller is
// refused at once with the reason, and one is let in again when a
// connection closes.
func TestConnectionsPastTheBoundAreRefused(t *testing.T) {
	f := serve(t, hub.Config{MaxConns: 3})
	f.join(t, contracts.Hello{Role: contracts.RoleTransport, Name: "cli"})
	silent := []net.Conn{dialRaw(t, f.path), dialRaw(t, f.path)}
	hello := envelope(t, contracts.KindHello, "", contracts.Hello{Role: contracts.RolePanel})
	if w := handshake(t, f.path, hello); w.OK || !strings.Contains(w.Reason, "already holds 3 connections") {
		t.Errorf("welcome of a fourth connection = %+v, want it refused: the bus holds its bound", w)
	}
	f.logs.WaitFor(t, "refused pid")
	silent[0].Close()
	// Let in once the hub has seen the silent connection close.
	deadline := time.Now().Add(patience)
	for w := handshake(t, f.path, hello); !w.OK; w = handshake(t, f.path, hello) {
		if time.Now().After(deadline) {
			t.Fatalf("welcome after a connection closed = %+v, want it let in", w)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// joinRaw joins the hub as hello on a connection of its own, whose
// frames the test then writes byte by byte.
func (f *fixture) joinRaw(t *testing.T, hello contracts.Hello) net.Conn {
	t.Helper()
	nc := dialRaw(t, f.path)
	if err := bus.WriteFrame(nc, envelope(t, contracts.KindHello, "", hello), 0); err != nil {
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(patience))
	if w, err := bus.ReadFrame(nc, 0); err != nil || w.Kind != contracts.KindWelcome {
		t.Fatalf("welcome = %+v, %v", w, err)
	}
	f.waitJoin(t)
	return nc
}

// TestFramesPastTheBudgetWait: the hub reads at most FrameBudget bytes of
// frames at once, over every connection. While one transport's large
// frame is half sent, another's waits, unread; once the first is whole
// both reach core, in that order.
func TestFramesPastTheBudgetWait(t *testing.T) {
	const size = 48 << 10
	f := serve(t, hub.Config{MaxFrame: 64 << 10, FrameBudget: 64 << 10})
	slow := f.joinRaw(t, contracts.Hello{Role: contracts.RoleTransport, Name: "slow"})
	quick, _ := f.join(t, contracts.Hello{Role: contracts.RoleTransport, Name: "quick"})

	var first strings.Builder
	if err := bus.WriteFrame(&first, envelope(t, contracts.KindInbound, "", strings.Repeat("1", size)), 0); err != nil {
		t.Fatal(err)
	}
	half := len(first.String()) / 2
	if _, err := io.WriteString(slow, first.String()[:half]); err != nil {
		t.Fatal(err)
	}
	// The quick frame is sent once the slow one's reader holds its share,
	// not before: under emulation the reader may take it after the quick
	// frame is read.
	for deadline := time.Now().Add(10 * time.Second); f.FramesBeingRead() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hub never took the half-sent frame's share of the budget")
		}
	}
	send(t, quick, envelope(t, contracts.KindInbound, "", strings.Repeat("2", size)))
	select {
	case env := <-f.core:
		t.Fatalf("core got a frame from %q while the budget was held by a frame half sent, want it to wait", env.Sender)
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := io.WriteString(slow, first.String()[half:]); err != nil {
		t.Fatal(err)
	}
	// Both come once the budget is free again, in either order: the
	// slow frame's release of the budget and its routing race the quick
	// frame's reading.
	got := []string{f.waitCore(t).Sender, f.waitCore(t).Sender}
	if slices.Sort(got); got[0] != "quick" || got[1] != "slow" {
		t.Errorf("core got frames from %q, want one from each of quick and slow", got)
	}
}
