package faces

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"faces": {"party": "(^o^)/"}}`))
	f.Add([]byte(`{"faces": {"happy": "x", "Bad": "ಠ_ಠ", "n": 1}}`))
	f.Add([]byte(`{"faces": `))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "faces.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		reg, err := Load(path)
		if errors.Is(err, ErrBadFile) && len(reg.Names()) != len(builtin) {
			t.Fatalf("a bad file gave %d faces, want the %d built-ins", len(reg.Names()), len(builtin))
		}
		for name, glyphs := range builtin {
			if got, _ := reg.Lookup(name); got != glyphs {
				t.Fatalf("Load changed built-in %q to %q", name, got)
			}
		}
		// Whatever was loaded must survive a write and a reload unchanged.
		out, err := reg.MarshalAdded()
		if err != nil {
			t.Fatalf("MarshalAdded: %v", err)
		}
		if err := os.WriteFile(path, out, 0o600); err != nil {
			t.Fatal(err)
		}
		back, err := Load(path)
		if err != nil {
			t.Fatalf("reloading %q: %v", out, err)
		}
		if len(back.Names()) != len(reg.Names()) {
			t.Fatalf("reload has %d faces, want %d", len(back.Names()), len(reg.Names()))
		}
	})
}

func FuzzWith(f *testing.F) {
	f.Add("party", "(^o^)/")
	f.Add("HAPPY", "(^_^)")
	f.Add("", "")
	f.Add("ugly", "ಠ_ಠ")
	f.Fuzz(func(t *testing.T, name, glyphs string) {
		reg, err := Builtin().With(name, glyphs)
		if err != nil {
			if len(reg.Names()) != len(builtin) {
				t.Fatalf("a refused With(%q, %q) added a face", name, glyphs)
			}
			return
		}
		if got, ok := reg.Lookup(name); !ok || got != glyphs {
			t.Fatalf("With(%q, %q) then Lookup = %q, %v", name, glyphs, got, ok)
		}
		if resolved, got, known := reg.Resolve(name); !known || got != glyphs || !reg.Has(resolved) {
			t.Fatalf("Resolve(%q) = %q, %q, %v", name, resolved, got, known)
		}
	})
}
