// Package manual reads the owner's manual — README.md and the pages under
// docs/ — so that tests can hold what it says against what the code does:
// its tables of commands and fields, its transcripts, its configurations.
// The manual moved from one long README into pages; a test that reads
// through this package does not care which page a table lives on.
package manual

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Page is one file of the manual.
type Page struct {
	Path  string   // relative to the repository's root, e.g. "docs/telegram.md"
	Lines []string // its text, split at newlines
}

// Read returns README.md and every docs/*.md of the repository at root,
// README first, then the pages by name.
func Read(root string) ([]Page, error) {
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, fmt.Errorf("list the manual's pages: %w", err)
	}
	slices.Sort(paths)
	paths = append([]string{filepath.Join(root, "README.md")}, paths...)
	pages := make([]Page, 0, len(paths))
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read the manual: %w", err)
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil, err
		}
		pages = append(pages, Page{Path: filepath.ToSlash(rel), Lines: strings.Split(string(raw), "\n")})
	}
	return pages, nil
}

// Table returns the rows of the one table in pages whose header's first
// cell is header, as cells with their backticks removed, and the page it
// is on. It fails when no page or more than one has such a table, so a
// table is never read from the wrong page.
func Table(pages []Page, header string) (rows [][]string, page string, err error) {
	for _, p := range pages {
		start := slices.IndexFunc(p.Lines, func(l string) bool { return strings.HasPrefix(l, "| "+header+" |") })
		if start < 0 {
			continue
		}
		if page != "" {
			return nil, "", fmt.Errorf("the manual has two tables headed %q: %s and %s", header, page, p.Path)
		}
		page = p.Path
		for _, line := range p.Lines[start+2:] {
			if !strings.HasPrefix(line, "|") {
				break
			}
			var cells []string
			for _, cell := range strings.Split(strings.Trim(line, "|"), " | ") {
				cells = append(cells, strings.Trim(strings.TrimSpace(cell), "`"))
			}
			rows = append(rows, cells)
		}
	}
	if page == "" {
		return nil, "", fmt.Errorf("no page of the manual has a table headed %q", header)
	}
	return rows, page, nil
}

// Text is every page's text, joined, for a test that asks whether the
// manual says something anywhere.
func Text(pages []Page) string {
	var b strings.Builder
	for _, p := range pages {
		b.WriteString(strings.Join(p.Lines, "\n"))
		b.WriteString("\n")
	}
	return b.String()
}
