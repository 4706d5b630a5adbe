package epd

import (
	"errors"
	"fmt"
	"image"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"periph.io/x/conn/v3"
	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/physic"
	"periph.io/x/conn/v3/spi"
	"periph.io/x/devices/v3/waveshare2in13v4"
)

// Errors callers can test for with errors.Is.
var (
	// ErrBusyTimeout: the BUSY line did not go low within its bound. The
	// display is absent, unpowered, wedged, or BUSY is wired wrongly.
	ErrBusyTimeout = errors.New("display busy timeout")
	// ErrImageSize: Show was given a nil image or one that is not 250×122.
	ErrImageSize = errors.New("image is not the panel's size")
	// ErrClosed: the Dev was closed.
	ErrClosed = errors.New("display closed")
	// ErrSPIDisabled: /dev/spidev0.0 does not exist.
	ErrSPIDisabled = errors.New("SPI is not enabled")
	// ErrNoDisplay: nothing on the header raised BUSY when asked to work.
	ErrNoDisplay = errors.New("no display answered")
)

// panel is the controller's RAM as the pinned periph driver describes it:
// 122 source lines across (rounded up to 16 bytes a row), 250 gate lines
// down. The pet's landscape frame is this turned on its side.
var panel = waveshare2in13v4.EPD2in13v4

// spiClock is Waveshare's max_speed_hz for this HAT.
const spiClock = 4 * physic.MegaHertz

// state is what the controller holds, which decides what Show must send.
type state int

const (
	// stateCold: after New or a failed update; the controller may be in any
	// state, so the next frame resets and inits it and is full.
	stateCold state = iota
	// stateAsleep: in deep sleep; as stateCold, and Sleep has nothing to do.
	stateAsleep
	// stateFull: the last frame was a full refresh; init's registers stand.
	stateFull
	// statePartial: the last frame was partial; its reset pulse cleared
	// init's registers (border, temperature sensor), so a full refresh
	// inits again first.
	statePartial
)

// Dev is one Waveshare 2.13" V4 display. Its methods are safe for concurrent
// use; Show holds the display for the length of a refresh.
type Dev struct {
	conn  spi.Conn
	maxTx int
	dc    gpio.PinOut
	rst   gpio.PinOut
	busy  gpio.PinIn
	sent  atomic.Int64

	// pause is how the driver waits (reset pulses, BUSY polls); tests
	// replace it so they never sleep.
	pause func(time.Duration)
	// release powers the HAT down and closes the port when Open made them.
	release func() error

	mu         sync.Mutex
	state      state
	closed     bool
	upsideDown bool
	frame      []byte
	cmdBuf     [1]byte
}

// New drives a display on the given SPI port (Mode 0 at 4 MHz) and pins: DC
// selects command (low) or data (high), RST resets the controller when low,
// BUSY is high while the controller works. New sends nothing; the first Show
// resets and initializes the controller.
func New(port spi.Port, dc, rst gpio.PinOut, busy gpio.PinIn) (*Dev, error) {
	c, err := port.Connect(spiClock, spi.Mode0, 8)
	if err != nil {
		return nil, fmt.Errorf("connect SPI at %v mode 0: %w", spiClock, err)
	}
	// Pulled down, so an absent display reads idle instead of floating and
	// Probe can tell it never raised BUSY.
	if err := busy.In(gpio.PullDown, gpio.NoEdge); err != nil {
		return nil, fmt.Errorf("set BUSY %s as input: %w", busy, err)
	}
	if err := rst.Out(gpio.High); err != nil {
		return nil, fmt.Errorf("set RST %s high: %w", rst, err)
	}
	maxTx := math.MaxInt
	if l, ok := c.(conn.Limits); ok && l.MaxTxSize() > 0 {
		maxTx = l.MaxTxSize()
	}
	return &Dev{
		conn:  c,
		maxTx: maxTx,
		dc:    dc,
		rst:   rst,
		busy:  busy,
		pause: time.Sleep,
		frame: make([]byte, frameBytes),
	}, nil
}

// Name is the display's name for status and logs.
func (d *Dev) Name() string { return "waveshare-2in13-v4" }

// Bounds is the landscape frame Show takes: 250×122.
func (d *Dev) Bounds() image.Rectangle { return image.Rect(0, 0, frameWidth, frameHeight) }

// Sent reports the bytes sent over SPI so far, commands and data.
func (d *Dev) Sent() int64 { return d.sent.Load() }

// SetUpsideDown turns every later frame by 180° before it is sent, for a
// HAT mounted with its connector at the top (the screen turned over).
func (d *Dev) SetUpsideDown(on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.upsideDown = on
}

// Show draws img, a landscape 250×122 image as the pet renders it; pixels
// darker than mid-grey are ink, transparent ones paper. The frame is
// rotated into the controller's portrait RAM before anything is sent, so a
// bad image leaves the display untouched.
//
// With partial false it is a full refresh (the panel flashes; ghosting is
// cleared): after New, Sleep, a failed update or a partial one, the
// controller is first reset and initialized. The frame goes into both RAMs.
//
// With partial true it is a partial refresh (about 0.3 s, no flash), which
// drives only the pixels that differ from the previous frame held in the
// controller's RAM. The first frame after New, Sleep or a failed update has
// no previous frame to differ from, so it is always full, whatever partial
// says. Partial refreshes slowly ghost; the caller bounds them with a
// periodic full one.
func (d *Dev) Show(img image.Image, partial bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if err := packFrame(d.frame, img, d.upsideDown); err != nil {
		return err
	}
	s := sequence{d: d}
	next := stateFull
	switch {
	case partial && (d.state == stateFull || d.state == statePartial):
		s.partialRefresh(d.frame)
		next = statePartial
	case d.state == stateFull:
		s.fullRefresh(d.frame)
	default:
		// A fresh init leaves no known frame in RAM, so this one is full
		// even if partial was asked for.
		s.initialize()
		s.fullRefresh(d.frame)
	}
	if s.err != nil {
		d.state = stateCold
		return fmt.Errorf("show on %s: %w", d.Name(), s.err)
	}
	d.state = next
	return nil
}

// Sleep puts the controller in deep sleep (0x10 0x01), where it draws almost
// nothing and the image stays on the glass. The next Show wakes it with a
// reset and init and is a full refresh. Sleeping twice sends nothing.
func (d *Dev) Sleep() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	return d.sleep()
}

func (d *Dev) sleep() error {
	if d.state == stateAsleep {
		return nil
	}
	s := sequence{d: d}
	s.deepSleep()
	if s.err != nil {
		d.state = stateCold
		return fmt.Errorf("sleep %s: %w", d.Name(), s.err)
	}
	d.state = stateAsleep
	return nil
}

// Close puts the controller to sleep and, for a Dev from Open, switches
// the HAT's power off and closes the SPI port. A port given to New stays the
// caller's to close. Closing twice does nothing.
func (d *Dev) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	err := d.sleep()
	if d.release != nil {
		err = errors.Join(err, d.release())
	}
	return err
}

// transfer writes w in pieces no larger than the port allows (spidev's
// buffer is 4096 bytes by default) and counts what went out.
func (d *Dev) transfer(w []byte) error {
	for len(w) > 0 {
		n := min(len(w), d.maxTx)
		if err := d.conn.Tx(w[:n], nil); err != nil {
			return fmt.Errorf("SPI write of %d bytes: %w", n, err)
		}
		d.sent.Add(int64(n))
		w = w[n:]
	}
	return nil
}
