package faces

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"shelldon/testhost"
)

func writeFaces(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "faces.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoad(t *testing.T) {
	builtinNames := Builtin().Names()
	tests := []struct {
		name      string
		content   string // "" means no file
		wantAdded map[string]string
		wantErrs  []string // each must appear in the error
		wantBad   bool     // the error wraps ErrBadFile
	}{
		{name: "missing file"},
		{name: "empty object", content: `{}`},
		{name: "null faces", content: `{"faces": null}`},
		{
			name:      "good faces",
			content:   `{"faces": {"party": "(^o^)/", "wink": "(^_~)"}}`,
			wantAdded: map[string]string{"party": "(^o^)/", "wink": "(^_~)"},
		},
		{
			name:      "bad entries skipped, good kept",
			content:   `{"faces": {"party": "(^o^)/", "happy": "(^_^)", "Bad Name": "(o)", "ugly": "ಠ_ಠ", "num": 7, "nil": null}}`,
			wantAdded: map[string]string{"party": "(^o^)/"},
			wantErrs:  []string{`"happy"`, `"bad name"`, "U+0CA0", `"num"`, `"nil"`, "skipped"},
		},
		{name: "not JSON", content: `{"faces": `, wantErrs: []string{"faces.json"}, wantBad: true},
		{name: "faces not an object", content: `{"faces": ["a"]}`, wantErrs: []string{"faces.json"}, wantBad: true},
		{name: "too large", content: `{"faces": {}}` + strings.Repeat(" ", maxFileBytes), wantErrs: []string{"larger than"}, wantBad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "faces.json")
			if tt.content != "" {
				path = writeFaces(t, tt.content)
			}
			reg, err := Load(path)
			if len(tt.wantErrs) == 0 && err != nil {
				t.Fatalf("Load(%s) error = %v, want nil", tt.content, err)
			}
			if len(tt.wantErrs) > 0 && err == nil {
				t.Fatalf("Load(%s) error = nil, want one", tt.content)
			}
			for _, want := range tt.wantErrs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Load(%s) error = %q, want it to mention %s", tt.content, err, want)
				}
			}
			if got := errors.Is(err, ErrBadFile); got != tt.wantBad {
				t.Errorf("Load(%s): errors.Is(err, ErrBadFile) = %v, want %v", tt.content, got, tt.wantBad)
			}
			wantNames := slices.Clone(builtinNames)
			for name, glyphs := range tt.wantAdded {
				wantNames = append(wantNames, name)
				if got, ok := reg.Lookup(name); !ok || got != glyphs {
					t.Errorf("Load(%s): Lookup(%q) = %q, %v, want %q", tt.content, name, got, ok, glyphs)
				}
			}
			slices.Sort(wantNames)
			if got := reg.Names(); !slices.Equal(got, wantNames) {
				t.Errorf("Load(%s).Names() = %v, want %v", tt.content, got, wantNames)
			}
			if got, _ := reg.Lookup("happy"); got != "(^‿^)" {
				t.Errorf("Load(%s) changed the built-in happy face to %q", tt.content, got)
			}
		})
	}
}

func TestLoadUnreadableFile(t *testing.T) {
	// A directory where the file should be cannot be read.
	path := t.TempDir()
	reg, err := Load(path)
	if !errors.Is(err, ErrBadFile) || !strings.Contains(err.Error(), path) {
		t.Errorf("Load(directory) = %v, want an ErrBadFile naming %s", err, path)
	}
	if !slices.Equal(reg.Names(), Builtin().Names()) {
		t.Errorf("Load(directory).Names() = %v, want the built-ins", reg.Names())
	}
}

func TestMarshalAdded(t *testing.T) {
	empty, err := Builtin().MarshalAdded()
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"faces\": {}\n}\n"; string(empty) != want {
		t.Errorf("Builtin().MarshalAdded() = %q, want %q", empty, want)
	}

	reg := Builtin()
	for _, f := range [][2]string{{"wink", "(^_~)"}, {"angry", "(>_<)"}, {"party", "(^o^)/"}} {
		if reg, err = reg.With(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	data, err := reg.MarshalAdded()
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"faces\": {\n    \"angry\": \"(>_<)\",\n    \"party\": \"(^o^)/\",\n    \"wink\": \"(^_~)\"\n  }\n}\n"
	if string(data) != want {
		t.Errorf("MarshalAdded() = %q, want %q", data, want)
	}

	back, err := Load(writeFaces(t, string(data)))
	if err != nil {
		t.Fatalf("Load(MarshalAdded()) = %v", err)
	}
	if !slices.Equal(back.Names(), reg.Names()) {
		t.Errorf("round trip Names() = %v, want %v", back.Names(), reg.Names())
	}
}

// TestDrawableRangesMatchFont checks the coverage table against the font
// itself, when this machine has it and fontconfig's fc-query.
func TestDrawableRangesMatchFont(t *testing.T) {
	const font = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf"
	if _, err := os.Stat(font); err != nil {
		testhost.Missing(t, font, "apt-get install fonts-dejavu-core")
	}
	fcQuery := testhost.Tool(t, "fc-query", "fontconfig")
	out, err := exec.Command(fcQuery, "--format=%{charset}", font).Output()
	if err != nil {
		t.Fatalf("fc-query: %v", err)
	}
	var fromFont [][2]rune
	for _, field := range bytes.Fields(out) {
		lo, hi, isRange := strings.Cut(string(field), "-")
		if !isRange {
			hi = lo
		}
		a, errA := strconv.ParseInt(lo, 16, 32)
		b, errB := strconv.ParseInt(hi, 16, 32)
		if errA != nil || errB != nil {
			t.Fatalf("fc-query printed %q", field)
		}
		fromFont = append(fromFont, [2]rune{rune(a), rune(b)})
	}
	if !slices.Equal(fromFont, drawableRanges) {
		t.Errorf("drawableRanges differ from the %d ranges fc-query reports for %s; regenerate them", len(fromFont), font)
	}
}
