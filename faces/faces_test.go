package faces

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"shelldon/contracts"
)

func TestBuiltinFacesAreValidAndDrawable(t *testing.T) {
	want := []string{"bored", "cant-think", "cool", "curious", "excited", "grumpy", "happy", "neutral", "sad", "sleeping", "smart", "thinking"}
	reg := Builtin()
	if got := reg.Names(); !slices.Equal(got, want) {
		t.Fatalf("Builtin().Names() = %v, want %v", got, want)
	}
	for _, name := range want {
		glyphs, ok := reg.Lookup(name)
		if !ok {
			t.Fatalf("Lookup(%q) found nothing", name)
		}
		if err := (contracts.AddFace{Name: name, Glyphs: glyphs}).Validate(); err != nil {
			t.Errorf("built-in face %q %q fails the add_face rules: %v", name, glyphs, err)
		}
		for _, c := range glyphs {
			if !drawable(c) {
				t.Errorf("built-in face %q %q has %q (%U), which the font cannot draw", name, glyphs, c, c)
			}
		}
	}
	for _, name := range []string{Thinking, CantThink, Sleeping, DefaultReply} {
		if !reg.Has(name) {
			t.Errorf("Has(%q) = false for a face core pushes", name)
		}
	}
}

func TestLookupNormalizesNames(t *testing.T) {
	reg, err := Builtin().With("party", "(^o^)/")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		want   string
		wantOK bool
	}{
		{"happy", "(^‿^)", true},
		{"  HAPPY ", "(^‿^)", true},
		{"Cant-Think", "(x_x)", true},
		{"Party", "(^o^)/", true},
		{"party\t", "(^o^)/", true},
		{"", "", false},
		{"haPpy face", "", false},
		{"nope", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := reg.Lookup(tt.name)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Lookup(%q) = %q, %v, want %q, %v", tt.name, got, ok, tt.want, tt.wantOK)
			}
			if has := reg.Has(tt.name); has != tt.wantOK {
				t.Errorf("Has(%q) = %v, want %v", tt.name, has, tt.wantOK)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	reg, err := Builtin().With("party", "(^o^)/")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		pick       string
		wantName   string
		wantGlyphs string
		wantKnown  bool
	}{
		{"grumpy", "grumpy", "(ò_ó)", true},
		{" Sad ", "sad", "(╥_╥)", true},
		{"PARTY", "party", "(^o^)/", true},
		{"", DefaultReply, "(^‿^)", false},
		{"   ", DefaultReply, "(^‿^)", false},
		{"ecstatic", DefaultReply, "(^‿^)", false},
	}
	for _, tt := range tests {
		t.Run(tt.pick, func(t *testing.T) {
			name, glyphs, known := reg.Resolve(tt.pick)
			if name != tt.wantName || glyphs != tt.wantGlyphs || known != tt.wantKnown {
				t.Errorf("Resolve(%q) = %q, %q, %v, want %q, %q, %v", tt.pick, name, glyphs, known, tt.wantName, tt.wantGlyphs, tt.wantKnown)
			}
		})
	}
}

func TestWith(t *testing.T) {
	tests := []struct {
		name    string
		face    string
		glyphs  string
		wantIs  error
		wantMsg string
	}{
		{name: "new face", face: "party", glyphs: "(^o^)/"},
		{name: "name is normalized", face: " Wink ", glyphs: "(^_~)"},
		{name: "built-in refused", face: "happy", glyphs: "(^_^)", wantIs: ErrBuiltin, wantMsg: "cannot be replaced"},
		{name: "built-in refused whatever the case", face: "Sleeping", glyphs: "(z_z)", wantIs: ErrBuiltin},
		{name: "bad name", face: "no spaces", glyphs: "(^_^)", wantIs: contracts.ErrInvalidOp},
		{name: "empty name", face: "", glyphs: "(^_^)", wantIs: contracts.ErrInvalidOp},
		{name: "empty glyphs", face: "blank", glyphs: "  ", wantIs: contracts.ErrInvalidOp},
		{name: "too many glyphs", face: "long", glyphs: strings.Repeat("o", contracts.MaxFaceGlyphs+1), wantIs: contracts.ErrInvalidOp},
		{name: "unprintable", face: "bell", glyphs: "(\a)", wantIs: contracts.ErrInvalidOp},
		{name: "invalid UTF-8", face: "broken", glyphs: "(\xff)", wantIs: contracts.ErrInvalidOp},
		{name: "Kannada the font lacks", face: "disapproval", glyphs: "ಠ_ಠ", wantIs: ErrUndrawable, wantMsg: "U+0CA0"},
		{name: "emoji the font lacks", face: "grin", glyphs: "(😀)", wantIs: ErrUndrawable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := Builtin()
			after, err := before.With(tt.face, tt.glyphs)
			if tt.wantIs == nil {
				if err != nil {
					t.Fatalf("With(%q, %q) = %v, want nil", tt.face, tt.glyphs, err)
				}
				if got, ok := after.Lookup(tt.face); !ok || got != tt.glyphs {
					t.Errorf("after With(%q, %q), Lookup = %q, %v", tt.face, tt.glyphs, got, ok)
				}
				if before.Has(tt.face) {
					t.Errorf("With(%q) changed the registry it was called on", tt.face)
				}
				return
			}
			if !errors.Is(err, tt.wantIs) {
				t.Fatalf("With(%q, %q) = %v, want it to wrap %v", tt.face, tt.glyphs, err, tt.wantIs)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("With(%q, %q) = %q, want it to say %q", tt.face, tt.glyphs, err, tt.wantMsg)
			}
			if !slices.Equal(after.Names(), before.Names()) {
				t.Errorf("a refused With(%q) changed the names: %v", tt.face, after.Names())
			}
		})
	}
}

func TestWithReplacesAnAddedFace(t *testing.T) {
	first, err := Builtin().With("party", "(^o^)/")
	if err != nil {
		t.Fatal(err)
	}
	second, err := first.With("party", `\(^o^)/`)
	if err != nil {
		t.Fatalf("replacing an added face: %v", err)
	}
	if got, _ := second.Lookup("party"); got != `\(^o^)/` {
		t.Errorf("after replacing, Lookup(party) = %q", got)
	}
	if got, _ := first.Lookup("party"); got != "(^o^)/" {
		t.Errorf("replacing changed the earlier registry: Lookup(party) = %q", got)
	}
	if n := len(second.Names()); n != len(Builtin().Names())+1 {
		t.Errorf("Names() has %d entries after a replacement, want %d", n, len(Builtin().Names())+1)
	}
}

func TestWithStopsAtMaxAdded(t *testing.T) {
	reg := Builtin()
	for i := range MaxAdded {
		next, err := reg.With(fmt.Sprintf("face-%d", i), "(o_o)")
		if err != nil {
			t.Fatalf("adding face %d: %v", i, err)
		}
		reg = next
	}
	if _, err := reg.With("one-more", "(o_o)"); !errors.Is(err, ErrFull) {
		t.Errorf("With beyond %d added faces = %v, want ErrFull", MaxAdded, err)
	}
	if _, err := reg.With("face-0", "(O_O)"); err != nil {
		t.Errorf("replacing an added face in a full registry = %v, want nil", err)
	}
}

func TestDrawable(t *testing.T) {
	tests := []struct {
		r    rune
		want bool
	}{
		{' ', true}, {'~', true}, {0x7f, false}, {'°', true}, {'ω', true},
		{'╥', true}, {'■', true}, {'‿', true}, {'ಠ', false}, {'ロ', false},
		{0x1F600, false}, {-1, false}, {0x10FFFF, false},
	}
	for _, tt := range tests {
		if got := drawable(tt.r); got != tt.want {
			t.Errorf("drawable(%q %U) = %v, want %v", tt.r, tt.r, got, tt.want)
		}
	}
}
