package statedir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"unicode/utf8"

	"shelldon/faces"
)

// MaxReadBytes caps what ReadDirective and ReadAbout return, so a file grown
// by hand cannot swamp a prompt or the worker's memory.
const MaxReadBytes = 64 << 10

// ReadDirective returns DIRECTIVE.md, capped at MaxReadBytes. Core creates
// the file when it starts, so a missing one is an error.
func (l Layout) ReadDirective() (string, error) {
	text, err := readCapped(l.Directive())
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read directive %s: %w (core creates it when it starts)", l.Directive(), err)
	}
	if err != nil {
		return "", fmt.Errorf("read directive: %w", err)
	}
	return text, nil
}

// ReadAbout returns about.md, capped at MaxReadBytes. A missing file is an
// owner the pet knows nothing about yet: "" and no error.
func (l Layout) ReadAbout() (string, error) {
	text, err := readCapped(l.About())
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read about: %w", err)
	}
	return text, nil
}

// LoadFaces returns the face registry: the built-in faces and the added ones.
// See faces.Load for how a damaged file is reported.
func (l Layout) LoadFaces() (faces.Registry, error) {
	return faces.Load(l.Faces())
}

// readCapped reads at most MaxReadBytes of path. A longer file is cut at a
// character boundary and a note says so, because half a prompt is more use
// than none.
func readCapped(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxReadBytes+1))
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if len(data) <= MaxReadBytes {
		return string(data), nil
	}
	cut := MaxReadBytes
	// data[cut] is the first byte left out; if it continues a character,
	// that character would be split, so leave it out whole.
	for i := 0; i < utf8.UTFMax-1 && cut > 0 && !utf8.RuneStart(data[cut]); i++ {
		cut--
	}
	return string(data[:cut]) + fmt.Sprintf("\n\n[%s is longer than %d KB; the rest is cut off]\n", filepath.Base(path), MaxReadBytes>>10), nil
}
