package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/state/atomicfile"
	"shelldon/panel/faces"
)

// DefaultTopic is the memory topic of a note that names none.
const DefaultTopic = "notes"

// MaxMemoryFileBytes caps one topic's file; the worker reads whole files
// into prompts.
const MaxMemoryFileBytes = 256 << 10

// ErrMemoryFull is wrapped by Remember when the note would take the topic's
// file past MaxMemoryFileBytes.
var ErrMemoryFull = errors.New("memory topic full")

// Remember appends a dated note to memory/<topic>.md, as a line of the form
// "- 2026-11-30 14:02 text". topic and text must pass contracts.Remember
// validation; an empty topic means DefaultTopic.
func (s *Store) Remember(topic, text string, at time.Time) error {
	if err := s.writable("remember"); err != nil {
		return err
	}
	if err := (contracts.Remember{Topic: topic, Text: text}).Validate(); err != nil {
		return fmt.Errorf("remember: %w", err)
	}
	if topic == "" {
		topic = DefaultTopic
	}
	path := s.layout.MemoryTopic(topic)

	s.files.Lock()
	defer s.files.Unlock()
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remember in %s: %w", path, err)
	}
	var note strings.Builder
	if len(old) > 0 && old[len(old)-1] != '\n' {
		note.WriteByte('\n') // a hand edit may have left the last line open
	}
	note.WriteString("- " + at.Format("2006-01-02 15:04") + " ")
	// Continuation lines are indented so a note stays one list item.
	note.WriteString(strings.ReplaceAll(strings.TrimSpace(text), "\n", "\n  "))
	note.WriteByte('\n')
	if size := len(old) + note.Len(); size > MaxMemoryFileBytes {
		return fmt.Errorf("remember in %s: %w: the note would make the file %d bytes, over the cap of %d", path, ErrMemoryFull, size, MaxMemoryFileBytes)
	}
	if err := atomicfile.WriteFile(path, append(old, note.String()...), fileMode); err != nil {
		return fmt.Errorf("remember: %w", err)
	}
	return nil
}

// RewriteAbout replaces about.md with text, which must pass
// contracts.RewriteAbout validation.
func (s *Store) RewriteAbout(text string) error {
	if err := s.writable("rewrite about"); err != nil {
		return err
	}
	if err := (contracts.RewriteAbout{Text: text}).Validate(); err != nil {
		return fmt.Errorf("rewrite about: %w", err)
	}
	s.files.Lock()
	defer s.files.Unlock()
	if err := s.writeForWorkers(s.layout.About(), []byte(text)); err != nil {
		return fmt.Errorf("rewrite about: %w", err)
	}
	return nil
}

// AddFace adds a face to the registry file, under the rules of
// faces.Registry.With. Entries of the file that the registry refuses are
// dropped when it is rewritten; a file that cannot be read or parsed at all
// is left alone and the face is not added.
func (s *Store) AddFace(name, glyphs string) error {
	if err := s.writable("add face"); err != nil {
		return err
	}
	s.files.Lock()
	defer s.files.Unlock()
	reg, err := s.layout.LoadFaces()
	if errors.Is(err, faces.ErrBadFile) {
		return fmt.Errorf("add face %q: not overwriting the faces file: %w", name, err)
	}
	reg, err = reg.With(name, glyphs)
	if err != nil {
		return err
	}
	data, err := reg.MarshalAdded()
	if err != nil {
		return fmt.Errorf("add face %q: %w", name, err)
	}
	if err := s.writeForWorkers(s.layout.Faces(), data); err != nil {
		return fmt.Errorf("add face %q: %w", name, err)
	}
	return nil
}
