// Package rendertest keeps frames as golden PNG files for the tests of the
// packages that draw them: a test compares what it drew with
// testdata/golden/NAME.png in its own package, and
//
//	go test ./panel ./panel/render -update
//
// (the packages that import this one) rewrites the files from the current
// rendering, to be looked at before they are committed.
package rendertest

import (
	"bytes"
	"flag"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current rendering")

// dir is where a package keeps its goldens, relative to its tests.
var dir = filepath.Join("testdata", "golden")

// Frame is what a golden holds: an image that encodes itself as a PNG, as
// *render.Frame does (taken as an interface so that render's own tests can
// use this package).
type Frame interface {
	image.Image
	EncodePNG(w io.Writer) error
}

// Golden fails t unless got is the frame kept as testdata/golden/name.png,
// and keeps got in a file named in the failure so it can be looked at;
// with -update it writes got there instead. what says what was drawn.
func Golden(t *testing.T, name string, got Frame, what string) {
	t.Helper()
	path := filepath.Join(dir, name+".png")
	var encoded bytes.Buffer
	if err := got.EncodePNG(&encoded); err != nil {
		t.Fatalf("EncodePNG of %s: %v", what, err)
	}
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("update golden: %v", err)
		}
		if err := os.WriteFile(path, encoded.Bytes(), 0o644); err != nil {
			t.Fatalf("update golden: %v", err)
		}
		return
	}
	want := read(t, path)
	if diff := Diff(got, want); diff > 0 {
		out := filepath.Join(t.TempDir(), name+".png")
		if err := os.WriteFile(out, encoded.Bytes(), 0o644); err != nil {
			t.Fatalf("keep the differing frame: %v", err)
		}
		t.Errorf("%s differs from %s in %d pixels; got is at %s (rerun with -update if the change is meant)", what, path, diff, out)
	}
}

// Orphans fails t for each golden file whose name is not in names: a
// frame no test draws any more.
func Orphans(t *testing.T, names []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.png"))
	if err != nil {
		t.Fatalf("list goldens: %v", err)
	}
	known := map[string]bool{}
	for _, name := range names {
		known[name] = true
	}
	for _, file := range files {
		if !known[strings.TrimSuffix(filepath.Base(file), ".png")] {
			t.Errorf("golden %s has no frame; delete it", file)
		}
	}
}

// Diff counts the pixels where got and want differ in ink (dark or
// light); every pixel, when their sizes differ.
func Diff(got, want image.Image) int {
	b := got.Bounds()
	if want.Bounds() != b {
		return max(b.Dx()*b.Dy(), want.Bounds().Dx()*want.Bounds().Dy())
	}
	diff := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if inked(got, x, y) != inked(want, x, y) {
				diff++
			}
		}
	}
	return diff
}

func inked(img image.Image, x, y int) bool {
	r, _, _, _ := img.At(x, y).RGBA()
	return r < 0x8000
}

func read(t *testing.T, path string) image.Image {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatalf("open golden (run go test with -update to write it): %v", err)
	}
	defer file.Close()
	img, err := png.Decode(file)
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return img
}
