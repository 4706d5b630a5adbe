package epd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpioreg"
	"periph.io/x/conn/v3/spi/spireg"
	"periph.io/x/host/v3"
)

// Where the HAT sits on the Pi header (BCM numbering), as Waveshare's
// epdconfig.py has it. CS is SPI0 CE0 (GPIO8), driven by the kernel.
const (
	spiDevice    = "/dev/spidev0.0"
	spiPortName  = "SPI0.0"
	dcPinName    = "GPIO25"
	rstPinName   = "GPIO17"
	busyPinName  = "GPIO24"
	powerPinName = "GPIO18" // PWR on HAT rev 2.3 and later; unconnected before
)

// enableSPIHint is what to do when SPI is off.
const enableSPIHint = "enable SPI: dtparam=spi=on in /boot/firmware/config.txt " +
	"(or raspi-config → Interface Options → SPI), then reboot"

// groupsHint is what to do when the devices are there but not ours.
const groupsHint = "run as root or add the user to the spi and gpio groups"

// Probe's view of the BUSY line after asking the controller to work: how
// long to look for BUSY rising, and how often.
const (
	probeAssertWindow = 50 * time.Millisecond
	probeAssertPoll   = time.Millisecond
)

// Open opens the display on a Raspberry Pi: SPI0.0 and the HAT's pins,
// through periph's host drivers. It switches the HAT's power pin on, as
// Waveshare's module_init does. The errors say what is missing: SPI not
// enabled, no permission on the devices, or a pin the host does not have.
func Open() (d *Dev, err error) {
	if err := checkSPI(spiDevice); err != nil {
		return nil, err
	}
	if _, err := host.Init(); err != nil {
		return nil, fmt.Errorf("initialise periph host drivers: %w", err)
	}
	port, err := spireg.Open(spiPortName)
	if err != nil {
		return nil, fmt.Errorf("open SPI port %s (%s): %w", spiPortName, spiDevice, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, port.Close())
		}
	}()
	dc, err := headerPin(dcPinName, "DC")
	if err != nil {
		return nil, err
	}
	rst, err := headerPin(rstPinName, "RST")
	if err != nil {
		return nil, err
	}
	busy, err := headerPin(busyPinName, "BUSY")
	if err != nil {
		return nil, err
	}
	power, err := headerPin(powerPinName, "PWR")
	if err != nil {
		return nil, err
	}
	if err := power.Out(gpio.High); err != nil {
		return nil, fmt.Errorf("switch the HAT on (PWR %s high): %w; %s", powerPinName, err, groupsHint)
	}
	d, err = New(port, dc, rst, busy)
	if err != nil {
		return nil, fmt.Errorf("%w; %s", err, groupsHint)
	}
	// Waveshare's module_exit: all lines low, so nothing feeds the
	// unpowered panel through its inputs.
	d.release = func() error {
		return errors.Join(rst.Out(gpio.Low), dc.Out(gpio.Low), power.Out(gpio.Low), port.Close())
	}
	return d, nil
}

// checkSPI says whether the SPI device node exists and can be opened.
func checkSPI(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s does not exist; %s", ErrSPIDisabled, path, enableSPIHint)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("open %s: %w; %s", path, err, groupsHint)
	case err != nil:
		return fmt.Errorf("open %s: %w", path, err)
	}
	return f.Close()
}

// headerPin finds a pin by its BCM name among those periph's host drivers
// registered.
func headerPin(name, role string) (gpio.PinIO, error) {
	p := gpioreg.ByName(name)
	if p == nil {
		return nil, fmt.Errorf("no pin %s for %s: the host drivers found no such GPIO "+
			"(not a Raspberry Pi, or /dev/gpiomem and /dev/gpiochip0 are not accessible: %s)", name, role, groupsHint)
	}
	return p, nil
}

// Probe is the doctor's check of the panel: whether SPI is enabled
// (/dev/spidev0.0 exists) and whether a display answers on it. It resets the
// controller and asks it to load its temperature and waveform, which raises
// BUSY for a few milliseconds without touching the image; a display that
// never raises BUSY, or never lowers it, is reported. Every wait is bounded,
// so Probe returns within seconds. It takes the display over, so it is not
// for use while the panel service is drawing.
func Probe() (detail string, err error) {
	if err := checkSPI(spiDevice); err != nil {
		return "", err
	}
	d, err := Open()
	if err != nil {
		return "", err
	}
	defer func() {
		if cerr := d.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close after probe: %w", cerr)
		}
	}()
	return d.probe()
}

// probe runs Probe's exchange on an open display.
func (d *Dev) probe() (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	// Whatever the answer, the controller is no longer as Show left it.
	d.state = stateCold
	s := sequence{d: d}
	s.reset(fullReset)
	s.waitIdle(initTimeout, "BUSY after hardware reset")
	s.command(cmdSoftwareReset)
	s.waitIdle(initTimeout, "software reset")
	s.command(cmdTemperatureSensor, internalTemperature)
	s.command(cmdUpdateControl2, updateLoadTemperature)
	s.command(cmdMasterActivation)
	if s.err != nil {
		return "", fmt.Errorf("probe %s on %s: %w", d.Name(), spiPortName, s.err)
	}
	if !d.sawBusy() {
		return "", fmt.Errorf("%w on %s: BUSY (%s) stayed low when the controller was told to load its waveform "+
			"(is the HAT seated, and is it a 2.13\" V4?)", ErrNoDisplay, spiPortName, busyPinName)
	}
	waited := s.waitIdle(initTimeout, "waveform load")
	if s.err != nil {
		return "", fmt.Errorf("probe %s on %s: %w", d.Name(), spiPortName, s.err)
	}
	return fmt.Sprintf("%s answers on %s: BUSY rose for a waveform load and fell within about %v",
		d.Name(), spiPortName, waited+busyPoll), nil
}

// sawBusy looks for BUSY going high, briefly and often, since the controller
// may finish its work in a few milliseconds.
func (d *Dev) sawBusy() bool {
	for looked := time.Duration(0); looked < probeAssertWindow; looked += probeAssertPoll {
		if d.busy.Read() == gpio.High {
			return true
		}
		d.pause(probeAssertPoll)
	}
	return d.busy.Read() == gpio.High
}
