package epd

import (
	"errors"
	"image"
	"strings"
	"testing"
	"time"

	"periph.io/x/conn/v3/conntest"
	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpiotest"
	"periph.io/x/conn/v3/physic"
	"periph.io/x/conn/v3/spi"
	"periph.io/x/conn/v3/spi/spitest"
)

// The reference sequences, written out from Waveshare's driver for this
// panel (e-Paper/RaspberryPi_JetsonNano/c/lib/e-Paper/EPD_2in13_V4.c and
// python/lib/waveshare_epd/epd2in13_V4.py) and the SSD1680 datasheet's
// command table (section 7).

// initSteps is EPD_2in13_V4_Reset then EPD_2in13_V4_Init.
var initSteps = []step{
	rst(gpio.High), rst(gpio.Low), rst(gpio.High), // Reset: high 20 ms, low 2 ms, high 20 ms
	busyWait,                          // ReadBusy
	cmd(0x12),                         // SWRESET: registers to defaults, RAM kept
	busyWait,                          // ReadBusy
	cmd(0x01, 0xF9, 0x00, 0x00),       // Driver output control: 0xF9+1 = 250 gate lines
	cmd(0x11, 0x03),                   // Data entry mode: X and Y increment, X first
	cmd(0x44, 0x00, 0x0F),             // SetWindows: RAM X bytes 0..15 (121>>3)
	cmd(0x45, 0x00, 0x00, 0xF9, 0x00), // SetWindows: RAM Y 0..249, low byte first
	cmd(0x4E, 0x00),                   // SetCursor: X
	cmd(0x4F, 0x00, 0x00),             // SetCursor: Y
	cmd(0x3C, 0x05),                   // BorderWavefrom
	cmd(0x21, 0x00, 0x80),             // Display update control 1: RAM normal, sources S8..S167
	cmd(0x18, 0x80),                   // Temperature sensor: internal
	busyWait,                          // ReadBusy
}

// fullSteps is EPD_2in13_V4_Display_Base (both RAMs, as epd2in13_V4.py
// display() does too) then TurnOnDisplay.
func fullSteps(frame []byte) []step {
	return []step{
		cmd(0x24, frame...), // Write RAM (black/white): the new frame
		cmd(0x26, frame...), // Write RAM (red): the previous frame for later partials
		cmd(0x22, 0xF7),     // Display update control 2: full sequence, display mode 1
		cmd(0x20),           // Master activation
		busyWait,            // ReadBusy
	}
}

// partialSteps is EPD_2in13_V4_Display_Partial then TurnOnDisplay_Partial.
func partialSteps(frame []byte) []step {
	return []step{
		rst(gpio.Low), rst(gpio.High), // Reset: low 1 ms, high
		busyWait,                          // not in the reference: see partialRefresh
		cmd(0x3C, 0x80),                   // BorderWavefrom: hold
		cmd(0x01, 0xF9, 0x00, 0x00),       // Driver output control
		cmd(0x11, 0x03),                   // Data entry mode
		cmd(0x44, 0x00, 0x0F),             // SetWindows: X
		cmd(0x45, 0x00, 0x00, 0xF9, 0x00), // SetWindows: Y
		cmd(0x4E, 0x00),                   // SetCursor: X
		cmd(0x4F, 0x00, 0x00),             // SetCursor: Y
		cmd(0x24, frame...),               // Write RAM (black/white) only
		cmd(0x22, 0xFF),                   // Display update control 2: display mode 2
		cmd(0x20),                         // Master activation
		busyWait,                          // ReadBusy
	}
}

// sleepSteps is EPD_2in13_V4_Sleep.
var sleepSteps = []step{cmd(0x10, 0x01)} // Deep sleep mode 1

type action struct {
	name string
	do   func(*Dev) error
}

func show(name string, img image.Image, partial bool) action {
	kind := "full"
	if partial {
		kind = "partial"
	}
	return action{name: "Show(" + name + ", " + kind + ")", do: func(d *Dev) error { return d.Show(img, partial) }}
}

var sleep = action{name: "Sleep", do: (*Dev).Sleep}

var turnOver = action{name: "SetUpsideDown(true)", do: func(d *Dev) error { d.SetUpsideDown(true); return nil }}

// ramOf packs img as the controller holds it, the right way up.
func ramOf(t *testing.T, img image.Image) []byte {
	ram := make([]byte, testFrameBytes)
	if err := packFrame(ram, img, false); err != nil {
		t.Fatal(err)
	}
	return ram
}

func TestSequences(t *testing.T) {
	white, dots := landscape(), inked(corners...)
	whiteRAM, dotsRAM := whiteRAM(), cornersRAM()
	// A mark near the top right corner, and where a turned-over panel
	// needs it in RAM: as a mark near the bottom left would be.
	mark, markTurned := inked(image.Pt(240, 9)), ramOf(t, inked(image.Pt(9, 112)))
	tests := []struct {
		name    string
		busy    busyBehaviour
		actions []action
		want    []step
	}{
		{
			name:    "first full Show resets and inits",
			actions: []action{show("white", white, false)},
			want:    concat(initSteps, fullSteps(whiteRAM)),
		},
		{
			name:    "first Show is full even when partial is asked",
			actions: []action{show("dots", dots, true)},
			want:    concat(initSteps, fullSteps(dotsRAM)),
		},
		{
			name:    "partial after full",
			actions: []action{show("white", white, false), show("dots", dots, true), show("white", white, true)},
			want:    concat(initSteps, fullSteps(whiteRAM), partialSteps(dotsRAM), partialSteps(whiteRAM)),
		},
		{
			name:    "full after full needs no init",
			actions: []action{show("white", white, false), show("dots", dots, false)},
			want:    concat(initSteps, fullSteps(whiteRAM), fullSteps(dotsRAM)),
		},
		{
			name:    "full after partial inits again",
			actions: []action{show("white", white, false), show("dots", dots, true), show("white", white, false)},
			want:    concat(initSteps, fullSteps(whiteRAM), partialSteps(dotsRAM), initSteps, fullSteps(whiteRAM)),
		},
		{
			name:    "Sleep sends 0x10 0x01",
			actions: []action{show("white", white, false), sleep},
			want:    concat(initSteps, fullSteps(whiteRAM), sleepSteps),
		},
		{
			name:    "after Sleep the next Show resets, inits and is full",
			actions: []action{show("white", white, false), sleep, show("dots", dots, true), show("white", white, true)},
			want:    concat(initSteps, fullSteps(whiteRAM), sleepSteps, initSteps, fullSteps(dotsRAM), partialSteps(whiteRAM)),
		},
		{
			name:    "Sleep twice sends once",
			actions: []action{show("white", white, false), sleep, sleep},
			want:    concat(initSteps, fullSteps(whiteRAM), sleepSteps),
		},
		{
			name:    "a panel mounted upside down gets every frame turned over",
			actions: []action{turnOver, show("mark", mark, false), show("white", white, true)},
			want:    concat(initSteps, fullSteps(markTurned), partialSteps(whiteRAM)),
		},
		{
			name:    "a real BUSY rising and falling changes nothing sent",
			busy:    busyAnswers,
			actions: []action{show("white", white, false), show("dots", dots, true)},
			want:    concat(initSteps, fullSteps(whiteRAM), partialSteps(dotsRAM)),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, d := newHarness(t)
			h.busy.behaviour = tc.busy
			for _, a := range tc.actions {
				if err := a.do(d); err != nil {
					t.Fatalf("%s = %v", a.name, err)
				}
			}
			got := h.take()
			if diff := diffSteps(got, tc.want); diff != "" {
				t.Errorf("%s:\n%s\ngot:\n%s", tc.name, diff, describe(got))
			}
			if h.paused > time.Minute {
				t.Errorf("%s paused %v of fake time, want well under a minute", tc.name, h.paused)
			}
		})
	}
}

func TestNewConfiguresPortAndPins(t *testing.T) {
	h, _ := newHarness(t)
	if h.wire.freq != 4*physic.MegaHertz || h.wire.mode != spi.Mode0 || h.wire.bits != 8 {
		t.Errorf("Connect(%v, %v, %d), want Connect(4MHz, Mode0, 8)", h.wire.freq, h.wire.mode, h.wire.bits)
	}
	if h.rst.L != gpio.High {
		t.Errorf("RST after New = %v, want High (not held in reset)", h.rst.L)
	}
	if h.busy.P != gpio.PullDown {
		t.Errorf("BUSY pull after New = %v, want PullDown", h.busy.P)
	}
	if len(h.rec.Ops) != 0 {
		t.Errorf("New sent %d transfers, want none", len(h.rec.Ops))
	}
}

// failingPort cannot connect.
type failingPort struct{ spitest.Record }

func (p *failingPort) Connect(physic.Frequency, spi.Mode, int) (spi.Conn, error) {
	return nil, errWire
}

func TestNewErrors(t *testing.T) {
	pin := func() *gpiotest.Pin { return &gpiotest.Pin{} }
	if _, err := New(&failingPort{}, pin(), pin(), pin()); !errors.Is(err, errWire) {
		t.Errorf("New(port that cannot connect) = %v, want it wrapping %v", err, errWire)
	}
	// gpiotest refuses edge detection without a channel; New asks for none.
	if _, err := New(&spitest.Record{}, pin(), pin(), pin()); err != nil {
		t.Errorf("New(fakes) = %v", err)
	}
}

func TestSentCounts(t *testing.T) {
	h, d := newHarness(t)
	white, dots := landscape(), inked(corners...)
	tests := []struct {
		name string
		do   func() error
		want int64
	}{
		// init: 1+4+2+3+5+2+3+2+3+2 bytes; full: two 4001-byte RAM writes, 0x22 0xF7, 0x20.
		{"first full Show (init + frame)", func() error { return d.Show(white, false) }, 27 + 8005},
		{"full Show", func() error { return d.Show(dots, false) }, 8005},
		// 0x3C, 0x01, 0x11, window and cursor: 21 bytes; one 4001-byte RAM write; 0x22 0xFF, 0x20.
		{"partial Show", func() error { return d.Show(white, true) }, 4025},
		{"Sleep", d.Sleep, 2},
		{"Sleep again", d.Sleep, 0},
	}
	for _, tc := range tests {
		before := d.Sent()
		if err := tc.do(); err != nil {
			t.Fatalf("%s = %v", tc.name, err)
		}
		if got := d.Sent() - before; got != tc.want {
			t.Errorf("%s sent %d bytes, want %d", tc.name, got, tc.want)
		}
	}
	if got, rec := d.Sent(), h.recorded(); got != rec {
		t.Errorf("Sent() = %d, spitest.Record saw %d", got, rec)
	}
	t.Logf("bytes per update: full %d (%d with init), partial %d", 8005, 27+8005, 4025)
}

// limitedRecord is a spitest.Record whose port, like spidev, caps a transfer.
type limitedRecord struct {
	spitest.Record
	limit int
}

type limitedConn struct {
	spi.Conn
	limit int
}

func (c limitedConn) MaxTxSize() int { return c.limit }

func (p *limitedRecord) Connect(f physic.Frequency, mode spi.Mode, bits int) (spi.Conn, error) {
	c, err := p.Record.Connect(f, mode, bits)
	return limitedConn{Conn: c, limit: p.limit}, err
}

func TestTransfersRespectPortLimit(t *testing.T) {
	port := &limitedRecord{limit: 1000}
	d, err := New(port, &gpiotest.Pin{}, &gpiotest.Pin{}, &gpiotest.Pin{})
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	d.pause = func(time.Duration) {}
	if err := d.Show(landscape(), false); err != nil {
		t.Fatalf("Show() = %v", err)
	}
	var total int
	for i, op := range port.Ops {
		if len(op.W) > 1000 {
			t.Errorf("transfer %d is %d bytes, over the port's limit of 1000", i, len(op.W))
		}
		total += len(op.W)
	}
	if int64(total) != d.Sent() || total != 27+8005 {
		t.Errorf("sent %d bytes in pieces, Sent() = %d, want %d", total, d.Sent(), 27+8005)
	}
}

func TestSleepPlayback(t *testing.T) {
	// The exact transfers of EPD_2in13_V4_Sleep: command, then its parameter.
	port := &spitest.Playback{Playback: conntest.Playback{
		Ops:       []conntest.IO{{W: []byte{0x10}}, {W: []byte{0x01}}},
		DontPanic: true,
	}}
	dc := &gpiotest.Pin{}
	d, err := New(port, dc, &gpiotest.Pin{}, &gpiotest.Pin{})
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	var paused time.Duration
	d.pause = func(p time.Duration) { paused += p }
	if err := d.Sleep(); err != nil {
		t.Fatalf("Sleep() = %v", err)
	}
	if err := port.Close(); err != nil {
		t.Errorf("playback after Sleep: %v", err)
	}
	if dc.L != gpio.High {
		t.Errorf("DC after the sleep parameter = %v, want High (data)", dc.L)
	}
	if paused != 100*time.Millisecond {
		t.Errorf("Sleep paused %v, want the reference's 100ms", paused)
	}
}

func TestBusyTimeouts(t *testing.T) {
	tests := []struct {
		name      string
		behaviour busyBehaviour
		warm      bool // a full frame shown first, so the Show under test is partial
		timeout   string
	}{
		{"BUSY never low: reset wait gives up", busyStuckHigh, false, "5s"},
		{"full refresh never finishes", busyStuckAfterRun, false, "10s"},
		{"partial refresh never finishes", busyStuckAfterRun, true, "3s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, d := newHarness(t)
			if tc.warm {
				if err := d.Show(landscape(), false); err != nil {
					t.Fatalf("warm-up Show = %v", err)
				}
			}
			h.busy.behaviour = tc.behaviour
			h.paused = 0
			err := d.Show(inked(corners...), true)
			if !errors.Is(err, ErrBusyTimeout) {
				t.Fatalf("Show with %s = %v, want ErrBusyTimeout", tc.name, err)
			}
			if !strings.Contains(err.Error(), tc.timeout) {
				t.Errorf("Show error %q does not name the %s timeout", err, tc.timeout)
			}
			if h.paused > 11*time.Second {
				t.Errorf("Show waited %v of fake time, want it bounded by the timeout", h.paused)
			}
			// The failed update leaves the controller unknown: the next Show
			// starts again from a reset and a full refresh.
			h.busy.behaviour, h.busy.highFor = busyNeverHigh, 0
			h.take()
			if err := d.Show(landscape(), true); err != nil {
				t.Fatalf("Show after the timeout = %v", err)
			}
			if diff := diffSteps(h.take(), concat(initSteps, fullSteps(whiteRAM()))); diff != "" {
				t.Errorf("Show after a timeout: %s", diff)
			}
		})
	}
}

func TestSPIErrorsAreWrapped(t *testing.T) {
	// Transfer numbers on a cold Show: 1 is SWRESET, 2 the 0x01 command, 19
	// the 0x18 parameter, 21 the 0x24 frame data, 23 the 0x26 frame data,
	// 26 the master activation.
	for _, failAt := range []int{1, 2, 19, 21, 23, 26} {
		h, d := newHarness(t)
		h.wire.failAt = failAt
		err := d.Show(landscape(), false)
		if !errors.Is(err, errWire) {
			t.Errorf("Show with transfer %d failing = %v, want it wrapping %v", failAt, err, errWire)
			continue
		}
		if !strings.Contains(err.Error(), "command 0x") {
			t.Errorf("Show with transfer %d failing = %q, want the command named", failAt, err)
		}
	}
	h, d := newHarness(t)
	h.wire.failAt = 1
	if err := d.Sleep(); !errors.Is(err, errWire) {
		t.Errorf("Sleep with the wire failing = %v, want it wrapping %v", err, errWire)
	}
}

// TestCloseReleasesOnceAndRefusesAfter: what Close does beyond the
// display suite's (panel's TestDisplays: asleep, twice is no fault).
func TestCloseReleasesOnceAndRefusesAfter(t *testing.T) {
	_, d := newHarness(t)
	released := 0
	d.release = func() error { released++; return nil }
	for range 2 {
		if err := d.Close(); err != nil {
			t.Fatalf("Close() = %v", err)
		}
	}
	if released != 1 {
		t.Errorf("release ran %d times, want once", released)
	}
	if err := d.Show(landscape(), false); !errors.Is(err, ErrClosed) {
		t.Errorf("Show after Close = %v, want ErrClosed", err)
	}
	if err := d.Sleep(); !errors.Is(err, ErrClosed) {
		t.Errorf("Sleep after Close = %v, want ErrClosed", err)
	}
}

func TestNameAndBounds(t *testing.T) {
	_, d := newHarness(t)
	if got := d.Name(); got != "waveshare-2in13-v4" {
		t.Errorf("Name() = %q", got)
	}
	if got := d.Bounds(); got != image.Rect(0, 0, 250, 122) {
		t.Errorf("Bounds() = %v, want (0,0)-(250,122)", got)
	}
}

// discardPort takes every transfer and keeps nothing, for benchmarks.
type discardPort struct{ conntest.Discard }

func (p *discardPort) Close() error                      { return nil }
func (p *discardPort) LimitSpeed(physic.Frequency) error { return nil }
func (p *discardPort) TxPackets(pk []spi.Packet) error   { return nil }
func (p *discardPort) Connect(physic.Frequency, spi.Mode, int) (spi.Conn, error) {
	return p, nil
}

func benchmarkShow(b *testing.B, partial bool) {
	d, err := New(&discardPort{}, &gpiotest.Pin{}, &gpiotest.Pin{}, &gpiotest.Pin{})
	if err != nil {
		b.Fatal(err)
	}
	d.pause = func(time.Duration) {}
	frames := []image.Image{landscape(), inked(corners...)}
	if err := d.Show(frames[0], false); err != nil {
		b.Fatal(err)
	}
	before, n := d.Sent(), 0
	for b.Loop() {
		if err := d.Show(frames[n%2], partial); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(d.Sent()-before)/float64(n), "bytes/update")
}

func BenchmarkFull(b *testing.B)    { benchmarkShow(b, false) }
func BenchmarkPartial(b *testing.B) { benchmarkShow(b, true) }
