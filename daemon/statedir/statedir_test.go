package statedir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"shelldon/faces"
)

func TestLayoutPaths(t *testing.T) {
	l := Layout{Root: "/var/lib/shelldon"}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"DB", l.DB(), "/var/lib/shelldon/state.db"},
		{"Directive", l.Directive(), "/var/lib/shelldon/DIRECTIVE.md"},
		{"About", l.About(), "/var/lib/shelldon/about.md"},
		{"MemoryDir", l.MemoryDir(), "/var/lib/shelldon/memory"},
		{"MemoryTopic", l.MemoryTopic("coffee"), "/var/lib/shelldon/memory/coffee.md"},
		{"Faces", l.Faces(), "/var/lib/shelldon/faces.json"},
		{"Vault", l.Vault(), "/var/lib/shelldon/vault"},
		{"Workspace", l.Workspace(), "/var/lib/shelldon/workspace"},
		{"ToolStore", l.ToolStore(), "/var/lib/shelldon/tools"},
		{"Changes", l.Changes(), "/var/lib/shelldon/changes"},
		{"Runs", l.Runs(), "/var/lib/shelldon/runs"},
		{"Photos", l.Photos(), "/var/lib/shelldon/photos"},
		{"Socket", l.Socket(), "/var/lib/shelldon/bus.sock"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s() = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestReadCapped(t *testing.T) {
	long := strings.Repeat("a", MaxReadBytes-1) + "é" + "tail" // é straddles the cap
	tests := []struct {
		name       string
		content    string
		wantPrefix string
		wantCut    bool
	}{
		{name: "empty", content: ""},
		{name: "small", content: "be kind\n"},
		{name: "exactly the cap", content: strings.Repeat("x", MaxReadBytes)},
		{name: "one over the cap", content: strings.Repeat("x", MaxReadBytes+1), wantPrefix: strings.Repeat("x", MaxReadBytes), wantCut: true},
		{name: "cut inside a character", content: long, wantPrefix: strings.Repeat("a", MaxReadBytes-1), wantCut: true},
		{name: "invalid UTF-8 over the cap", content: strings.Repeat("\x80", MaxReadBytes+10), wantCut: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := Layout{Root: t.TempDir()}
			for _, path := range []string{l.Directive(), l.About()} {
				if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			for name, read := range map[string]func() (string, error){"ReadDirective": l.ReadDirective, "ReadAbout": l.ReadAbout} {
				got, err := read()
				if err != nil {
					t.Fatalf("%s() error = %v", name, err)
				}
				if !tt.wantCut {
					if got != tt.content {
						t.Errorf("%s() = %d bytes, want the %d bytes of the file", name, len(got), len(tt.content))
					}
					continue
				}
				if !strings.HasPrefix(got, tt.wantPrefix) || strings.HasPrefix(got, tt.wantPrefix+"é") {
					t.Errorf("%s() does not keep the first %d bytes whole", name, len(tt.wantPrefix))
				}
				if !strings.Contains(got, "cut off") {
					t.Errorf("%s() of an oversize file has no note saying it was cut", name)
				}
				if body, _, _ := strings.Cut(got, "\n\n["); len(body) > MaxReadBytes {
					t.Errorf("%s() kept %d bytes, over the cap of %d", name, len(body), MaxReadBytes)
				}
				if utf8.ValidString(tt.content) && !utf8.ValidString(got) {
					t.Errorf("%s() split a character", name)
				}
			}
		})
	}
}

func TestMissingFiles(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	about, err := l.ReadAbout()
	if about != "" || err != nil {
		t.Errorf("ReadAbout() of a missing file = %q, %v, want \"\", nil", about, err)
	}
	_, err = l.ReadDirective()
	if err == nil {
		t.Fatal("ReadDirective() of a missing file = nil error, want one")
	}
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), l.Directive()) || !strings.Contains(err.Error(), "core creates it") {
		t.Errorf("ReadDirective() = %q, want a not-exist error naming %s and saying core creates it", err, l.Directive())
	}
}

func TestUnreadableFiles(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	// Directories where the files should be cannot be read as files.
	for _, path := range []string{l.Directive(), l.About()} {
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.ReadDirective(); err == nil || !strings.Contains(err.Error(), l.Directive()) {
		t.Errorf("ReadDirective() of a directory = %v, want an error naming it", err)
	}
	if _, err := l.ReadAbout(); err == nil || !strings.Contains(err.Error(), l.About()) {
		t.Errorf("ReadAbout() of a directory = %v, want an error naming it", err)
	}
}

func TestLoadFaces(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	reg, err := l.LoadFaces()
	if err != nil || len(reg.Names()) != len(faces.Builtin().Names()) {
		t.Fatalf("LoadFaces() without a file = %v, %v, want the built-ins", reg.Names(), err)
	}
	if err := os.WriteFile(filepath.Join(l.Root, "faces.json"), []byte(`{"faces": {"party": "(^o^)/"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	reg, err = l.LoadFaces()
	if err != nil || !reg.Has("party") {
		t.Errorf("LoadFaces() = %v, %v, want party added", reg.Names(), err)
	}
}
