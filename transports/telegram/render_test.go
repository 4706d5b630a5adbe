package telegram

import (
	"html"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"shelldon/contracts"
)

// shown is what Telegram shows of an HTML text: tags gone, entities read.
func shown(s string) string {
	return html.UnescapeString(regexp.MustCompile(`</?(b|i|pre)>`).ReplaceAllString(s, ""))
}

func TestRenderReply(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		limit int
		want  []string
	}{
		{"empty", "", 10, nil},
		{"blank only", " \n \n", 10, nil},
		{"fits", "hello", 10, []string{"hello"}},
		{"escaped", "<script>&", 20, []string{"&lt;script&gt;&amp;"}},
		{"at line breaks", "aaaa\nbbbb\ncccc", 9, []string{"aaaa\nbbbb", "cccc"}},
		{"blank lines kept", "a\n\nb", 10, []string{"a\n\nb"}},
		{"overlong line cut hard", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"overlong line between short ones", "x\nabcdefg\ny", 3, []string{"x", "abc", "def", "g\ny"}},
		{"runes not split", "ééééé", 2, []string{"éé", "éé", "é"}},
		{"astral runes count two", "😀😀😀", 4, []string{"😀😀", "😀"}},
		{"code block in pre", "see:\n```go\nx := 1 < 2\n```\ndone", 100, []string{"see:\n<pre>x := 1 &lt; 2</pre>done"}},
		{"code split keeps pre closed", "```\naaaa\nbbbb\n```", 4, []string{"<pre>aaaa</pre>", "<pre>bbbb</pre>"}},
		{"unclosed fence runs to the end", "a\n```\nb", 10, []string{"a\n<pre>b</pre>"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := renderReply(tc.text, tc.limit)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Errorf("renderReply(%q, %d) = %q, want %q", tc.text, tc.limit, got, tc.want)
			}
			for _, p := range got {
				if width(shown(p)) > tc.limit || !utf8.ValidString(p) {
					t.Errorf("renderReply(%q, %d) gave piece %q: too wide or invalid", tc.text, tc.limit, p)
				}
			}
		})
	}
}

func TestRenderReplyBadLimitDoesNotHang(t *testing.T) {
	for _, limit := range []int{-5, 0, 1} {
		got := renderReply("abc", limit)
		if shown(strings.Join(got, "")) != "abc" {
			t.Errorf("renderReply(%q, %d) = %q, want the text kept", "abc", limit, got)
		}
	}
}

func TestParseCallback(t *testing.T) {
	tests := []struct {
		data                string
		turn                string
		approve, always, ok bool
	}{
		{"a:t1", "t1", true, false, true},
		{"d:t1", "t1", false, false, true},
		{"r:t1", "t1", true, true, true},
		{"a:promote-calc", "promote-calc", true, false, true},
		{"x:t1", "", false, false, false},
		{"A:t1", "", false, false, false},
		{"R:t1", "", false, false, false},
		{"a:", "", false, false, false},
		{"r:", "", false, false, false},
		{"garbage", "", false, false, false},
		{"", "", false, false, false},
	}
	for _, tc := range tests {
		turn, approve, always, ok := parseCallback(tc.data)
		if turn != tc.turn || approve != tc.approve || always != tc.always || ok != tc.ok {
			t.Errorf("parseCallback(%q) = %q, %v, %v, %v, want %q, %v, %v, %v", tc.data, turn, approve, always, ok, tc.turn, tc.approve, tc.always, tc.ok)
		}
	}
}

func TestApprovalKeyboardFitsTelegram(t *testing.T) {
	longest := "promote-" + strings.Repeat("x", 48) // the longest tool name selfcode allows
	kb, err := approvalKeyboard(longest, true)
	if err != nil {
		t.Fatalf("approvalKeyboard(%q): %v", longest, err)
	}
	if len(kb.InlineKeyboard) != 2 {
		t.Fatalf("approvalKeyboard(%q, always) has %d rows, want Approve/Deny and Always", longest, len(kb.InlineKeyboard))
	}
	for _, b := range append(kb.InlineKeyboard[0], kb.InlineKeyboard[1]...) {
		if len(b.CallbackData) > maxCallbackData {
			t.Errorf("button %q carries %d bytes, over Telegram's %d", b.Text, len(b.CallbackData), maxCallbackData)
		}
		if turn, _, _, ok := parseCallback(b.CallbackData); !ok || turn != longest {
			t.Errorf("parseCallback(%q) = %q, %v; want the key back", b.CallbackData, turn, ok)
		}
	}
	if plain, _ := approvalKeyboard(longest, false); len(plain.InlineKeyboard) != 1 {
		t.Errorf("approvalKeyboard(%q) without a rule has %d rows, want 1", longest, len(plain.InlineKeyboard))
	}
	if _, err := approvalKeyboard(strings.Repeat("y", 63), false); err == nil {
		t.Error("approvalKeyboard of a 63-byte key: no error, want one (the data would pass 64 bytes)")
	}
}

func TestRenderApproval(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		detail   string
		wantFile bool
	}{
		{"short detail whole", "rm -rf <x> && echo 'hi'", false},
		{"long detail cut, sent as a file", strings.Repeat("rm -rf <x>\n", 1000), true},
		{"astral detail", strings.Repeat("😀", 3000), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := contracts.ApprovalRequest{Turn: "t1", Tool: "run_shell", Note: "writes <files>", Detail: tc.detail, Expires: now.Add(time.Hour)}
			got := renderApproval(req, time.UTC, now)
			if !strings.Contains(got.HTML, "<i>writes &lt;files&gt;</i>") || !strings.Contains(got.HTML, "<pre>") {
				t.Errorf("renderApproval HTML = %.200q, want the note escaped and the detail in <pre>", got.HTML)
			}
			if !strings.Contains(got.HTML, "Expires at 13:00 (in 1h0m0s)") {
				t.Errorf("renderApproval HTML does not say when it expires: %.300q", got.HTML)
			}
			if (got.File != nil) != tc.wantFile {
				t.Fatalf("renderApproval sent a file: %v, want %v", got.File != nil, tc.wantFile)
			}
			if tc.wantFile {
				if string(got.File) != tc.detail || got.FileName != "request-t1.txt" {
					t.Errorf("file %q holds %d bytes, want the whole detail as request-t1.txt", got.FileName, len(got.File))
				}
				if !strings.Contains(got.HTML, "the whole text is in the file above") {
					t.Error("a cut detail does not point to the file")
				}
			} else if !strings.Contains(shown(got.HTML), tc.detail) {
				t.Errorf("renderApproval HTML = %q, want the whole detail", got.HTML)
			}
			final := shown(settled(got.HTML, contracts.ApprovalApproved, now, time.UTC))
			if w := width(final); w > maxMessage {
				t.Errorf("settled approval is %d units wide, over %d", w, maxMessage)
			}
			if !strings.HasSuffix(final, "✅ Approved at 12:00") {
				t.Errorf("settled approval ends %q, want the outcome", final[len(final)-40:])
			}
		})
	}
}

func TestRenderApprovalCapsTheFile(t *testing.T) {
	req := contracts.ApprovalRequest{Turn: "t1", Tool: "write_file", Detail: strings.Repeat("é", maxFile)}
	got := renderApproval(req, time.UTC, time.Now())
	if len(got.File) > maxFile+100 || !utf8.Valid(got.File) || !strings.Contains(string(got.File), "(cut: the first") {
		t.Errorf("file of %d bytes (valid UTF-8: %v), want at most about %d and a note of the cut", len(got.File), utf8.Valid(got.File), maxFile)
	}
}

func TestOutcomeLine(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 3, 0, 0, time.UTC)
	for outcome, want := range map[string]string{
		contracts.ApprovalApproved: "✅ Approved at 12:03",
		contracts.ApprovalDenied:   "❌ Denied at 12:03",
		contracts.ApprovalExpired:  "⌛ Expired at 12:03: nothing was done",
		contracts.ApprovalGone:     "No longer waiting for an answer",
		"nonsense":                 "No longer waiting for an answer",
	} {
		if got := outcomeLine(outcome, at, time.UTC); got != want {
			t.Errorf("outcomeLine(%q) = %q, want %q", outcome, got, want)
		}
	}
}

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Min: time.Second, Max: 8 * time.Second}
	for attempt, base := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 10: 8 * time.Second} {
		for range 50 {
			if d := b.delay(attempt); d < base/2 || d > base {
				t.Fatalf("delay(%d) = %v, want within [%v, %v]", attempt, d, base/2, base)
			}
		}
	}
}
