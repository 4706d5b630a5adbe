// Package displaytest is the conformance suite of the [panel.Display]
// seam: one set of behaviour tests that every display must pass, run
// through the interface alone (a frame drawn at the panel's size and read
// back from the display's medium, a repeated frame no dearer than the
// first, sleep and wake, a clean close, a fault returned as an error and
// recovered from, a wrong size refused), in the spirit of containerd's
// snapshots/testsuite. The panel's tests run [Run] over a table of every
// display, so a new display is one line there; what only one display does
// stays in that display's own tests.
package displaytest

import (
	"fmt"
	"image"
	"testing"

	"shelldon/panel"
	"shelldon/panel/render"
)

// Target is one display under test and its medium, read back the way a
// viewer would see it.
type Target struct {
	Display panel.Display
	// Shown reads back the frame the medium holds: the file decoded, the
	// terminal's last screen, the glass of a controller. It is nil before
	// the first frame; the error says the medium holds something broken
	// (a truncated file, a controller spoken to out of sequence).
	Shown func() (image.Image, error)
	// Sent is how many bytes the display has sent to its medium so far.
	Sent func() int64
	// Fault makes every later write to the medium fail (on) or succeed
	// again (off).
	Fault func(on bool)
	// Asleep reports whether the medium was powered down; nil for a
	// medium that needs no power.
	Asleep func() bool
}

// Impl is one row of a display table: a name and how to make the display
// on a fresh medium, cleaned up at the test's end.
type Impl struct {
	Name string
	New  func(t *testing.T) Target
}

// Run runs the suite against each display of impls, each in a subtest
// named after it, each test on a display of its own.
func Run(t *testing.T, impls []Impl) {
	for _, impl := range impls {
		t.Run(impl.Name, func(t *testing.T) {
			for _, c := range []struct {
				name string
				test func(*testing.T, Target)
			}{
				{"DrawsEachFrameWhole", drawsEachFrameWhole},
				{"ARepeatedFrameCostsNoMore", aRepeatedFrameCostsNoMore},
				{"SleepsAndWakesForTheNextFrame", sleepsAndWakesForTheNextFrame},
				{"ClosesCleanly", closesCleanly},
				{"ReturnsAFaultAndRecovers", returnsAFaultAndRecovers},
				{"RefusesAWrongSize", refusesAWrongSize},
			} {
				t.Run(c.name, func(t *testing.T) { c.test(t, impl.New(t)) })
			}
		})
	}
}

// Frames are two frames unlike each other, as the pet draws them.
func Frames() (first, second *render.Frame) {
	first = render.Render(render.Scene{Face: "(^‿^)", Caption: "first frame", Status: render.Status{Name: "shelldon", Word: "happy"}})
	second = render.Render(render.Scene{Face: "(-_-)", Caption: "the second one", Status: render.Status{Name: "shelldon", Word: "sleepy", Away: true}})
	return first, second
}

// call runs one of the display's methods; a panic fails the test as the
// error it should have been.
func call(t *testing.T, what string, f func() error) (err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("%s panicked: %v; a display returns its errors", what, p)
		}
	}()
	return f()
}

func show(t *testing.T, d Target, f image.Image, partial bool) {
	t.Helper()
	if err := call(t, "Show", func() error { return d.Display.Show(f, partial) }); err != nil {
		t.Fatalf("%s: Show(partial=%v) = %v", d.Display.Name(), partial, err)
	}
}

// holds fails t unless the medium shows want, pixel for pixel.
func holds(t *testing.T, d Target, want *render.Frame, after string) {
	t.Helper()
	got, err := d.Shown()
	if err != nil {
		t.Errorf("%s after %s: %v", d.Display.Name(), after, err)
	}
	if got == nil {
		if err == nil {
			t.Errorf("%s after %s: the medium shows nothing, want the frame", d.Display.Name(), after)
		}
		t.FailNow()
	}
	if diff := compare(got, want); diff != "" {
		t.Errorf("%s after %s: %s", d.Display.Name(), after, diff)
	}
}

// compare says how got differs from want: its size, or the first pixel
// whose ink differs and how many do.
func compare(got image.Image, want *render.Frame) string {
	if got.Bounds().Size() != want.Bounds().Size() {
		return fmt.Sprintf("the medium holds a %v frame, want %v", got.Bounds().Size(), want.Bounds().Size())
	}
	var first image.Point
	differ := 0
	off := got.Bounds().Min
	for y := range render.Height {
		for x := range render.Width {
			if ink(got, off.X+x, off.Y+y) == want.Black(x, y) {
				continue
			}
			if differ == 0 {
				first = image.Pt(x, y)
			}
			differ++
		}
	}
	if differ == 0 {
		return ""
	}
	return fmt.Sprintf("%d pixels differ from the frame shown, the first at %v (want ink %v)", differ, first, want.Black(first.X, first.Y))
}

// ink is whether the pixel at (x, y) is darker than mid-grey.
func ink(img image.Image, x, y int) bool {
	r, g, b, _ := img.At(x, y).RGBA()
	return (299*r+587*g+114*b)/1000 < 0x8000
}

func drawsEachFrameWhole(t *testing.T, d Target) {
	first, second := Frames()
	if got, err := d.Shown(); got != nil || err != nil {
		t.Errorf("%s before any frame: shows %v (%v), want nothing", d.Display.Name(), got, err)
	}
	show(t, d, first, false)
	holds(t, d, first, "the first frame")
	show(t, d, second, false)
	holds(t, d, second, "a second, full")
	show(t, d, first, true)
	holds(t, d, first, "a third, partial")
}

// aRepeatedFrameCostsNoMore: what Display promises of partial, the
// cheaper refresh, for the frame already shown.
func aRepeatedFrameCostsNoMore(t *testing.T, d Target) {
	first, _ := Frames()
	before := d.Sent()
	show(t, d, first, false)
	full := d.Sent() - before
	if full <= 0 {
		t.Errorf("%s: a frame sent %d bytes to its medium", d.Display.Name(), full)
	}
	before = d.Sent()
	show(t, d, first, true)
	if again := d.Sent() - before; again > full {
		t.Errorf("%s: the same frame again, partial, sent %d bytes, more than the first's %d", d.Display.Name(), again, full)
	}
	holds(t, d, first, "the same frame again")
}

func sleepsAndWakesForTheNextFrame(t *testing.T, d Target) {
	first, second := Frames()
	show(t, d, first, false)
	for range 2 { // sleeping twice is no fault
		if err := call(t, "Sleep", d.Display.Sleep); err != nil {
			t.Fatalf("%s: Sleep() = %v", d.Display.Name(), err)
		}
	}
	if d.Asleep != nil && !d.Asleep() {
		t.Errorf("%s: awake after Sleep", d.Display.Name())
	}
	holds(t, d, first, "Sleep (the image stays)")
	// The first frame after a sleep may not be partial: there is nothing
	// known on the medium to differ from.
	show(t, d, second, true)
	if d.Asleep != nil && d.Asleep() {
		t.Errorf("%s: still asleep after a Show", d.Display.Name())
	}
	holds(t, d, second, "a partial frame after Sleep")
}

func closesCleanly(t *testing.T, d Target) {
	first, _ := Frames()
	show(t, d, first, false)
	for i := range 2 {
		if err := call(t, "Close", d.Display.Close); err != nil {
			t.Errorf("%s: Close() #%d = %v, want nil", d.Display.Name(), i+1, err)
		}
	}
	if d.Asleep != nil && !d.Asleep() {
		t.Errorf("%s: left powered after Close", d.Display.Name())
	}
	holds(t, d, first, "Close (the image stays)")
}

func returnsAFaultAndRecovers(t *testing.T, d Target) {
	first, second := Frames()
	show(t, d, first, false)
	d.Fault(true)
	if err := call(t, "Show", func() error { return d.Display.Show(second, true) }); err == nil {
		t.Errorf("%s: Show with its medium failing = nil, want the error", d.Display.Name())
	}
	call(t, "Sleep", d.Display.Sleep) // may fail or not: a file needs no power
	d.Fault(false)
	// The next frame is whole, whatever a failure left on the medium.
	show(t, d, second, true)
	holds(t, d, second, "a fault mended")
}

func refusesAWrongSize(t *testing.T, d Target) {
	first, _ := Frames()
	show(t, d, first, false)
	sent := d.Sent()
	for _, img := range []image.Image{
		nil,
		image.NewGray(image.Rect(0, 0, render.Height, render.Width)), // portrait
		image.NewGray(image.Rect(0, 0, render.Width+1, render.Height)),
		image.NewGray(image.Rectangle{}),
	} {
		if err := call(t, "Show", func() error { return d.Display.Show(img, false) }); err == nil {
			t.Errorf("%s: Show(%T %v) = nil, want it refused", d.Display.Name(), img, bounds(img))
		}
	}
	if d.Sent() != sent {
		t.Errorf("%s: refused images sent %d bytes to the medium", d.Display.Name(), d.Sent()-sent)
	}
	holds(t, d, first, "refused images")
}

func bounds(img image.Image) any {
	if img == nil {
		return "nil"
	}
	return img.Bounds()
}
