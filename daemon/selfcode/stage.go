package selfcode

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"shelldon/daemon/state/atomicfile"
)

// MaxFileBytes caps the module and the test, each.
const MaxFileBytes = 64 << 10

// ErrRefused means a proposal cannot be staged; the error says why.
var ErrRefused = errors.New("tool proposal refused")

// pythonKeywords cannot be module names; a stem that is one gets "_tool".
var pythonKeywords = []string{"False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
	"continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in",
	"is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield"}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// maxStemBytes keeps file names and tool names short.
const maxStemBytes = 48

// Stem normalises a proposed tool name to an importable module name:
// lower case, runs of other characters become "_", no leading digit, a
// Python keyword gets "_tool". A name with nothing usable is refused.
func Stem(name string) (string, error) {
	s := nonIdent.ReplaceAllString(strings.ToLower(strings.TrimSpace(name)), "_")
	s = strings.Trim(s, "_")
	if s == "" {
		return "", fmt.Errorf("%w: %q has no letters or digits to name a module", ErrRefused, name)
	}
	if len(s) > maxStemBytes {
		return "", fmt.Errorf("%w: %q is longer than %d characters; choose a short name", ErrRefused, name, maxStemBytes)
	}
	if s[0] >= '0' && s[0] <= '9' {
		s = "tool_" + s
	}
	if slices.Contains(pythonKeywords, s) {
		s += "_tool"
	}
	return s, nil
}

// Staged is a proposal written into the staging directory.
type Staged struct {
	Stem   string
	Dir    string // the staging directory
	Module string // <Dir>/<stem>.py
	Test   string // <Dir>/test_<stem>.py
}

// Stage writes a proposal into dir (tools-staging) after checking its
// name and sizes; builtins are the names it may not take. A stale pair of
// the same stem is replaced.
func Stage(dir, name, code, test string, builtins []string) (Staged, error) {
	stem, err := Stem(name)
	if err != nil {
		return Staged{}, err
	}
	if slices.Contains(builtins, stem) {
		return Staged{}, fmt.Errorf("%w: %q would shadow the built-in tool %s; choose another name", ErrRefused, name, stem)
	}
	for what, body := range map[string]string{"the module": code, "the test": test} {
		switch {
		case strings.TrimSpace(body) == "":
			return Staged{}, fmt.Errorf("%w: %s is empty", ErrRefused, what)
		case len(body) > MaxFileBytes:
			return Staged{}, fmt.Errorf("%w: %s is %d bytes, over the %d KiB limit", ErrRefused, what, len(body), MaxFileBytes>>10)
		}
	}
	s := Staged{Stem: stem, Dir: dir, Module: filepath.Join(dir, stem+".py"), Test: filepath.Join(dir, "test_"+stem+".py")}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return Staged{}, fmt.Errorf("stage %s: %w", stem, err)
	}
	if err := s.Discard(); err != nil {
		return Staged{}, err
	}
	if err := atomicfile.WriteFile(s.Module, []byte(code), 0o640); err != nil {
		return Staged{}, fmt.Errorf("stage %s: %w", stem, err)
	}
	if err := atomicfile.WriteFile(s.Test, []byte(test), 0o640); err != nil {
		return Staged{}, fmt.Errorf("stage %s: %w", stem, err)
	}
	return s, nil
}

// Discard removes the staged pair; a pair already gone is not an error.
func (s Staged) Discard() error {
	for _, p := range []string{s.Module, s.Test} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("discard %s: %w", s.Stem, err)
		}
	}
	return nil
}
