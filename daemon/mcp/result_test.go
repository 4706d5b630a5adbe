package mcp

import (
	"strings"
	"testing"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAFloodOfResultIsCut: a server that answers megabytes gives the
// model MaxResult bytes of valid UTF-8 and a word on what was cut.
func TestAFloodOfResultIsCut(t *testing.T) {
	flood := strings.Repeat("é", MaxResult) // two bytes each
	res := resultText(&sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: flood}, &sdk.TextContent{Text: "more"}},
		StructuredContent: map[string]string{"also": flood}})
	if len(res.Text) > MaxResult+64 || !utf8.ValidString(res.Text) || !strings.Contains(res.Text, "more bytes cut]") {
		t.Errorf("a flood became %d bytes (valid UTF-8: %v), ending %q", len(res.Text), utf8.ValidString(res.Text), res.Text[max(0, len(res.Text)-40):])
	}
	small := resultText(&sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}, StructuredContent: map[string]int{"n": 1}, IsError: true})
	if small.Text != "ok\n{\"n\":1}" || !small.IsError {
		t.Errorf("a small result became %+v", small)
	}
}
