package epd

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"periph.io/x/conn/v3"
	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpiotest"
	"periph.io/x/conn/v3/physic"
	"periph.io/x/conn/v3/spi"
	"periph.io/x/conn/v3/spi/spitest"
)

// The harness puts a Dev on periph's fakes and writes down, in order, what
// the controller would see: RST levels, BUSY polls, and each command with the
// data after it, told apart by the DC level at each SPI transfer.

type stepKind int

const (
	rstStep   stepKind = iota // RST driven to level
	busyStep                  // BUSY polled (a run of polls is one step)
	cmdStep                   // a byte sent with DC low, and the bytes sent after it with DC high
	strayData                 // bytes sent with DC high before any command
)

type step struct {
	kind  stepKind
	level gpio.Level
	cmd   byte
	data  []byte
}

func rst(l gpio.Level) step { return step{kind: rstStep, level: l} }

var busyWait = step{kind: busyStep}

func cmd(c byte, data ...byte) step { return step{kind: cmdStep, cmd: c, data: data} }

func (s step) String() string {
	switch s.kind {
	case rstStep:
		return "RST " + s.level.String()
	case busyStep:
		return "wait BUSY"
	case cmdStep:
		return fmt.Sprintf("cmd 0x%02X %s", s.cmd, showData(s.data))
	default:
		return "data with no command " + showData(s.data)
	}
}

func showData(b []byte) string {
	if len(b) <= 8 {
		return fmt.Sprintf("% X", b)
	}
	return fmt.Sprintf("[%d bytes: % X ...]", len(b), b[:8])
}

func (s step) equal(o step) bool {
	return s.kind == o.kind && s.level == o.level && s.cmd == o.cmd && bytes.Equal(s.data, o.data)
}

// diffSteps describes the first difference, or returns "".
func diffSteps(got, want []step) string {
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			return fmt.Sprintf("step %d: missing, want %v", i, want[i])
		case i >= len(want):
			return fmt.Sprintf("step %d: extra %v", i, got[i])
		case !got[i].equal(want[i]):
			if got[i].kind == cmdStep && want[i].kind == cmdStep && got[i].cmd == want[i].cmd {
				return fmt.Sprintf("step %d: cmd 0x%02X data differs at byte %d: got %v, want %v",
					i, got[i].cmd, firstDiff(got[i].data, want[i].data), got[i], want[i])
			}
			return fmt.Sprintf("step %d: got %v, want %v", i, got[i], want[i])
		}
	}
	return ""
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func concat(parts ...[]step) []step {
	var all []step
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

// busyBehaviour is how the fake controller drives BUSY.
type busyBehaviour int

const (
	busyNeverHigh     busyBehaviour = iota // the common fake: always idle
	busyAnswers                            // high for a few polls after 0x12 and 0x20, as a real controller
	busyStuckHigh                          // pulled up, or a wedged controller
	busyStuckAfterRun                      // answers, but never finishes a 0x20 activation
)

// busyPin is BUSY, driven by what the wire has seen.
type busyPin struct {
	gpiotest.Pin
	h         *harness
	behaviour busyBehaviour
	highFor   int // polls left high; -1 for ever
}

func (p *busyPin) Read() gpio.Level {
	p.h.note(busyWait)
	switch {
	case p.behaviour == busyStuckHigh || p.highFor < 0:
		return gpio.High
	case p.highFor > 0:
		p.highFor--
		return gpio.High
	}
	return gpio.Low
}

// activated is told of each command byte.
func (p *busyPin) activated(c byte) {
	if c != cmdSoftwareReset && c != cmdMasterActivation {
		return
	}
	switch {
	case p.behaviour == busyStuckAfterRun && c == cmdMasterActivation:
		p.highFor = -1
	case p.behaviour == busyAnswers || p.behaviour == busyStuckAfterRun:
		p.highFor = 3
	}
}

// rstPin is RST, noting each level it is driven to.
type rstPin struct {
	gpiotest.Pin
	h *harness
}

func (p *rstPin) Out(l gpio.Level) error {
	p.h.note(rst(l))
	return p.Pin.Out(l)
}

var errWire = errors.New("wire fault")

// wire is the far side of spitest.Record: it reads the DC pin at each
// transfer to tell commands from data, and can fail a chosen transfer.
type wire struct {
	h         *harness
	failAt    int // 1-based transfer that fails with errWire; 0 for none
	transfers int
	freq      physic.Frequency
	mode      spi.Mode
	bits      int
}

func (w *wire) String() string                      { return "wire" }
func (w *wire) Close() error                        { return nil }
func (w *wire) LimitSpeed(f physic.Frequency) error { return nil }
func (w *wire) Duplex() conn.Duplex                 { return conn.Half }
func (w *wire) TxPackets(p []spi.Packet) error      { return errors.New("wire: TxPackets unused") }
func (w *wire) Connect(f physic.Frequency, mode spi.Mode, bits int) (spi.Conn, error) {
	w.freq, w.mode, w.bits = f, mode, bits
	return w, nil
}

func (w *wire) Tx(b, r []byte) error {
	w.transfers++
	if w.transfers == w.failAt {
		return errWire
	}
	h := w.h
	if h.dc.Read() == gpio.Low {
		for _, c := range b {
			h.note(cmd(c))
			h.busy.activated(c)
		}
		return nil
	}
	if n := len(h.steps); n > 0 && h.steps[n-1].kind == cmdStep {
		h.steps[n-1].data = append(h.steps[n-1].data, b...)
		return nil
	}
	h.note(step{kind: strayData, data: append([]byte(nil), b...)})
	return nil
}

type harness struct {
	t      testing.TB
	steps  []step
	rec    *spitest.Record
	wire   *wire
	dc     *gpiotest.Pin
	rst    *rstPin
	busy   *busyPin
	paused time.Duration
}

// newHarness makes a Dev on the fakes and forgets what New itself did.
func newHarness(t testing.TB) (*harness, *Dev) {
	t.Helper()
	h := &harness{t: t, dc: &gpiotest.Pin{N: "DC"}}
	h.wire = &wire{h: h}
	h.rec = &spitest.Record{Port: h.wire}
	h.rst = &rstPin{Pin: gpiotest.Pin{N: "RST"}, h: h}
	h.busy = &busyPin{Pin: gpiotest.Pin{N: "BUSY"}, h: h}
	d, err := New(h.rec, h.dc, h.rst, h.busy)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	d.pause = h.pause
	h.steps = nil
	return h, d
}

// pause stands in for time.Sleep; a driver that waits an hour is looping.
func (h *harness) pause(d time.Duration) {
	h.paused += d
	if h.paused > time.Hour {
		panic("driver paused for over an hour of fake time: an unbounded wait")
	}
}

func (h *harness) note(s step) {
	if s.kind == busyStep && len(h.steps) > 0 && h.steps[len(h.steps)-1].kind == busyStep {
		return
	}
	h.steps = append(h.steps, s)
}

// take returns the steps so far and starts a new list.
func (h *harness) take() []step {
	s := h.steps
	h.steps = nil
	return s
}

// recorded is the bytes spitest.Record saw.
func (h *harness) recorded() int64 {
	var n int64
	for _, op := range h.rec.Ops {
		n += int64(len(op.W))
	}
	return n
}

// describe lists steps one a line, for failure messages.
func describe(steps []step) string {
	var b strings.Builder
	for i, s := range steps {
		fmt.Fprintf(&b, "%3d %v\n", i, s)
	}
	return b.String()
}
