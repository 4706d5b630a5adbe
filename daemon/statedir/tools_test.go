package statedir

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestSelfCodedTools(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	files := map[string]string{
		l.Tools() + "/calc.json":                "{}",
		l.Tools() + "/calc.py":                  "",
		l.Tools() + "/test_calc.py":             "",
		l.ToolsStaging() + "/draft.py":          "",
		l.ToolsStaging() + "/test_draft.py":     "",
		l.ToolsQuarantine() + "/broken.json":    "{}",
		l.ToolsQuarantine() + "/test_broken.py": "",
		l.Tools() + "/abacus.json":              "{}",
		l.Tools() + "/notes.txt":                "not a tool",
	}
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := l.SelfCodedTools()
	want := []ToolFile{{"abacus", ToolLive}, {"calc", ToolLive}, {"draft", ToolStaged}, {"broken", ToolQuarantined}}
	if !slices.Equal(got, want) {
		t.Errorf("SelfCodedTools() = %v, want %v", got, want)
	}
	if got := (Layout{Root: filepath.Join(t.TempDir(), "missing")}).SelfCodedTools(); len(got) != 0 {
		t.Errorf("SelfCodedTools() of an empty state = %v, want none", got)
	}
}
