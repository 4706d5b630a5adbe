package telegram

import (
	"strings"
	"testing"
	"unicode/utf8"

	"shelldon/contracts"
)

func TestSplitText(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		limit int
		want  []string
	}{
		{"empty", "", 10, nil},
		{"fits", "hello", 10, []string{"hello"}},
		{"at line breaks", "aaaa\nbbbb\ncccc", 9, []string{"aaaa\nbbbb", "cccc"}},
		{"blank lines kept", "a\n\nb", 10, []string{"a\n\nb"}},
		{"overlong line cut hard", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"overlong line between short ones", "x\nabcdefg\ny", 3, []string{"x", "abc", "def", "g\ny"}},
		{"runes not split", "ééééé", 2, []string{"éé", "éé", "é"}},
		{"astral runes count two", "😀😀😀", 4, []string{"😀😀", "😀"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := splitText(tc.text, tc.limit)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Errorf("splitText(%q, %d) = %q, want %q", tc.text, tc.limit, got, tc.want)
			}
			for _, p := range got {
				if width(p) > tc.limit || !utf8.ValidString(p) {
					t.Errorf("splitText(%q, %d) gave piece %q: too wide or invalid", tc.text, tc.limit, p)
				}
			}
		})
	}
}

func TestSplitTextBadLimitDoesNotHang(t *testing.T) {
	for _, limit := range []int{-5, 0, 1} {
		got := splitText("abc", limit)
		if strings.Join(got, "") != "abc" {
			t.Errorf("splitText(%q, %d) = %q, want the text kept", "abc", limit, got)
		}
	}
}

func TestParseCallback(t *testing.T) {
	tests := []struct {
		data        string
		turn        string
		approve, ok bool
	}{
		{"a:t1", "t1", true, true},
		{"d:t1", "t1", false, true},
		{"x:t1", "t1", false, true},
		{"A:t1", "t1", false, true},
		{"a:", "", false, false},
		{"garbage", "", false, false},
		{"", "", false, false},
	}
	for _, tc := range tests {
		turn, approve, ok := parseCallback(tc.data)
		if turn != tc.turn || approve != tc.approve || ok != tc.ok {
			t.Errorf("parseCallback(%q) = %q, %v, %v, want %q, %v, %v", tc.data, turn, approve, ok, tc.turn, tc.approve, tc.ok)
		}
	}
}

func TestApprovalTextFitsAndEscapes(t *testing.T) {
	req := contracts.ApprovalRequest{Turn: "t", Tool: "shell", Note: "writes <files>", Detail: strings.Repeat("rm -rf <x>\n", 1000)}
	got := approvalText(req)
	if !strings.Contains(got, "&lt;files&gt;") || !strings.Contains(got, "<pre>rm -rf &lt;x&gt;") {
		t.Errorf("approvalText = %.200q, want the note and detail escaped, detail in <pre>", got)
	}
	if !strings.Contains(got, "detail cut") {
		t.Errorf("approvalText of a long detail does not say it was cut")
	}
	parsed := strings.NewReplacer("<b>", "", "</b>", "", "<i>", "", "</i>", "", "<pre>", "", "</pre>", "", "&lt;", "<", "&gt;", ">", "&amp;", "&", "&#34;", `"`, "&#39;", "'").Replace(got)
	if w := width(parsed); w > maxMessage {
		t.Errorf("approvalText parsed width = %d, want <= %d", w, maxMessage)
	}
}
