// Package epd drives the Waveshare 2.13" e-paper HAT V4 (250×122 pixels,
// black and white, an SSD1680-family controller) on a Raspberry Pi's SPI
// header, the panel Pwnagotchi uses. It is the hardware backend of the
// panel: the pet renders a landscape 250×122 frame and [Dev.Show] rotates it
// into the controller's portrait RAM and refreshes the glass, either fully
// (a flash, clears ghosting) or partially (fast, no flash, slowly ghosts).
//
// The byte sequences follow Waveshare's reference driver for this panel
// (epd2in13_V4.py and EPD_2in13_V4.c: Init, Display, Display_Partial,
// Sleep) and the SSD1680 datasheet. The pinned
// periph.io/x/devices/v3/waveshare2in13v4 package supplies the panel
// geometry; the sequences themselves are written here on periph.io/x/conn/v3
// spi and gpio, because that driver waits for BUSY without a bound, sleeps
// for its reset pulse on the wall clock, toggles a chip-select GPIO that the
// kernel's SPI0 CE0 already drives, and refreshes twice per Draw.
//
// Every wait for the BUSY line is bounded, so an absent or wedged display
// turns into an error wrapping [ErrBusyTimeout], never a hang. [Probe] is
// the doctor's check: it says whether SPI is enabled and whether a display
// answers on it.
package epd
