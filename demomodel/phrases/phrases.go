// Package phrases lists what the scripted demo model's persona
// (demomodel.Persona) understands, for the banner and /help of a pet that
// runs on it. It stands apart from package demomodel so that the shelldon
// binary, which shows the list, carries none of the scripted answers.
package phrases

import "strings"

// Phrase is one thing to try: what to type, and what it shows.
type Phrase struct {
	Say, Shows string
}

// Try are the phrases, in the order a first run might try them; each
// makes the real tool call or op, so the real path runs.
var Try = []Phrase{
	{"run ls", "a read-only command: runs at once, in the sandbox"},
	{"run touch hello.txt", "a command that changes files: asks first"},
	{"write a haiku to poem.txt", "write_file: asks you first"},
	{"replace moon with sun in poem.txt", "edit_file: asks you first"},
	{"git init", "git: asks first, then asks about the new .git alone"},
	{"fetch the demo page", "http_get: asks, then the policy refuses it"},
	{"count the letters in hello world", "an MCP tool marked read-only"},
	{"shout hello world", "the same MCP server's other tool: asks"},
	{"make a tool that reverses text", "its own tool, through the gate"},
	{"reverse hello world", "calls that tool, once kept"},
	{"remind me in 1m to stretch", "a schedule: a turn of its own"},
	{"remember I like hazelnut coffee", "a note in memory/notes.md"},
}

// The example MCP server `make run` gives the demo model, and its two
// tools as the server names them: the first configured read-only, the
// other left to ask. The persona calls them as mcp_<server>_<tool>.
const (
	MCPServer       = "demo"
	MCPReadOnlyTool = "count_letters"
	MCPAskingTool   = "shout"
)

// List is Try as lines, each starting with prefix:
// "try: run ls — a read-only command: …".
func List(prefix string) string {
	var b strings.Builder
	for i, p := range Try {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(prefix + "try: " + p.Say + " — " + p.Shows)
	}
	return b.String()
}
