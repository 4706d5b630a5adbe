package telegramtest

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseHTMLEntities(t *testing.T) {
	tests := []struct {
		html     string
		wantText string
		want     []entity
	}{
		{"<b>bold</b> <i>it</i>", "bold it", []entity{{Type: "bold", Length: 4}, {Type: "italic", Offset: 5, Length: 2}}},
		{"<strong>a</strong><em>b</em><ins>c</ins><u>d</u>", "abcd", []entity{{Type: "bold", Length: 1}, {Type: "italic", Offset: 1, Length: 1}, {Type: "underline", Offset: 2, Length: 1}, {Type: "underline", Offset: 3, Length: 1}}},
		{"<s>a</s><strike>b</strike><del>c</del>", "abc", []entity{{Type: "strikethrough", Length: 1}, {Type: "strikethrough", Offset: 1, Length: 1}, {Type: "strikethrough", Offset: 2, Length: 1}}},
		{"😀<b>x</b>", "😀x", []entity{{Type: "bold", Offset: 2, Length: 1}}},
		{"<b>out <i>in</i></b>", "out in", []entity{{Type: "bold", Length: 6}, {Type: "italic", Offset: 4, Length: 2}}},
		{`<a href='https://e.x/?q=1&amp;r=2'>l</a>`, "l", []entity{{Type: "text_link", Length: 1, URL: "https://e.x/?q=1&r=2"}}},
		{`<a>no link</a>`, "no link", nil},
		{`<pre>raw</pre>`, "raw", []entity{{Type: "pre", Length: 3}}},
		{`<pre><code class="language-python">x</code></pre>`, "x", []entity{{Type: "pre", Length: 1, Language: "python"}}},
		{`<code class="language-go">x</code>`, "x", []entity{{Type: "code", Length: 1}}},
		{`<pre><code>x</code></pre>`, "x", []entity{{Type: "pre", Length: 1}, {Type: "code", Length: 1}}},
		{`<blockquote>q</blockquote><blockquote expandable>e</blockquote>`, "qe", []entity{{Type: "blockquote", Length: 1}, {Type: "expandable_blockquote", Offset: 1, Length: 1}}},
		{`<tg-emoji emoji-id="42">🙂</tg-emoji>`, "🙂", []entity{{Type: "custom_emoji", Length: 2, CustomEmojiID: "42"}}},
		{`<span class="tg-spoiler" data-x="ignored">s</span>`, "s", []entity{{Type: "spoiler", Length: 1}}},
		{"  <b> x </b>  ", "x", []entity{{Type: "bold", Length: 1}}},
		{"<b>\n</b>x", "x", nil},
		{"< /b>", "", nil},
	}
	for _, tt := range tests {
		text, entities, err := parseHTML(tt.html)
		if tt.wantText == "" {
			if err == nil {
				t.Errorf("parseHTML(%q) = %q, want an error", tt.html, text)
			}
			continue
		}
		text, entities = trimBlank(text, entities)
		if err != nil || text != tt.wantText || !slices.Equal(entities, tt.want) {
			t.Errorf("parseHTML(%q) = %q, %+v, %v; want %q, %+v", tt.html, text, entities, err, tt.wantText, tt.want)
		}
	}
}

func TestParseHTMLErrors(t *testing.T) {
	tests := []struct{ html, want string }{
		{"<script>", `can't parse entities: Unsupported start tag "script" at byte offset 0`},
		{"ok <b>x</b> <br>", `can't parse entities: Unsupported start tag "br" at byte offset 12`},
		{"é<x>", `Unsupported start tag "x" at byte offset 2`},
		{"<b>x</i>", `Unmatched end tag at byte offset 4, expected "</b>", found "</i>"`},
		{"<b><i>x</i>", `Can't find end tag corresponding to start tag "b"`},
		{"</b", "Unclosed end tag at byte offset 0"},
		{"<a href=>x</a>", `Expected value of the attribute "href" of the tag "a" at byte offset 8`},
		{`<a href="&bogus;">x</a>`, "Character entity expected at byte offset 9"},
		{"<b =x>", `Empty attribute name in the tag "b" at byte offset 3`},
		{"&#xD800;", "Character entity expected at byte offset 0"},
		{"&#x110000;", "Character entity expected at byte offset 0"},
		{"&#-1;", "Character entity expected at byte offset 0"},
		{"&#;", "Character entity expected at byte offset 0"},
		{"&amp", "Character entity expected at byte offset 0"},
		{"&", "Character entity expected at byte offset 0"},
	}
	for _, tt := range tests {
		if text, _, err := parseHTML(tt.html); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseHTML(%q) = %q, %v; want error %q", tt.html, text, err, tt.want)
		}
	}
}

func FuzzParseHTML(f *testing.F) {
	for _, seed := range []string{
		"<b>x</b>", "<a href=\"x\">y</a>", "&lt;&#128512;", "<pre><code class=\"language-go\">x</code></pre>",
		"<b><i>x</b>", "<", "&", "<tg-emoji emoji-id=1>x</tg-emoji>", " \u200b<b> </b>", "<blockquote expandable>q",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, html string) {
		text, entities, err := parseHTML(html)
		if err != nil {
			return
		}
		text, entities = trimBlank(text, entities)
		if utf8.ValidString(html) && !utf8.ValidString(text) {
			t.Fatalf("parseHTML(%q) = %q, not UTF-8", html, text)
		}
		units := utf16Units(text)
		for _, e := range entities {
			if e.Offset < 0 || e.Length <= 0 || e.Offset+e.Length > units {
				t.Fatalf("parseHTML(%q) = %q with entity %+v outside its %d units", html, text, e, units)
			}
		}
	})
}
