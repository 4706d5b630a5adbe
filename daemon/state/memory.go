package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"shelldon/atomicfile"
	"shelldon/contracts"
	"shelldon/faces"
)

// Memories are what the pet keeps of its owner: the memory tree's files
// (memory/*.md, about.md, the faces file) and the learnings table, which
// the ops of a reply add to.
type Memories struct{ *Store }

// Memories is the memory keeper's part of the store.
func (s *Store) Memories() *Memories { return &Memories{s} }

// DefaultTopic is the memory topic of a note that names none.
const DefaultTopic = "notes"

// The bounds of what the pet keeps of its owner beyond the database's
// history: one topic's file, which the owner reads whole (and a worker
// may one day put in a prompt); the topics of the memory tree, the
// owner's own files in memory/ among them, so that 64 at their cap hold
// 16 MiB of an SD card; and the learnings, at most about 1.3 KB a row,
// so 6.5 MB of state.db, which every start checks and every backup
// copies.
const (
	MaxMemoryFileBytes = 256 << 10
	MaxMemoryTopics    = 64
	MaxLearnings       = 5000
)

// ErrMemoryFull is wrapped by [Memories.Keep] when what one reply keeps would take
// a topic's file, the memory tree's topics or the learnings past their
// bounds: then nothing of it is kept.
var ErrMemoryFull = errors.New("memory full")

// Memory is what one reply keeps of its owner: notes for the memory
// tree's topics, a new about.md, and lessons for the learnings table.
// Each must pass its op's contracts validation.
type Memory struct {
	Notes []contracts.Remember
	// About replaces about.md; "" leaves it as it is.
	About     string
	Learnings []contracts.CaptureLearning
}

// Keep keeps m, learnt in turn, in one step: it checks the bounds of all
// of it first and keeps nothing of it past any (ErrMemoryFull), then adds
// the learnings in one transaction and writes the files in one batch
// (atomicfile.WriteFiles: a few flushes whatever their number), outside
// the transaction, so that the store's one connection is not held while
// they are flushed. A note is appended to memory/<topic>.md as
// "- 2026-11-30 14:02 text"; an empty topic means DefaultTopic. It may
// run off core's loop: the memory tree's read-modify-write is serialised
// here.
func (s *Memories) Keep(ctx context.Context, turn string, m Memory, at time.Time) error {
	if err := s.writable("keep memory"); err != nil {
		return err
	}
	if err := m.validate(); err != nil {
		return fmt.Errorf("keep memory: %w", err)
	}
	s.files.Lock()
	defer s.files.Unlock()
	files, err := s.noteFiles(m.Notes, at)
	if err != nil {
		return fmt.Errorf("keep memory: %w", err)
	}
	if m.About != "" {
		files = append(files, atomicfile.File{Path: s.layout.About(), Data: []byte(m.About)})
	}
	if len(m.Learnings) > 0 {
		if err := s.addLearnings(ctx, turn, m.Learnings, at); err != nil {
			return fmt.Errorf("keep memory of turn %q: %w", turn, err)
		}
	}
	if len(files) == 0 {
		return nil
	}
	if err := s.db.retried(func() error { return atomicfile.WriteFiles(files, fileMode) }); err != nil {
		if len(m.Learnings) > 0 {
			return fmt.Errorf("keep memory of turn %q: its learnings are kept, its files are not: %w", turn, err)
		}
		return fmt.Errorf("keep memory of turn %q: %w", turn, err)
	}
	if m.About != "" {
		return s.grantWorkerFiles()
	}
	return nil
}

// addLearnings adds the learnings of turn in one transaction, within
// MaxLearnings.
func (s *Memories) addLearnings(ctx context.Context, turn string, learnings []contracts.CaptureLearning, at time.Time) error {
	return s.inTx(ctx, func(tx *keptTx) error {
		var kept int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM learnings`).Scan(&kept); err != nil {
			return fmt.Errorf("count learnings: %w", err)
		}
		if kept+len(learnings) > MaxLearnings {
			return fmt.Errorf("%w: %d learnings are kept already, and %d more would pass the %d kept at most", ErrMemoryFull, kept, len(learnings), MaxLearnings)
		}
		for _, l := range learnings {
			// Tags are slugs, so a comma cannot occur inside one.
			if _, err := tx.ExecContext(ctx, `INSERT INTO learnings (turn, text, tags, at) VALUES (?, ?, ?, ?)`,
				turn, l.Text, strings.Join(l.Tags, ","), at.UnixMilli()); err != nil {
				return fmt.Errorf("add a learning: %w", err)
			}
		}
		return nil
	})
}

// validate checks each part of m as its op.
func (m Memory) validate() error {
	for _, n := range m.Notes {
		if err := n.Validate(); err != nil {
			return err
		}
	}
	if m.About != "" {
		if err := (contracts.RewriteAbout{Text: m.About}).Validate(); err != nil {
			return err
		}
	}
	for _, l := range m.Learnings {
		if err := l.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// noteFiles is the new content of every topic file notes add to, each
// within MaxMemoryFileBytes, the new topics within MaxMemoryTopics.
func (s *Memories) noteFiles(notes []contracts.Remember, at time.Time) ([]atomicfile.File, error) {
	var (
		topics []string
		files  []atomicfile.File
	)
	for _, n := range notes {
		topic := n.Topic
		if topic == "" {
			topic = DefaultTopic
		}
		i := slices.Index(topics, topic)
		if i < 0 {
			path := s.layout.MemoryTopic(topic)
			old, err := os.ReadFile(path)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("read %s: %w", path, err)
			}
			i = len(files)
			topics, files = append(topics, topic), append(files, atomicfile.File{Path: path, Data: old})
		}
		files[i].Data = appendNote(files[i].Data, n.Text, at)
		if size := len(files[i].Data); size > MaxMemoryFileBytes {
			return nil, fmt.Errorf("%w: memory/%s.md would be %d bytes, over the %d one topic holds", ErrMemoryFull, topic, size, MaxMemoryFileBytes)
		}
	}
	if len(topics) == 0 {
		return nil, nil
	}
	have, err := s.topics()
	if err != nil {
		return nil, err
	}
	added := 0
	for _, t := range topics {
		if !slices.Contains(have, t) {
			added++
		}
	}
	if added > 0 && len(have)+added > MaxMemoryTopics {
		return nil, fmt.Errorf("%w: the memory holds %d topics, and %d new ones would pass the %d it holds at most; remember it under a topic it has",
			ErrMemoryFull, len(have), added, MaxMemoryTopics)
	}
	return files, nil
}

// appendNote is a topic's file with the note text, taken at at, added as
// one list item.
func appendNote(file []byte, text string, at time.Time) []byte {
	if len(file) > 0 && file[len(file)-1] != '\n' {
		file = append(file, '\n') // a hand edit may have left the last line open
	}
	file = append(file, "- "+at.Format("2006-01-02 15:04")+" "...)
	// Continuation lines are indented so a note stays one list item.
	file = append(file, strings.ReplaceAll(strings.TrimSpace(text), "\n", "\n  ")...)
	return append(file, '\n')
}

// topics are the memory tree's topics: its files memory/*.md.
func (s *Memories) topics() ([]string, error) {
	entries, err := os.ReadDir(s.layout.MemoryDir())
	if err != nil {
		return nil, fmt.Errorf("list the memory's topics: %w", err)
	}
	var out []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".md"); ok && !strings.HasPrefix(name, ".") {
			out = append(out, name)
		}
	}
	return out, nil
}

// AddFaces adds faces to the registry file, under the rules of
// faces.Registry.With, writing it once for all of them. A face the
// registry refuses is left out, and said in the error, which joins each
// refusal; the others are added. Entries of the file that the registry
// refuses are dropped when it is rewritten; a file that cannot be read or
// parsed at all is left alone and no face is added.
func (s *Memories) AddFaces(added ...contracts.AddFace) error {
	if err := s.writable("add faces"); err != nil {
		return err
	}
	s.files.Lock()
	defer s.files.Unlock()
	reg, err := s.layout.LoadFaces()
	if errors.Is(err, faces.ErrBadFile) {
		return fmt.Errorf("add faces: not overwriting the faces file: %w", err)
	}
	var refused []error
	changed := false
	for _, f := range added {
		with, err := reg.With(f.Name, f.Glyphs)
		if err != nil {
			refused = append(refused, err)
			continue
		}
		reg, changed = with, true
	}
	if changed {
		data, err := reg.MarshalAdded()
		if err == nil {
			err = s.db.retried(func() error { return atomicfile.WriteFile(s.layout.Faces(), data, fileMode) })
		}
		if err == nil {
			err = s.grantWorkerFiles()
		}
		if err != nil {
			return fmt.Errorf("add faces: %w", err)
		}
	}
	return errors.Join(refused...)
}
