package epd

import (
	"fmt"
	"time"

	"periph.io/x/conn/v3/gpio"
)

// SSD1680 commands used by the sequences below (datasheet section 7, command
// table).
const (
	cmdDriverOutput       byte = 0x01 // gate lines (MUX) and scan direction
	cmdDeepSleep          byte = 0x10
	cmdDataEntryMode      byte = 0x11 // RAM address increment direction
	cmdSoftwareReset      byte = 0x12
	cmdTemperatureSensor  byte = 0x18
	cmdMasterActivation   byte = 0x20 // run the sequence chosen with 0x22
	cmdUpdateControl1     byte = 0x21 // RAM options and source output range
	cmdUpdateControl2     byte = 0x22 // which steps an activation runs
	cmdWriteBlackWhiteRAM byte = 0x24 // the new image
	cmdWriteRedRAM        byte = 0x26 // on a black/white panel: the previous image
	cmdBorderWaveform     byte = 0x3C
	cmdRAMXRange          byte = 0x44 // window start/end, in bytes
	cmdRAMYRange          byte = 0x45 // window start/end, in gate lines
	cmdRAMXCounter        byte = 0x4E
	cmdRAMYCounter        byte = 0x4F
)

// Parameters, as Waveshare's epd2in13_V4 sends them.
const (
	dataEntryXYIncrement  byte = 0x03 // X then Y increment: rows of bytes, top to bottom
	borderFollowLUT       byte = 0x05 // full refresh: the border follows the LUT (white)
	borderHoldVSS         byte = 0x80 // partial refresh: leave the border alone
	sourceS8ToS167        byte = 0x80 // 0x21 B[7]: the 122 source lines sit at S8..
	internalTemperature   byte = 0x80 // 0x18: the built-in sensor
	deepSleepMode1        byte = 0x01 // keep RAM, lowest current
	updateFull            byte = 0xF7 // clock, analog, temperature, LUT mode 1, display, off
	updatePartial         byte = 0xFF // the same with display mode 2 (differential)
	updateLoadTemperature byte = 0xB1 // clock, temperature, LUT load, off: no display
)

// Pauses and bounds. Waveshare's ReadBusy polls every 10 ms without a bound;
// here every wait gives up, so a missing display is an error, not a hang.
const (
	busyPoll = 10 * time.Millisecond
	// initTimeout bounds the waits of reset and init (each takes a few ms).
	initTimeout = 5 * time.Second
	// fullTimeout bounds a full refresh, about 2 s at room temperature and
	// longer in the cold.
	fullTimeout = 10 * time.Second
	// partialTimeout bounds a partial refresh, about 0.3 s.
	partialTimeout = 3 * time.Second
	// sleepSettle is how long EPD_2in13_V4_Sleep waits after 0x10.
	sleepSettle = 100 * time.Millisecond
)

// phase is one level of a reset pulse on RST and how long it is held.
type phase struct {
	level gpio.Level
	hold  time.Duration
}

var (
	// fullReset is EPD_2in13_V4_Reset: high 20 ms, low 2 ms, high 20 ms.
	fullReset = []phase{{gpio.High, 20 * time.Millisecond}, {gpio.Low, 2 * time.Millisecond}, {gpio.High, 20 * time.Millisecond}}
	// partialReset is the shorter pulse Display_Partial starts with.
	partialReset = []phase{{gpio.Low, time.Millisecond}, {gpio.High, 0}}
)

// sequence sends a run of steps to the controller and keeps the first error,
// so each sequence reads like the reference function it follows.
type sequence struct {
	d   *Dev
	err error
}

// command sends one command byte with DC low and then its parameters with DC
// high, as Waveshare's send_command/send_data do. Chip select is SPI0 CE0,
// which the kernel asserts around each transfer.
func (s *sequence) command(cmd byte, data ...byte) {
	if s.err != nil {
		return
	}
	if err := s.d.dc.Out(gpio.Low); err != nil {
		s.err = fmt.Errorf("command 0x%02X: set DC low: %w", cmd, err)
		return
	}
	s.d.cmdBuf[0] = cmd
	if err := s.d.transfer(s.d.cmdBuf[:]); err != nil {
		s.err = fmt.Errorf("command 0x%02X: %w", cmd, err)
		return
	}
	if len(data) == 0 {
		return
	}
	if err := s.d.dc.Out(gpio.High); err != nil {
		s.err = fmt.Errorf("command 0x%02X: set DC high: %w", cmd, err)
		return
	}
	if err := s.d.transfer(data); err != nil {
		s.err = fmt.Errorf("command 0x%02X: %d data bytes: %w", cmd, len(data), err)
	}
}

// reset drives RST through the phases of a pulse (low is reset).
func (s *sequence) reset(pulse []phase) {
	for _, p := range pulse {
		if s.err != nil {
			return
		}
		if err := s.d.rst.Out(p.level); err != nil {
			s.err = fmt.Errorf("hardware reset: set RST %s: %w", p.level, err)
			return
		}
		s.d.pause(p.hold)
	}
}

// waitIdle waits for BUSY to go low (high is busy on this panel), giving up
// after timeout; what names the step for the error.
func (s *sequence) waitIdle(timeout time.Duration, what string) time.Duration {
	if s.err != nil {
		return 0
	}
	waited, err := s.d.waitIdle(timeout)
	if err != nil {
		s.err = fmt.Errorf("%s: %w", what, err)
	}
	return waited
}

// waitIdle polls BUSY every busyPoll until it is low. The bound counts the
// pauses taken, so the real wait is at least timeout and at most a poll
// longer, and an injected pause makes it instant in tests.
func (d *Dev) waitIdle(timeout time.Duration) (time.Duration, error) {
	var waited time.Duration
	for d.busy.Read() == gpio.High {
		if waited >= timeout {
			return waited, fmt.Errorf("%w: BUSY still high after %v", ErrBusyTimeout, timeout)
		}
		d.pause(busyPoll)
		waited += busyPoll
	}
	return waited, nil
}

// setWindow selects the whole RAM and puts the address counter at its start
// (SetWindows and SetCursor in the reference).
func (s *sequence) setWindow() {
	lastXByte := byte((panel.Width - 1) >> 3)
	lastY := panel.Height - 1
	s.command(cmdRAMXRange, 0x00, lastXByte)
	s.command(cmdRAMYRange, 0x00, 0x00, byte(lastY), byte(lastY>>8))
	s.command(cmdRAMXCounter, 0x00)
	s.command(cmdRAMYCounter, 0x00, 0x00)
}

// driverOutput sets the gate count (250 lines, MUX = 249) and scan order.
func (s *sequence) driverOutput() {
	lastY := panel.Height - 1
	s.command(cmdDriverOutput, byte(lastY), byte(lastY>>8), 0x00)
}

// initialize is EPD_2in13_V4_Reset followed by EPD_2in13_V4_Init.
func (s *sequence) initialize() {
	s.reset(fullReset)
	s.waitIdle(initTimeout, "wait after hardware reset")
	s.command(cmdSoftwareReset)
	s.waitIdle(initTimeout, "software reset")
	s.driverOutput()
	s.command(cmdDataEntryMode, dataEntryXYIncrement)
	s.setWindow()
	s.command(cmdBorderWaveform, borderFollowLUT)
	s.command(cmdUpdateControl1, 0x00, sourceS8ToS167)
	s.command(cmdTemperatureSensor, internalTemperature)
	s.waitIdle(initTimeout, "init")
}

// fullRefresh is EPD_2in13_V4_Display_Base with TurnOnDisplay: the frame goes
// into both RAMs, so a later partial refresh has it as its previous image.
func (s *sequence) fullRefresh(frame []byte) {
	s.command(cmdWriteBlackWhiteRAM, frame...)
	s.command(cmdWriteRedRAM, frame...)
	s.command(cmdUpdateControl2, updateFull)
	s.command(cmdMasterActivation)
	s.waitIdle(fullTimeout, "full refresh")
}

// partialRefresh is EPD_2in13_V4_Display_Partial with
// TurnOnDisplay_Partial: a short reset (RAM survives it), the registers a
// partial update needs, the new frame into the black/white RAM only, and
// display mode 2, which drives just the pixels that differ from the other
// RAM. Unlike the reference it waits for BUSY after the reset pulse; that
// sends nothing and returns at once on a healthy panel.
func (s *sequence) partialRefresh(frame []byte) {
	s.reset(partialReset)
	s.waitIdle(initTimeout, "wait after partial reset")
	s.command(cmdBorderWaveform, borderHoldVSS)
	s.driverOutput()
	s.command(cmdDataEntryMode, dataEntryXYIncrement)
	s.setWindow()
	s.command(cmdWriteBlackWhiteRAM, frame...)
	s.command(cmdUpdateControl2, updatePartial)
	s.command(cmdMasterActivation)
	s.waitIdle(partialTimeout, "partial refresh")
}

// deepSleep is EPD_2in13_V4_Sleep. BUSY stays high in deep sleep, so there
// is nothing to wait for; only a hardware reset wakes the controller.
func (s *sequence) deepSleep() {
	s.command(cmdDeepSleep, deepSleepMode1)
	if s.err == nil {
		s.d.pause(sleepSettle)
	}
}
