// Package epdtest is a Waveshare 2.13" V4 controller (an SSD1680) behind
// periph.io's fakes: an SPI port and the DC, RST and BUSY pins that
// [epd.New] takes. It plays the controller's side of the wire as
// Waveshare's reference driver (EPD_2in13_V4.c, epd2in13_V4.py) and the
// datasheet describe it: a command byte with DC low, its parameters with
// DC high; a hardware reset wakes it from deep sleep and clears its
// registers; a software reset, the driver output, data entry mode and RAM
// window come before the frame; a frame is exactly 250 rows of 16 bytes;
// an activation (0x22 then 0x20) puts the black/white RAM on the glass;
// 0x10 puts it to sleep, where it hears nothing until the next reset.
// What breaks that protocol is written down as a violation, so a test of
// a display (panel/displaytest) can read back what the glass shows and
// whether the driver kept to the sequence, without the hardware.
//
// It is an oracle written from the reference driver, not from package
// epd: the frame on the glass is read from the RAM as getbuffer lays it
// out (landscape pixel (x, y) at RAM row 249-x, column y, 0 for ink).
package epdtest

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"sync"

	"periph.io/x/conn/v3"
	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpiotest"
	"periph.io/x/conn/v3/physic"
	"periph.io/x/conn/v3/spi"
)

// The panel's geometry: 122 source lines (16 bytes a RAM row), 250 gate
// lines; the landscape frame is 250×122.
const (
	gateLines  = 250
	rowBytes   = 16
	frameBytes = gateLines * rowBytes
	frameWidth = gateLines
	frameLines = 122
)

// maxTx is spidev's default buffer, which a driver must split its frame to.
const maxTx = 4096

// ErrWire is what every transfer returns while [Controller.Fault] is on.
var ErrWire = errors.New("epdtest: the SPI wire is cut")

// The SSD1680 commands of Waveshare's sequences.
const (
	cmdDriverOutput     = 0x01
	cmdDeepSleep        = 0x10
	cmdDataEntry        = 0x11
	cmdSoftwareReset    = 0x12
	cmdTemperature      = 0x18
	cmdActivate         = 0x20
	cmdUpdateControl1   = 0x21
	cmdUpdateControl2   = 0x22
	cmdWriteBlackWhite  = 0x24
	cmdWriteRed         = 0x26
	cmdBorder           = 0x3C
	cmdRAMXRange        = 0x44
	cmdRAMYRange        = 0x45
	cmdRAMXCounter      = 0x4E
	cmdRAMYCounter      = 0x4F
	updateFull          = 0xF7
	updatePartial       = 0xFF
	updateLoadWaveforms = 0xB1
)

// expected are the parameters Waveshare sends for the commands that set
// up the RAM: a frame written under others lands elsewhere on the glass.
var expected = map[byte]string{
	cmdDriverOutput:   "\xF9\x00\x00",
	cmdDataEntry:      "\x03",
	cmdRAMXRange:      "\x00\x0F",
	cmdRAMYRange:      "\x00\x00\xF9\x00",
	cmdRAMXCounter:    "\x00",
	cmdRAMYCounter:    "\x00\x00",
	cmdDeepSleep:      "\x01",
	cmdTemperature:    "\x80",
	cmdUpdateControl1: "\x00\x80",
}

// Controller is the fake controller. Hand [Controller.Port] and the pins
// to epd.New; read back with [Controller.Shown], [Controller.Asleep] and
// [Controller.Sent].
type Controller struct {
	mu sync.Mutex

	dc   *gpiotest.Pin
	rst  *resetPin
	busy *gpiotest.Pin

	fault bool
	sent  int64

	asleep bool
	// woken: a software reset since the controller was powered or slept,
	// which Init always sends and a full refresh needs.
	woken bool
	// registers are the parameters last sent for each command since the
	// last hardware or software reset.
	registers map[byte][]byte
	// pending is the command whose parameters are still arriving.
	pending    []byte
	blackWhite []byte
	// shown is the RAM last put on the glass; nil before the first.
	shown      []byte
	refreshes  int
	violations []string
}

// New is a controller powered and never reset, showing nothing.
func New() *Controller {
	c := &Controller{
		dc:        &gpiotest.Pin{N: "DC"},
		busy:      &gpiotest.Pin{N: "BUSY", L: gpio.Low},
		registers: map[byte][]byte{},
	}
	c.rst = &resetPin{Pin: gpiotest.Pin{N: "RST", L: gpio.High}, c: c}
	return c
}

// Port is the SPI port the controller listens on.
func (c *Controller) Port() spi.Port { return port{c} }

// DC is the data/command pin (low: command).
func (c *Controller) DC() gpio.PinIO { return c.dc }

// RST is the reset pin (a low pulse resets the controller).
func (c *Controller) RST() gpio.PinIO { return c.rst }

// BUSY is the busy pin; this controller finishes at once, so it reads low.
func (c *Controller) BUSY() gpio.PinIO { return c.busy }

// Fault cuts the wire (every transfer fails with [ErrWire]) or mends it.
func (c *Controller) Fault(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fault = on
}

// Sent is the bytes that reached the controller, commands and data.
func (c *Controller) Sent() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent
}

// Refreshes is how many activations put a frame on the glass.
func (c *Controller) Refreshes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finish()
	return c.refreshes
}

// Asleep reports whether the last thing the controller heard was a deep
// sleep command.
func (c *Controller) Asleep() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finish()
	return c.asleep
}

// Shown is the landscape frame on the glass, ink black on white paper:
// nil before the first refresh. The error lists every breach of the
// protocol the driver made so far.
func (c *Controller) Shown() (image.Image, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finish()
	var err error
	if len(c.violations) > 0 {
		err = fmt.Errorf("the driver broke Waveshare's sequence: %q", c.violations)
	}
	if c.shown == nil {
		return nil, err
	}
	img := image.NewGray(image.Rect(0, 0, frameWidth, frameLines))
	for row := range gateLines {
		for col := range frameLines {
			paper := c.shown[row*rowBytes+col/8]&(0x80>>(col%8)) != 0
			if !paper {
				continue
			}
			img.SetGray(gateLines-1-row, col, color.Gray{Y: 255})
		}
	}
	return img, err
}

func (c *Controller) violate(format string, args ...any) {
	c.violations = append(c.violations, fmt.Sprintf(format, args...))
}

// hardReset is a low pulse on RST ending: the controller wakes from deep
// sleep and its registers go back to their defaults; its RAM is kept.
func (c *Controller) hardReset() {
	c.finish()
	c.asleep = false
	c.registers = map[byte][]byte{}
}

// receive takes one transfer off the wire.
func (c *Controller) receive(w []byte) error {
	if c.fault {
		return ErrWire
	}
	c.sent += int64(len(w))
	if c.dc.Read() == gpio.High {
		if c.pending == nil {
			c.violate("%d bytes of data with no command before them", len(w))
			return nil
		}
		c.pending = append(c.pending, w...)
		return nil
	}
	for _, b := range w {
		c.finish()
		c.pending = []byte{b}
	}
	return nil
}

// finish acts on the pending command once its parameters are all in: at
// the next command byte, a reset, or when the test reads the controller.
func (c *Controller) finish() {
	if c.pending == nil {
		return
	}
	cmd, data := c.pending[0], c.pending[1:]
	c.pending = nil
	if c.asleep {
		c.violate("command 0x%02X in deep sleep: only a hardware reset wakes the controller", cmd)
		return
	}
	if want, ok := expected[cmd]; ok && string(data) != want {
		c.violate("command 0x%02X with % X, want % X", cmd, data, want)
	}
	switch cmd {
	case cmdSoftwareReset:
		c.registers = map[byte][]byte{}
		c.woken = true
		return
	case cmdDeepSleep:
		c.asleep, c.woken = true, false
		return
	case cmdWriteBlackWhite, cmdWriteRed:
		c.writeRAM(cmd, data)
		return
	case cmdActivate:
		c.activate()
		return
	case cmdDriverOutput, cmdDataEntry, cmdTemperature, cmdUpdateControl1, cmdUpdateControl2,
		cmdBorder, cmdRAMXRange, cmdRAMYRange, cmdRAMXCounter, cmdRAMYCounter:
	default:
		c.violate("command 0x%02X is none of the 2.13\" V4's", cmd)
	}
	c.registers[cmd] = data
}

// writeRAM takes a frame into one of the RAMs, checking that the window
// it lands in is the whole panel and that it fills it exactly.
func (c *Controller) writeRAM(cmd byte, data []byte) {
	for _, setup := range []byte{cmdDriverOutput, cmdDataEntry, cmdRAMXRange, cmdRAMYRange, cmdRAMXCounter, cmdRAMYCounter} {
		if _, ok := c.registers[setup]; !ok {
			c.violate("RAM write 0x%02X before 0x%02X was set since the last reset", cmd, setup)
		}
	}
	if len(data) != frameBytes {
		c.violate("RAM write 0x%02X of %d bytes, want %d (%d rows of %d)", cmd, len(data), frameBytes, gateLines, rowBytes)
		return
	}
	if cmd == cmdWriteBlackWhite {
		c.blackWhite = append([]byte(nil), data...)
	}
}

// activate runs the update 0x22 chose: a full one needs Init's registers
// and a software reset since the last sleep; a partial one a frame
// already on the glass to differ from.
func (c *Controller) activate() {
	mode, ok := c.registers[cmdUpdateControl2]
	switch {
	case !ok || len(mode) != 1:
		c.violate("activation 0x20 with no update sequence chosen (0x22) since the last reset")
		return
	case mode[0] == updateLoadWaveforms:
		return
	case mode[0] == updateFull:
		if !c.woken {
			c.violate("full refresh without a software reset (0x12) since power-on or sleep")
		}
		for _, init := range []byte{cmdBorder, cmdUpdateControl1, cmdTemperature} {
			if _, ok := c.registers[init]; !ok {
				c.violate("full refresh without Init's 0x%02X since the last reset", init)
			}
		}
	case mode[0] == updatePartial:
		if c.shown == nil {
			c.violate("partial refresh with no frame on the glass to differ from")
		}
	default:
		c.violate("activation with update sequence 0x%02X, want 0x%02X or 0x%02X", mode[0], updateFull, updatePartial)
		return
	}
	if c.blackWhite == nil {
		c.violate("refresh before any frame was written")
		return
	}
	c.shown = append(c.shown[:0], c.blackWhite...)
	c.refreshes++
}

// resetPin is RST: a rising edge ends a reset pulse.
type resetPin struct {
	gpiotest.Pin
	c *Controller
}

// Out implements gpio.PinOut.
func (p *resetPin) Out(l gpio.Level) error {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if was := p.Pin.Read(); was == gpio.Low && l == gpio.High {
		p.c.hardReset()
	}
	return p.Pin.Out(l)
}

// port is the SPI side of the controller: Mode 0, 8 bits, half duplex.
type port struct{ c *Controller }

func (p port) String() string                    { return "epdtest" }
func (p port) Close() error                      { return nil }
func (p port) LimitSpeed(physic.Frequency) error { return nil }
func (p port) Duplex() conn.Duplex               { return conn.Half }
func (p port) MaxTxSize() int                    { return maxTx }
func (p port) TxPackets([]spi.Packet) error {
	return errors.New("epdtest: the reference driver sends no packets")
}

// Connect implements spi.Port: the SSD1680 takes Mode 0, 8-bit words, at
// up to 20 MHz.
func (p port) Connect(f physic.Frequency, mode spi.Mode, bits int) (spi.Conn, error) {
	if mode != spi.Mode0 || bits != 8 || f > 20*physic.MegaHertz {
		return nil, fmt.Errorf("epdtest: the SSD1680 takes mode 0, 8 bits, at most 20 MHz, not %v, %d bits, %v", mode, bits, f)
	}
	return p, nil
}

// Tx implements spi.Conn.
func (p port) Tx(w, r []byte) error {
	if len(w) > maxTx {
		return fmt.Errorf("epdtest: a transfer of %d bytes is over spidev's %d", len(w), maxTx)
	}
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	return p.c.receive(w)
}
