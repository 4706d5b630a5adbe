package epd

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"periph.io/x/conn/v3/gpio"
)

// spiPresent is whether this machine has the SPI device; the tests below
// check that Probe and Open give the answer that fits, not skip.
func spiPresent(t *testing.T) bool {
	t.Helper()
	_, err := os.Stat(spiDevice)
	return err == nil
}

func TestProbeOnThisMachine(t *testing.T) {
	detail, err := Probe()
	if spiPresent(t) {
		if errors.Is(err, ErrSPIDisabled) {
			t.Errorf("Probe() with %s present = %v, want no ErrSPIDisabled", spiDevice, err)
		}
		t.Logf("Probe() = %q, %v", detail, err)
		return
	}
	if !errors.Is(err, ErrSPIDisabled) {
		t.Fatalf("Probe() without %s = %q, %v; want ErrSPIDisabled", spiDevice, detail, err)
	}
	for _, want := range []string{spiDevice, "dtparam=spi=on"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Probe() error %q does not mention %q", err, want)
		}
	}
	if detail != "" {
		t.Errorf("Probe() detail = %q with an error, want empty", detail)
	}
}

func TestOpenOnThisMachine(t *testing.T) {
	d, err := Open()
	if err == nil {
		if cerr := d.Close(); cerr != nil {
			t.Errorf("Close() = %v", cerr)
		}
	}
	if !spiPresent(t) && !errors.Is(err, ErrSPIDisabled) {
		t.Errorf("Open() without %s = %v, want ErrSPIDisabled", spiDevice, err)
	}
}

func TestCheckSPI(t *testing.T) {
	dir := t.TempDir()
	present := filepath.Join(dir, "spidev0.0")
	if err := os.WriteFile(present, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		wantErr error
	}{
		{"missing", filepath.Join(dir, "nope"), ErrSPIDisabled},
		{"present", present, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkSPI(tc.path); !errors.Is(err, tc.wantErr) {
				t.Errorf("checkSPI(%q) = %v, want %v", tc.path, err, tc.wantErr)
			}
		})
	}
}

func TestHeaderPinMissing(t *testing.T) {
	// No host drivers are loaded in this test binary unless Open ran, and
	// no host has a pin by this name.
	_, err := headerPin("GPIO9999", "TEST")
	if err == nil || !strings.Contains(err.Error(), "GPIO9999") || !strings.Contains(err.Error(), "gpio group") {
		t.Errorf("headerPin(GPIO9999) = %v, want an error naming the pin and the gpio group", err)
	}
}

// probeSteps is what probe sends: EPD_2in13_V4_Reset and SWRESET as in
// init, then the temperature and waveform load of EPD_2in13_V4_Init_Fast
// (0x18 0x80, 0x22 0xB1, 0x20), which raises BUSY without driving the glass.
var probeSteps = []step{
	rst(gpio.High), rst(gpio.Low), rst(gpio.High),
	busyWait,
	cmd(0x12),
	busyWait,
	cmd(0x18, 0x80),
	cmd(0x22, 0xB1),
	cmd(0x20),
	busyWait,
}

func TestProbeAnswer(t *testing.T) {
	tests := []struct {
		name      string
		behaviour busyBehaviour
		wantErr   error
		mention   string
	}{
		{"display answers", busyAnswers, nil, "answers"},
		{"nothing raises BUSY", busyNeverHigh, ErrNoDisplay, "stayed low"},
		{"BUSY stuck high", busyStuckHigh, ErrBusyTimeout, "5s"},
		{"waveform load never ends", busyStuckAfterRun, ErrBusyTimeout, "waveform load"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, d := newHarness(t)
			h.busy.behaviour = tc.behaviour
			detail, err := d.probe()
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("probe() = %q, %v; want %v", detail, err, tc.wantErr)
			}
			text := detail
			if err != nil {
				text = err.Error()
			}
			if !strings.Contains(text, tc.mention) {
				t.Errorf("probe() said %q, want it to mention %q", text, tc.mention)
			}
			if tc.wantErr == nil {
				if diff := diffSteps(h.take(), probeSteps); diff != "" {
					t.Errorf("probe(): %s", diff)
				}
			}
			// After a probe the next frame starts from scratch.
			h.busy.behaviour, h.busy.highFor = busyNeverHigh, 0
			h.take()
			if err := d.Show(landscape(), true); err != nil {
				t.Fatalf("Show after probe = %v", err)
			}
			if diff := diffSteps(h.take(), concat(initSteps, fullSteps(whiteRAM()))); diff != "" {
				t.Errorf("Show after probe: %s", diff)
			}
		})
	}
}
