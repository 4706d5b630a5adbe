package manual

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writePages(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestTableIsFoundOnWhicheverPage(t *testing.T) {
	root := writePages(t, map[string]string{
		"README.md":      "# x\n\n| type | to see |\n| --- | --- |\n| `run ls` | a listing |\n",
		"docs/b.md":      "| command | what |\n|---|---|\n| `shelldon up` | core |\n| `shelldon chat` | talk |\n\nafter\n",
		"docs/a.md":      "no tables\n",
		"docs/notes.txt": "| command | not a page |\n",
	})
	pages, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{pages[0].Path, pages[1].Path, pages[2].Path}; strings.Join(got, ",") != "README.md,docs/a.md,docs/b.md" || len(pages) != 3 {
		t.Fatalf("Read = %v, want README.md then docs/a.md, docs/b.md", got)
	}
	rows, page, err := Table(pages, "command")
	if err != nil || page != "docs/b.md" || len(rows) != 2 || rows[1][0] != "shelldon chat" || rows[1][1] != "talk" {
		t.Errorf("Table(command) = %q on %q, %v; want two rows from docs/b.md", rows, page, err)
	}
	if _, _, err := Table(pages, "nothing"); err == nil {
		t.Error("Table(nothing) found a table")
	}
	if !strings.Contains(Text(pages), "no tables") {
		t.Error("Text leaves a page out")
	}
}

func TestTwoTablesWithOneHeaderAreAnError(t *testing.T) {
	root := writePages(t, map[string]string{
		"README.md": "| type | x |\n|---|---|\n| a | b |\n",
		"docs/a.md": "| type | y |\n|---|---|\n| c | d |\n",
	})
	pages, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Table(pages, "type"); err == nil || !strings.Contains(err.Error(), "two tables") {
		t.Errorf("Table over two tables headed alike = %v, want an error naming both", err)
	}
}
