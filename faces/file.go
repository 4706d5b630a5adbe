package faces

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
)

// ErrBadFile is wrapped by Load when the faces file as a whole cannot be
// used (unreadable, too large, not the expected JSON), as opposed to single
// entries being refused. A writer should not overwrite such a file blindly.
var ErrBadFile = errors.New("unusable faces file")

// maxFileBytes bounds what Load reads; MaxAdded faces take a few kilobytes.
const maxFileBytes = 256 << 10

// fileContent is the faces file: {"faces": {"name": "glyphs", ...}}. Load
// reads each glyphs value on its own, so that one entry of the wrong type is
// skipped rather than spoiling the file.
type fileContent[V any] struct {
	Faces map[string]V `json:"faces"`
}

// Load returns the built-in faces plus the faces added in the file at path.
// A missing file is not an error. An entry that With refuses is skipped, and
// the reasons are returned joined, together with a registry that holds every
// other face, so one bad entry never loses the good ones. A file that cannot
// be read or parsed gives the built-in registry and an error wrapping
// ErrBadFile.
func Load(path string) (Registry, error) {
	data, err := readCapped(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Builtin(), nil
	}
	if err != nil {
		return Builtin(), fmt.Errorf("load faces %s: %w: %w", path, ErrBadFile, err)
	}
	var content fileContent[json.RawMessage]
	if err := json.Unmarshal(data, &content); err != nil {
		return Builtin(), fmt.Errorf("load faces %s: %w: %w", path, ErrBadFile, err)
	}
	reg := Builtin()
	var problems []error
	for _, name := range slices.Sorted(maps.Keys(content.Faces)) {
		var glyphs string
		if err := json.Unmarshal(content.Faces[name], &glyphs); err != nil {
			problems = append(problems, fmt.Errorf("load faces %s: skipped %q: glyphs are not a string", path, name))
			continue
		}
		next, err := reg.With(name, glyphs)
		if err != nil {
			problems = append(problems, fmt.Errorf("load faces %s: skipped: %w", path, err))
			continue
		}
		reg = next
	}
	return reg, errors.Join(problems...)
}

func readCapped(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxFileBytes)
	}
	return data, nil
}

// MarshalAdded returns the content of a faces file holding the added faces
// (not the built-in ones), sorted by name and indented for a human reader.
func (r Registry) MarshalAdded() ([]byte, error) {
	content := fileContent[string]{Faces: r.added}
	if content.Faces == nil {
		content.Faces = map[string]string{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Faces are full of < > & that a human editing the file wants to read.
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(content); err != nil {
		return nil, fmt.Errorf("encode faces: %w", err)
	}
	return buf.Bytes(), nil
}
