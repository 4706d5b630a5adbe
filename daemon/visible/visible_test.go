package visible_test

import (
	"testing"

	"shelldon/daemon/visible"
)

// textCases hold, for each class of character, an input and what Text
// shows of it; Line shows the same but for newlines and tabs.
var textCases = []struct{ in, want string }{
	// Nothing to escape: returned unchanged, backslashes included.
	{"", ""},
	{"hello, world: 1+1=2 (ok) [x] {y} ~/.bashrc $HOME `id` 'q' \"dq\" \\n \\x1b #!", "hello, world: 1+1=2 (ok) [x] {y} ~/.bashrc $HOME `id` 'q' \"dq\" \\n \\x1b #!"},
	{"café e\u0301 日本語 नमस्ते שלום 😀 \ufffd", "café e\u0301 日本語 नमस्ते שלום 😀 \ufffd"},
	{"nbsp\u00a0ideographic\u3000braille\u2800", "nbsp\u00a0ideographic\u3000braille\u2800"},
	// C0 controls and DEL.
	{"\x1b[2K\rwrites 5 bytes to notes.txt", `\x1b[2K\rwrites 5 bytes to notes.txt`},
	{"a\x00b\x07c\x08d\x0be\x0cf\x7f", `a\x00b\x07c\x08d\x0be\x0cf\x7f`},
	{"crlf\r\n", "crlf\\r\n"},
	{"\x1b]8;;https://evil.example\x1b\\notes.txt\x1b]8;;\x1b\\", `\x1b]8;;https://evil.example\x1b\notes.txt\x1b]8;;\x1b\`},
	// C1 controls: a code point, not the byte \x9b, which is not UTF-8.
	{"\u009b2Jhidden", "<U+009B>2Jhidden"},
	{"\u0080\u0085\u009f", "<U+0080><U+0085><U+009F>"},
	// Bidi controls.
	{"evil\u202etxt.py", "evil<U+202E>txt.py"},
	{"\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061c", "<U+202A><U+202B><U+202C><U+202D><U+2066><U+2067><U+2068><U+2069><U+200E><U+200F><U+061C>"},
	// Zero-width and other format characters.
	{"\u200bzw\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff", "<U+200B>zw<U+200C><U+200D><U+2060><U+2061><U+2062><U+2063><U+2064><U+FEFF>"},
	{"pass\u00adword", "pass<U+00AD>word"},
	{"\u180e\u206a\u206b\u206c\u206d\u206e\u206f\ufff9\ufffa\ufffb\u0600", "<U+180E><U+206A><U+206B><U+206C><U+206D><U+206E><U+206F><U+FFF9><U+FFFA><U+FFFB><U+0600>"},
	{"👨\u200d👩", "👨<U+200D>👩"},
	// Tag characters and the rest of plane 14's reserved block.
	{"ok\U000e0001\U000e0041\U000e0020\U000e007f", "ok<U+E0001><U+E0041><U+E0020><U+E007F>"},
	{"\U000e0000\U000e0002\U000e0080\U000e0fff", "<U+E0000><U+E0002><U+E0080><U+E0FFF>"},
	// Line and paragraph separators.
	{"one\u2028two\u2029three", "one<U+2028>two<U+2029>three"},
	// Hangul fillers and the other default-ignorable graphic runes.
	{"\u115f\u1160\u3164\uffa0", "<U+115F><U+1160><U+3164><U+FFA0>"},
	{"a\u034fb\u17b4\u17b5", "a<U+034F>b<U+17B4><U+17B5>"},
	// Variation selectors, which can carry hidden bytes.
	{"\u2764\ufe0f", "\u2764<U+FE0F>"},
	{"x\ufe00\U000e0100\U000e01ef\u180b", "x<U+FE00><U+E0100><U+E01EF><U+180B>"},
	// Private use.
	{"\ue000\uf8ff\U000f0000\U0010fffd", "<U+E000><U+F8FF><U+F0000><U+10FFFD>"},
	// Unassigned code points and noncharacters.
	{"\u0378\ufdd0\ufdef\ufffe\uffff\U0001fffe\U0010ffff", "<U+0378><U+FDD0><U+FDEF><U+FFFE><U+FFFF><U+1FFFE><U+10FFFF>"},
	// Invalid UTF-8, byte by byte: a lone byte, a cut sequence, an
	// encoded surrogate, an overlong slash.
	{"\xff", `\xff`},
	{"a\xc3", `a\xc3`},
	{"\xed\xa0\x80", `\xed\xa0\x80`},
	{"\xc0\xaf", `\xc0\xaf`},
}

func TestText(t *testing.T) {
	for _, tc := range textCases {
		if got := visible.Text(tc.in); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	multiline := []struct{ in, want string }{
		{"line 1\n\tline 2\n", "line 1\n\tline 2\n"},
		{"#!/bin/sh\n\x1b[1A\x1b[2Kecho hi\n", "#!/bin/sh\n\\x1b[1A\\x1b[2Kecho hi\n"},
	}
	for _, tc := range multiline {
		if got := visible.Text(tc.in); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestLine(t *testing.T) {
	for _, tc := range textCases {
		want := tc.want
		if tc.in == "crlf\r\n" {
			want = `crlf\r\n`
		}
		if got := visible.Line(tc.in); got != want {
			t.Errorf("Line(%q) = %q, want %q", tc.in, got, want)
		}
	}
	oneLine := []struct{ in, want string }{
		{"line 1\n\tline 2\n", `line 1\n\tline 2\n`},
		{"--message=fix\n\nSigned-off-by: someone else", `--message=fix\n\nSigned-off-by: someone else`},
		{"https://example.com/\rhttps://good.example", `https://example.com/\rhttps://good.example`},
	}
	for _, tc := range oneLine {
		if got := visible.Line(tc.in); got != tc.want {
			t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// Safe words stay as they are.
		{"notes.txt", "notes.txt"},
		{"./cmd/shelldon", "./cmd/shelldon"},
		{"--format=%H", "--format=%H"},
		{"user@host:dir,a+b", "user@host:dir,a+b"},
		{"-", "-"},
		{"A=b", "A=b"},
		// Empty and unsafe words are single-quoted.
		{"", "''"},
		{"my file", "'my file'"},
		{"it's", `'it'\''s'`},
		{"'", `''\'''`},
		{"$HOME", "'$HOME'"},
		{"`id`", "'`id`'"},
		{"$(id)", "'$(id)'"},
		{"*.go", "'*.go'"},
		{"~", "'~'"},
		{"#x", "'#x'"},
		{"a;b|c&d>e<f", "'a;b|c&d>e<f'"},
		{"!x", "'!x'"},
		{"{a,b}", "'{a,b}'"},
		{`\`, `'\'`},
		{`"`, `'"'`},
		{"café", "'café'"},
		{"e\u0301", "'e\u0301'"},
		{"\ufffd", "'\ufffd'"},
		// Control, invisible, bidi, blank and invalid: $'...'.
		{"a\nb", `$'a\nb'`},
		{"\t\r", `$'\t\r'`},
		{"\x1b[2K\rwrites 5 bytes to notes.txt", `$'\x1b[2K\rwrites 5 bytes to notes.txt'`},
		{"\x00\x07\x7f", `$'\x00\x07\x7f'`},
		{"\u0085\u009b", `$'\u0085\u009b'`},
		{"evil\u202etxt.py", `$'evil\u202etxt.py'`},
		{"\u200b\ufeff\u00ad", `$'\u200b\ufeff\u00ad'`},
		{"\u2028\u2029", `$'\u2028\u2029'`},
		{"\u3164\uffa0", `$'\u3164\uffa0'`},
		{"\U000e0041\U000e0100\ufe0f", `$'\U000e0041\U000e0100\ufe0f'`},
		{"\ue000\U0010fffd\ufffe", `$'\ue000\U0010fffd\ufffe'`},
		{"\xff", `$'\xff'`},
		{"a\xc3", `$'a\xc3'`},
		{"\u00a0x\u3000\u2800", `$'\u00a0x\u3000\u2800'`},
		// Quotes and backslashes inside $'...' are escaped.
		{"it's\n", `$'it\'s\n'`},
		{"\\\n", `$'\\\n'`},
		// An escape has all its digits, so hex digits after it stay apart.
		{"\x1bab", `$'\x1bab'`},
		{"\u202eface", `$'\u202eface'`},
		// Graphic runes stay as they are inside $'...'.
		{"日本 \"$x\"\n", `$'日本 "$x"\n'`},
	} {
		if got := visible.Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestArgv(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"ls", "-la"}, "ls -la"},
		{[]string{"rm", "a b"}, "rm 'a b'"},
		{[]string{"rm", "a", "b"}, "rm a b"},
		{[]string{"", ""}, "'' ''"},
		{[]string{"git", "commit", "-m", "fix\nrm -rf /"}, `git commit -m $'fix\nrm -rf /'`},
		{[]string{"git", "add", "evil\u202etxt.py"}, `git add $'evil\u202etxt.py'`},
		// First words the shell would not read as a command's name.
		{[]string{"if", "then"}, "'if' then"},
		{[]string{"time", "ls"}, "'time' ls"},
		{[]string{"export", "A=b"}, "'export' A=b"},
		{[]string{"A=b", "x"}, "'A=b' x"},
		{[]string{"_x1+=b"}, "'_x1+=b'"},
		// Not an assignment, so not quoted.
		{[]string{"1A=b"}, "1A=b"},
		{[]string{"--a=b"}, "--a=b"},
		{[]string{"env", "A=b", "x"}, "env A=b x"},
	} {
		if got := visible.Argv(tc.in); got != tc.want {
			t.Errorf("Argv(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
