package main

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTheDemoServersTools: over the SDK's own client, the server lists
// its two tools, each annotated read-only, answers each, and refuses a
// text past its bound as a tool error.
func TestTheDemoServersTools(t *testing.T) {
	ctx := context.Background()
	serverEnd, clientEnd := sdk.NewInMemoryTransports()
	if _, err := newServer().Connect(ctx, serverEnd, nil); err != nil {
		t.Fatal(err)
	}
	session, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, clientEnd, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	listed, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range listed.Tools {
		names = append(names, tool.Name)
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("%s is not annotated read-only", tool.Name)
		}
	}
	if got := strings.Join(names, " "); got != CountLetters+" "+Shout {
		t.Errorf("the server lists %s", got)
	}
	call := func(tool, text string) (string, bool) {
		t.Helper()
		res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"text": text}})
		if err != nil {
			t.Fatalf("call %s: %v", tool, err)
		}
		return res.Content[0].(*sdk.TextContent).Text, res.IsError
	}
	for _, c := range []struct{ tool, text, want string }{
		{CountLetters, "hello world", "10 letters, 2 words"},
		{CountLetters, "", "0 letters, 0 words"},
		{Shout, "hello world.", "HELLO WORLD!"},
	} {
		if got, failed := call(c.tool, c.text); got != c.want || failed {
			t.Errorf("%s(%q) = %q (error %v), want %q", c.tool, c.text, got, failed, c.want)
		}
	}
	if got, failed := call(Shout, strings.Repeat("a", maxText+1)); !failed || !strings.Contains(got, "over 4096") {
		t.Errorf("a text past the bound answered %q (error %v), want a tool error naming the bound", got, failed)
	}
}
