package visible_test

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"shelldon/daemon/visible"
)

// mustEscape is the list of runes that may never reach the screen raw,
// written out class by class apart from the package's own rule, so
// that the fuzz tests check the package against the list rather than
// against itself.
func mustEscape(r rune) bool {
	switch {
	case r <= 0x1f, r == 0x7f, 0x80 <= r && r <= 0x9f: // C0, DEL, C1
	case unicode.Is(unicode.Cf, r): // format: bidi, zero-width, soft hyphen, tags, …
	case r == 0x2028, r == 0x2029: // line and paragraph separators
	case r == 0x115f, r == 0x1160, r == 0x3164, r == 0xffa0: // Hangul fillers
	case r == 0x034f, r == 0x17b4, r == 0x17b5: // other default-ignorable marks
	case 0xe0000 <= r && r <= 0xe0fff: // tags and their reserved block
	case 0xfe00 <= r && r <= 0xfe0f, 0xe0100 <= r && r <= 0xe01ef, 0x180b <= r && r <= 0x180f: // variation selectors
	case unicode.Is(unicode.Co, r): // private use
	case 0xfdd0 <= r && r <= 0xfdef, r&0xfffe == 0xfffe: // noncharacters
	case !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.C): // unassigned
	default:
		return false
	}
	return true
}

// fuzzSeeds start the fuzzers from every class of the table tests.
func fuzzSeeds(f *testing.F) {
	for _, tc := range textCases {
		f.Add(tc.in)
	}
	for _, argv := range nastyArgvs {
		for _, arg := range argv {
			f.Add(arg)
		}
	}
}

// checkShown fails unless out is valid UTF-8 without a rune that must be
// escaped, but for those in kept.
func checkShown(t *testing.T, name, in, out, kept string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("%s(%q) = %q, which is not valid UTF-8", name, in, out)
	}
	if i := strings.IndexFunc(out, func(r rune) bool { return mustEscape(r) && !strings.ContainsRune(kept, r) }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(out[i:])
		t.Fatalf("%s(%q) = %q, which holds %U", name, in, out, r)
	}
}

// plain reports whether Text must leave s as it is: valid UTF-8 of
// letters (but the Hangul fillers), numbers, punctuation, symbols,
// spaces, newlines and tabs.
func plain(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r != '\n' && r != '\t' && (mustEscape(r) || !unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S, unicode.Zs)) {
			return false
		}
	}
	return true
}

// FuzzText checks that Text shows no rune that must be escaped but
// newlines and tabs, keeps the text's lines, and leaves plain text as it
// is.
func FuzzText(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		out := visible.Text(s)
		checkShown(t, "Text", s, out, "\n\t")
		if strings.Count(out, "\n") != strings.Count(s, "\n") {
			t.Fatalf("Text(%q) = %q, which has %d lines, want %d", s, out, strings.Count(out, "\n"), strings.Count(s, "\n"))
		}
		if plain(s) && out != s {
			t.Fatalf("Text(%q) = %q, want it unchanged", s, out)
		}
	})
}

// FuzzLine checks that Line shows no rune that must be escaped, newlines
// and tabs included, and is Text where the two agree.
func FuzzLine(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		out := visible.Line(s)
		checkShown(t, "Line", s, out, "")
		if !strings.ContainsAny(s, "\n\t") && out != visible.Text(s) {
			t.Fatalf("Line(%q) = %q, want Text's %q", s, out, visible.Text(s))
		}
	})
}

// FuzzQuote checks that Quote shows no rune that must be escaped and no
// non-ASCII space, and that the shell parser reads the word back as s.
func FuzzQuote(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		out := visible.Quote(s)
		checkShown(t, "Quote", s, out, "")
		if i := strings.IndexFunc(out, func(r rune) bool { return r > 0x7f && unicode.Is(unicode.Zs, r) }); i >= 0 {
			t.Fatalf("Quote(%q) = %q, which holds a non-ASCII space", s, out)
		}
		if strings.Contains(s, "\x00") {
			return // a shell cuts the word at a NUL (see nastyArgvs)
		}
		got, err := parseArgv("x " + out)
		if err != nil || !slices.Equal(got, []string{"x", s}) {
			t.Fatalf("Quote(%q) = %q, which parses back as %q, %v", s, out, got, err)
		}
	})
}

// FuzzArgv checks that the shell parser reads Argv's line back as the
// argv, whatever its first word.
func FuzzArgv(f *testing.F) {
	for _, argv := range nastyArgvs {
		f.Add(argv[0], argv[len(argv)-1], strings.Join(argv, " "))
	}
	f.Fuzz(func(t *testing.T, a, b, c string) {
		argv := []string{a, b, c}
		if strings.Contains(a+b+c, "\x00") {
			return // a shell cuts the word at a NUL (see nastyArgvs)
		}
		line := visible.Argv(argv)
		got, err := parseArgv(line)
		if err != nil || !slices.Equal(got, argv) {
			t.Fatalf("Argv(%q) = %q, which parses back as %q, %v", argv, line, got, err)
		}
	})
}
