package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/faces"
)

var noteTime = time.Date(2026, 11, 30, 14, 2, 59, 0, time.UTC)

// remember keeps one note, as a reply with one remember op.
func remember(s *Store, topic, text string, at time.Time) error {
	return s.Memories().Keep(context.Background(), "t1", Memory{Notes: []contracts.Remember{{Topic: topic, Text: text}}}, at)
}

// rewriteAbout keeps a new about.md, as a reply with one rewrite_about op.
func rewriteAbout(s *Store, text string) error {
	return s.Memories().Keep(context.Background(), "t1", Memory{About: text}, noteTime)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(data)
}

func TestRemember(t *testing.T) {
	s := newStore(t)
	l := s.Layout()
	if err := remember(s, "coffee", "loves hazelnut", noteTime); err != nil {
		t.Fatal(err)
	}
	if err := remember(s, "coffee", "  no sugar\never  \n", noteTime.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := remember(s, "", "plants need water on sundays", noteTime); err != nil {
		t.Fatal(err)
	}
	want := "- 2026-11-30 14:02 loves hazelnut\n- 2026-11-30 15:02 no sugar\n  ever\n"
	if got := readFile(t, l.MemoryTopic("coffee")); got != want {
		t.Errorf("memory/coffee.md = %q, want %q", got, want)
	}
	if got, want := readFile(t, l.MemoryTopic(DefaultTopic)), "- 2026-11-30 14:02 plants need water on sundays\n"; got != want {
		t.Errorf("memory/notes.md = %q, want %q", got, want)
	}
	if info, err := os.Stat(l.MemoryTopic("coffee")); err != nil || info.Mode().Perm() != fileMode {
		t.Errorf("memory file mode = %v, %v, want %v", info.Mode().Perm(), err, os.FileMode(fileMode))
	}
}

func TestRememberClosesAHandEditedLastLine(t *testing.T) {
	s := newStore(t)
	path := s.Layout().MemoryTopic("pets")
	if err := os.WriteFile(path, []byte("# Pets\nhas a cat"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := remember(s, "pets", "the cat is Miso", noteTime); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, path), "# Pets\nhas a cat\n- 2026-11-30 14:02 the cat is Miso\n"; got != want {
		t.Errorf("memory/pets.md = %q, want %q", got, want)
	}
}

func TestRememberRefusesBadInputAndChangesNothing(t *testing.T) {
	s := newStore(t)
	l := s.Layout()
	if err := remember(s, "coffee", "loves hazelnut", noteTime); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, l.MemoryTopic("coffee"))
	tests := []struct {
		name   string
		topic  string
		text   string
		wantIs error
	}{
		{"path in topic", "../about", "x", contracts.ErrInvalidOp},
		{"upper-case topic", "Coffee", "x", contracts.ErrInvalidOp},
		{"slash topic", "a/b", "x", contracts.ErrInvalidOp},
		{"empty text", "coffee", "   ", contracts.ErrInvalidOp},
		{"oversize text", "coffee", strings.Repeat("x", contracts.MaxRememberBytes+1), contracts.ErrInvalidOp},
		{"invalid UTF-8", "coffee", "caf\xe9", contracts.ErrInvalidOp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := remember(s, tt.topic, tt.text, noteTime)
			if !errors.Is(err, tt.wantIs) {
				t.Fatalf("Remember(%q, %.20q) = %v, want it to wrap %v", tt.topic, tt.text, err, tt.wantIs)
			}
		})
	}
	if got := readFile(t, l.MemoryTopic("coffee")); got != before {
		t.Errorf("refused notes changed memory/coffee.md to %q", got)
	}
	entries, err := os.ReadDir(l.MemoryDir())
	if err != nil || len(entries) != 1 {
		t.Errorf("memory/ holds %v, %v, want coffee.md alone", entries, err)
	}
	if about := readFile(t, l.About()); about != "" {
		t.Errorf("a ../about topic changed about.md to %q", about)
	}
}

func TestRememberCap(t *testing.T) {
	s := newStore(t)
	path := s.Layout().MemoryTopic("big")
	note := "- 2026-11-30 14:02 the last one\n"
	// Leave exactly room for one more note.
	full := strings.Repeat("x", MaxMemoryFileBytes-len(note)-1) + "\n"
	if err := os.WriteFile(path, []byte(full), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := remember(s, "big", "the last one", noteTime); err != nil {
		t.Fatalf("Remember up to exactly the cap = %v, want nil", err)
	}
	atCap := readFile(t, path)
	if len(atCap) != MaxMemoryFileBytes {
		t.Fatalf("file is %d bytes, want exactly %d", len(atCap), MaxMemoryFileBytes)
	}
	err := remember(s, "big", "one too many", noteTime)
	if !errors.Is(err, ErrMemoryFull) || !strings.Contains(err.Error(), "one topic holds") {
		t.Errorf("Remember past the cap = %v, want ErrMemoryFull saying so", err)
	}
	if got := readFile(t, path); got != atCap {
		t.Errorf("a refused note changed the full file")
	}
}

func TestRememberConcurrently(t *testing.T) {
	s := newStore(t)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if err := remember(s, "busy", fmt.Sprintf("note %d", i), noteTime); err != nil {
				t.Errorf("Remember %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	got := readFile(t, s.Layout().MemoryTopic("busy"))
	if lines := strings.Count(got, "\n"); lines != 20 {
		t.Errorf("20 concurrent notes left %d lines:\n%s", lines, got)
	}
}

func TestRewriteAbout(t *testing.T) {
	s := newStore(t)
	path := s.Layout().About()
	if err := rewriteAbout(s, "Sam likes tea and long walks.\n"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"  \n", strings.Repeat("x", contracts.MaxAboutBytes+1), "bad \xff"} {
		if err := rewriteAbout(s, bad); !errors.Is(err, contracts.ErrInvalidOp) {
			t.Errorf("RewriteAbout(%.20q) = %v, want ErrInvalidOp", bad, err)
		}
	}
	if got := readFile(t, path); got != "Sam likes tea and long walks.\n" {
		t.Errorf("about.md = %q, want the one valid rewrite", got)
	}
	if about, err := s.Layout().ReadAbout(); err != nil || about != "Sam likes tea and long walks.\n" {
		t.Errorf("ReadAbout = %q, %v", about, err)
	}
}

func TestAddFace(t *testing.T) {
	s := newStore(t)
	l := s.Layout()
	if err := s.Memories().AddFaces(contracts.AddFace{Name: "party", Glyphs: "(^o^)/"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Memories().AddFaces(contracts.AddFace{Name: "Wink", Glyphs: "(^_~)"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Memories().AddFaces(contracts.AddFace{Name: "party", Glyphs: `\(^o^)/`}); err != nil {
		t.Errorf("replacing an added face = %v, want nil", err)
	}
	before := readFile(t, l.Faces())
	bad := []struct {
		name, glyphs string
		wantIs       error
	}{
		{"happy", "(^_^)", faces.ErrBuiltin},
		{"no spaces", "(^_^)", contracts.ErrInvalidOp},
		{"blank", "", contracts.ErrInvalidOp},
		{"ugly", "ಠ_ಠ", faces.ErrUndrawable},
	}
	for _, tt := range bad {
		if err := s.Memories().AddFaces(contracts.AddFace{Name: tt.name, Glyphs: tt.glyphs}); !errors.Is(err, tt.wantIs) {
			t.Errorf("AddFace(%q, %q) = %v, want it to wrap %v", tt.name, tt.glyphs, err, tt.wantIs)
		}
	}
	if got := readFile(t, l.Faces()); got != before {
		t.Errorf("refused faces changed faces.json to %q", got)
	}
	reg, err := l.LoadFaces()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"party": `\(^o^)/`, "wink": "(^_~)"} {
		if got, ok := reg.Lookup(name); !ok || got != want {
			t.Errorf("after AddFace, Lookup(%q) = %q, %v, want %q", name, got, ok, want)
		}
	}
}

func TestAddFaceWithADamagedFile(t *testing.T) {
	s := newStore(t)
	path := s.Layout().Faces()

	// Bad entries are dropped, good ones kept, the new face added.
	if err := os.WriteFile(path, []byte(`{"faces": {"old": "(o_o)", "happy": "(^_^)", "ugly": "ಠ_ಠ"}}`), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := s.Memories().AddFaces(contracts.AddFace{Name: "party", Glyphs: "(^o^)/"}); err != nil {
		t.Fatalf("AddFace beside bad entries = %v, want nil", err)
	}
	reg, err := s.Layout().LoadFaces()
	if err != nil || !reg.Has("old") || !reg.Has("party") || reg.Has("ugly") {
		t.Errorf("after AddFace, faces = %v, %v, want old and party and no errors", reg.Names(), err)
	}

	// A file that is not JSON at all is left for a human to look at.
	broken := `{"faces": {"precious": "(o_o)"`
	if err := os.WriteFile(path, []byte(broken), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := s.Memories().AddFaces(contracts.AddFace{Name: "party", Glyphs: "(^o^)/"}); !errors.Is(err, faces.ErrBadFile) {
		t.Errorf("AddFace over an unparsable file = %v, want faces.ErrBadFile", err)
	}
	if got := readFile(t, path); got != broken {
		t.Errorf("AddFace overwrote an unparsable faces file with %q", got)
	}
}

// TestKeepIsWholeOrNothing: one reply's notes, about.md and learnings,
// one note of which would take its topic past the cap: nothing of it is
// kept, not the parts that fit.
func TestKeepIsWholeOrNothing(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	l := s.Layout()
	if err := os.WriteFile(l.MemoryTopic("big"), []byte(strings.Repeat("x", MaxMemoryFileBytes-10)+"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	err := s.Memories().Keep(ctx, "t1", Memory{
		Notes:     []contracts.Remember{{Topic: "coffee", Text: "hazelnut"}, {Topic: "big", Text: "one too many"}},
		About:     "a new picture",
		Learnings: []contracts.CaptureLearning{{Text: "ask first"}},
	}, noteTime)
	if !errors.Is(err, ErrMemoryFull) || !strings.Contains(err.Error(), "memory/big.md") {
		t.Fatalf("Keep past a topic's cap = %v, want ErrMemoryFull naming memory/big.md", err)
	}
	if got := readFile(t, l.MemoryTopic("coffee")); got != "" {
		t.Errorf("memory/coffee.md = %q from a refused batch", got)
	}
	if got := readFile(t, l.About()); got != "" {
		t.Errorf("about.md = %q from a refused batch", got)
	}
	if n := learnings(t, s); n != 0 {
		t.Errorf("%d learnings kept from a refused batch", n)
	}
}

// TestKeepBoundsTheTopics: with MaxMemoryTopics topics, a note to one of
// them is kept, and a batch with a new topic is refused whole, saying
// what to do instead.
func TestKeepBoundsTheTopics(t *testing.T) {
	s := newStore(t)
	l := s.Layout()
	for i := range MaxMemoryTopics {
		if err := os.WriteFile(l.MemoryTopic(fmt.Sprintf("t%d", i)), nil, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := remember(s, "t3", "still fits", noteTime); err != nil {
		t.Fatalf("a note to a topic the full memory has = %v, want nil", err)
	}
	err := s.Memories().Keep(context.Background(), "t1", Memory{Notes: []contracts.Remember{{Topic: "t4", Text: "fits"}, {Topic: "new", Text: "does not"}}}, noteTime)
	if !errors.Is(err, ErrMemoryFull) || !strings.Contains(err.Error(), "remember it under a topic it has") {
		t.Fatalf("Keep of a topic past the bound = %v, want ErrMemoryFull saying what to do", err)
	}
	if got := readFile(t, l.MemoryTopic("t4")); got != "" {
		t.Errorf("memory/t4.md = %q from a refused batch", got)
	}
	if _, err := os.Stat(l.MemoryTopic("new")); err == nil {
		t.Error("memory/new.md was written past the bound")
	}
}

// TestKeepBoundsTheLearnings: with MaxLearnings kept, a batch with one
// more is refused whole.
func TestKeepBoundsTheLearnings(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if _, err := s.db.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < ?)
		INSERT INTO learnings (turn, text, tags, at) SELECT 't0', 'old', '', 0 FROM n`, MaxLearnings); err != nil {
		t.Fatal(err)
	}
	err := s.Memories().Keep(ctx, "t1", Memory{Notes: []contracts.Remember{{Topic: "coffee", Text: "hazelnut"}}, Learnings: []contracts.CaptureLearning{{Text: "one more"}}}, noteTime)
	if !errors.Is(err, ErrMemoryFull) || !strings.Contains(err.Error(), "learnings") {
		t.Fatalf("Keep past the learnings' bound = %v, want ErrMemoryFull saying so", err)
	}
	if n := learnings(t, s); n != MaxLearnings {
		t.Errorf("%d learnings after a refused batch, want %d", n, MaxLearnings)
	}
	if got := readFile(t, s.Layout().MemoryTopic("coffee")); got != "" {
		t.Errorf("memory/coffee.md = %q from a refused batch", got)
	}
}

// TestAddFacesKeepsTheGoodOnes: a face the font cannot draw is left out
// and said; the one beside it is added.
func TestAddFacesKeepsTheGoodOnes(t *testing.T) {
	s := newStore(t)
	err := s.Memories().AddFaces(contracts.AddFace{Name: "ugly", Glyphs: "ಠ_ಠ"}, contracts.AddFace{Name: "party", Glyphs: "(^o^)/"})
	if !errors.Is(err, faces.ErrUndrawable) {
		t.Errorf("AddFaces with an undrawable face = %v, want it to wrap ErrUndrawable", err)
	}
	reg, err := s.Layout().LoadFaces()
	if err != nil || !reg.Has("party") || reg.Has("ugly") {
		t.Errorf("faces = %v, %v; want party and not ugly", reg.Names(), err)
	}
}

func learnings(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM learnings`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
