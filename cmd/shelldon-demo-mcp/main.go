// Command shelldon-demo-mcp is the example MCP server `make run` gives the
// scripted demo model: a stdio server, built on the official Go SDK, with
// two tools that change nothing. count_letters the demo configures as
// read-only, so it runs without asking; shout it does not, so every call
// asks the owner first, though the server, truthfully, annotates both as
// read-only: an annotation is the server's claim, and only the owner's
// configuration decides. Like every MCP server of a pet, it runs in a
// sandbox container of its own.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"unicode"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools' names, as the server lists them.
const (
	CountLetters = "count_letters"
	Shout        = "shout"
)

// maxText bounds the text a tool takes: past it the call is refused, so
// an answer stays far under what the pet keeps of one (16 KiB).
const maxText = 4 << 10

func main() {
	if err := newServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "shelldon-demo-mcp:", err)
		os.Exit(1)
	}
}

// text is both tools' input.
type text struct {
	Text string `json:"text" jsonschema:"the text"`
}

// newServer is the server with its two tools, both annotated read-only
// (they are: each only reads its argument).
func newServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "shelldon-demo-mcp", Version: "1"}, nil)
	add := func(name, description string, do func(string) string) {
		sdk.AddTool(s, &sdk.Tool{Name: name, Description: description, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
			func(_ context.Context, _ *sdk.CallToolRequest, in text) (*sdk.CallToolResult, any, error) {
				if len(in.Text) > maxText {
					return nil, nil, fmt.Errorf("the text is %d bytes, over %d", len(in.Text), maxText)
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: do(in.Text)}}}, nil, nil
			})
	}
	add(CountLetters, "Counts the letters and words of a text.", countLetters)
	add(Shout, "Says a text louder: in capitals, with an exclamation mark.", func(t string) string {
		return strings.ToUpper(strings.TrimRight(t, ".!?")) + "!"
	})
	return s
}

func countLetters(t string) string {
	letters := 0
	for _, r := range t {
		if unicode.IsLetter(r) {
			letters++
		}
	}
	return fmt.Sprintf("%d letters, %d words", letters, len(strings.Fields(t)))
}
