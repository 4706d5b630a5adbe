package faces

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"shelldon/contracts"
)

// The names core itself pushes, and the face a reply gets when the model's
// pick is missing or unknown.
const (
	Thinking     = "thinking"
	CantThink    = "cant-think"
	Sleeping     = "sleeping"
	DefaultReply = "happy"
)

// MaxAdded is how many faces may be added on top of the built-ins. Every face
// is listed in each prompt, so the list must stay short.
const MaxAdded = 48

var (
	// ErrBuiltin is wrapped by With when the name belongs to a built-in face,
	// which can never be replaced.
	ErrBuiltin = errors.New("built-in face")
	// ErrUndrawable is wrapped by With when the panel's font has no glyph
	// for a character of the face.
	ErrUndrawable = errors.New("the panel's font cannot draw")
	// ErrFull is wrapped by With when MaxAdded faces were already added.
	ErrFull = errors.New("face registry full")
)

// builtin faces never change; a Registry only copies the added ones.
var builtin = map[string]string{
	Thinking:  "(˘_˘)…",
	CantThink: "(x_x)",
	Sleeping:  "(-_-) zZ",
	"happy":   "(^‿^)",
	"curious": "(o_O)?",
	"grumpy":  "(ò_ó)",
	"bored":   "(¬_¬)",
	"excited": `\(°▽°)/`,
	"sad":     "(╥_╥)",
	"cool":    "(⌐■_■)",
	"smart":   "(•ᴗ•)☝",
	"neutral": "(·_·)",
}

// Registry maps face names to their glyphs: the built-in faces plus those
// added with With or loaded from the faces file. A Registry is a value: With
// returns a new one and leaves the receiver as it was. The zero Registry
// holds the built-in faces only.
type Registry struct {
	added map[string]string
}

// Builtin returns the registry of the built-in faces alone.
func Builtin() Registry { return Registry{} }

// normalize is how names are compared: case and surrounding spaces do not count.
func normalize(name string) string {
	return strings.ToLower(strings.TrimSpace(name))
}

// Lookup returns the glyphs of the face called name.
func (r Registry) Lookup(name string) (glyphs string, ok bool) {
	name = normalize(name)
	if glyphs, ok := builtin[name]; ok {
		return glyphs, true
	}
	glyphs, ok = r.added[name]
	return glyphs, ok
}

// Has reports whether the registry knows a face called name.
func (r Registry) Has(name string) bool {
	_, ok := r.Lookup(name)
	return ok
}

// Resolve turns a model's pick into a face to show. An empty or unknown pick
// gives the DefaultReply face with known set to false, so the caller can
// note that the model named a face that does not exist.
func (r Registry) Resolve(pick string) (name, glyphs string, known bool) {
	if glyphs, ok := r.Lookup(pick); ok {
		return normalize(pick), glyphs, true
	}
	return DefaultReply, builtin[DefaultReply], false
}

// Names returns the names of every face, built-in and added, sorted.
func (r Registry) Names() []string {
	names := slices.Collect(maps.Keys(builtin))
	names = slices.AppendSeq(names, maps.Keys(r.added))
	slices.Sort(names)
	return names
}

// With returns a registry that also has the face name drawn as glyphs. The
// face must pass [contracts.AddFace] validation and be drawable by the
// panel's font; a built-in face cannot be replaced, an added one can.
func (r Registry) With(name, glyphs string) (Registry, error) {
	name = normalize(name)
	if err := (contracts.AddFace{Name: name, Glyphs: glyphs}).Validate(); err != nil {
		return r, fmt.Errorf("add face %q: %w", name, err)
	}
	if _, ok := builtin[name]; ok {
		return r, fmt.Errorf("add face %q: %w, it cannot be replaced", name, ErrBuiltin)
	}
	for _, c := range glyphs {
		if !drawable(c) {
			return r, fmt.Errorf("add face %q: %w %q (%U)", name, ErrUndrawable, c, c)
		}
	}
	if _, replacing := r.added[name]; !replacing && len(r.added) >= MaxAdded {
		return r, fmt.Errorf("add face %q: %w, it already holds %d added faces", name, ErrFull, MaxAdded)
	}
	added := maps.Clone(r.added)
	if added == nil {
		added = make(map[string]string, 1)
	}
	added[name] = glyphs
	return Registry{added: added}, nil
}
