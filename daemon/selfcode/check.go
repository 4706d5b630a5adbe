package selfcode

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"shelldon/policy"
)

// MaxFileBytes caps the module and the test, each.
const MaxFileBytes = 64 << 10

// ErrRefused means a proposal cannot be taken; the error says why.
var ErrRefused = errors.New("tool proposal refused")

// pythonKeywords cannot be module names; a stem that is one gets "_tool".
var pythonKeywords = []string{"False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
	"continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in",
	"is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield"}

var nonIdent = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-z0-9_]+`) })

// maxStemBytes keeps file names and tool names short.
const maxStemBytes = 48

// Stem normalises a proposed tool name to an importable module name:
// lower case, runs of other characters become "_", no leading digit, a
// Python keyword gets "_tool". A name with nothing usable is refused.
func Stem(name string) (string, error) {
	s := nonIdent().ReplaceAllString(strings.ToLower(strings.TrimSpace(name)), "_")
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
	if strings.HasPrefix(s, "test_") {
		s = "tool_" + s // a module named test_* would be taken for a test
	}
	if slices.Contains(pythonKeywords, s) {
		s += "_tool"
	}
	return s, nil
}

// Check takes a proposal's name and files: the name normalised to a stem
// that no built-in has and that shadows no module of the sandbox's Python
// ([policy.ToolNameShadows]), the module and the test neither empty nor
// over MaxFileBytes.
func Check(name, code, test string, builtins []string) (stem string, err error) {
	stem, err = Stem(name)
	if err != nil {
		return "", err
	}
	if slices.Contains(builtins, stem) {
		return "", fmt.Errorf("%w: %q would shadow the built-in tool %s; choose another name", ErrRefused, name, stem)
	}
	if module, shadows := policy.ToolNameShadows(stem); shadows {
		return "", fmt.Errorf("%w: %q would shadow Python's module %s, which the checks and the tool itself import; choose another name", ErrRefused, name, module)
	}
	for _, f := range []struct{ what, body string }{{"the module", code}, {"the test", test}} {
		switch {
		case strings.TrimSpace(f.body) == "":
			return "", fmt.Errorf("%w: %s is empty", ErrRefused, f.what)
		case len(f.body) > MaxFileBytes:
			return "", fmt.Errorf("%w: %s is %d bytes, over the %d KiB limit", ErrRefused, f.what, len(f.body), MaxFileBytes>>10)
		}
	}
	return stem, nil
}
