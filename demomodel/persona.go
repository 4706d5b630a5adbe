package demomodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"image"
	_ "image/jpeg" // the photos Telegram sends
	_ "image/png"
	"net"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"shelldon/contracts"
	"shelldon/demomodel/phrases"
)

// PersonaFaces are the faces the persona picks from for a message it
// only echoes.
var PersonaFaces = []string{"happy", "curious", "excited", "cool", "smart", "bored"}

// Caps on what the persona echoes and passes on, so a long message makes a
// short reply, a caption that fits the panel's strip, and tool calls far
// under the tools' own limits.
const (
	maxEcho    = 200
	maxThought = 40
	// maxArgument bounds what a phrase passes to a tool: a command, a
	// file's content, a text to reverse. A longer one is refused, not cut,
	// since a cut command would be another command.
	maxArgument = 1000
	// maxShown bounds how much of a tool's answer the persona shows.
	maxShownLines = 30
	maxShownBytes = 2000
)

const personaIntro = "Hi, I'm shelldon, running on the scripted demo model: no real AI is " +
	"connected, so I only understand a few phrases (/help lists them), but each one runs for real: " +
	"the commands, the approvals, the sandbox, my own tools. Configure a provider to give me a brain.\n\n"

// The tools and the page the phrases use.
const (
	// DemoPagePath is the page the demo model serves beside its API, for
	// "fetch the demo page" (see [Server.ServeHTTP]).
	DemoPagePath = "/demo/page"
	// ReverseToolName is the tool the persona writes for itself when asked
	// to "make a tool that reverses text".
	ReverseToolName = "reverse_text"
	// deniedByOwner is the tool answer of a call the owner denied.
	deniedByOwner = "denied by owner"
	// keptAside starts the part of an approved command's answer that says
	// its changes wait for the owner's second look.
	keptAside = "\nits changes are NOT applied yet"
)

// The self-coded tool the persona proposes: a Python module with its
// DESCRIPTION, PARAMS_SCHEMA and run, and the pytest test its gate runs.
const (
	reverseToolCode = `DESCRIPTION = "Reverses a text, character by character."
PARAMS_SCHEMA = {"type": "object", "properties": {"text": {"type": "string", "description": "The text to reverse."}}, "required": ["text"]}


def run(text=""):
    return text[::-1]
`
	reverseToolTest = `from reverse_text import run


def test_reverses():
    assert run(text="hello") == "olleh"


def test_empty_stays_empty():
    assert run(text="") == ""
`
)

// haiku is what "write a haiku to FILE" writes.
const haiku = "little shell, awake\ncounting bytes beneath the moon\nthe fan hums, then sleeps\n"

// Persona is the default [Responder]: a small scripted pet that shows
// what shelldon does without a real model. It understands a few phrases
// (the owner's list is package phrases), each answered with the tool
// call or the op a model would make — a command, a write, an edit, a
// fetch, a git command, a tool of its own and then a call of it, a
// schedule, a note — so that the real path runs: core's policy, the
// owner's approval, the sandbox, the tool gate. When a request ends with
// the tool's answer it says what the answer means. Anything else it
// echoes and reacts to.
//
// In a conversation with no assistant message before the owner's last one
// it first says that it is the scripted demo model. Every answer in text
// ends with a THOUGHT: caption and a FACE: pick; all of it is chosen from
// the request alone, so the same request always gets the same answer.
func Persona(req Request) Step {
	if call, answer, ok := answeredCall(req.Messages); ok {
		return finalAnswer(req, afterTool(call, answer))
	}
	if img, ok := lastUserImage(req.Messages); ok {
		return finalAnswer(req, look(img, lastUserText(req.Messages)))
	}
	r := react(lastUserText(req.Messages), req)
	if r.call != nil {
		call := *r.call
		// The conversation only grows, so its length names the call
		// uniquely within it, and the same request gets the same id.
		call.ID = fmt.Sprintf("call_%d", len(req.Messages))
		return Step{ToolCalls: []contracts.ToolCall{call}}
	}
	return finalAnswer(req, r)
}

// reaction is what the persona makes of one message or tool answer: a
// tool call to make, or a reply with its caption and face and the ops it
// proposes.
type reaction struct {
	call                 *contracts.ToolCall
	reply, thought, face string
	ops                  []contracts.Op
}

func finalAnswer(req Request, r reaction) Step {
	var b strings.Builder
	if !answeredBefore(req.Messages) {
		b.WriteString(personaIntro)
	}
	b.WriteString(r.reply)
	if len(r.ops) > 0 {
		// The persona's own ops, each with a body, always encode.
		ops, _ := json.Marshal(r.ops)
		fmt.Fprintf(&b, "\n\n```ops\n%s\n```", ops)
	}
	fmt.Fprintf(&b, "\n\nTHOUGHT: %s\nFACE: %s", r.thought, r.face)
	return Step{Text: b.String()}
}

var greetings = map[string]bool{"hi": true, "hello": true, "hey": true, "hiya": true, "howdy": true, "yo": true, "morning": true}

// react answers the owner's message: a phrase it understands (read from
// the message's first line) or an echo of the whole.
func react(text string, req Request) reaction {
	said := echoable(text)
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	line = strings.TrimSpace(line)
	word, rest, _ := strings.Cut(line, " ")
	word = strings.ToLower(strings.Trim(word, ",.!?;:"))
	rest = strings.TrimSpace(rest)
	lower := strings.ToLower(line)
	switch {
	case said == "":
		return reaction{reply: "You didn't say anything, so I'll just sit here and blink.", thought: "waiting for words", face: "bored"}
	case strings.Contains(lower+" ", " tool ") && slices.Contains([]string{"make", "write", "build", "create"}, word):
		return proposeTool(lower)
	case word == "run" && rest != "":
		return callTool("run_shell", "command", rest)
	case word == "git" && rest != "":
		return callTool("git", "args", rest)
	case word == "write" && rest != "":
		return writeFile(rest)
	case word == "replace" && rest != "":
		return editFile(rest)
	case word == "fetch":
		return fetchDemoPage(req.Host)
	case word == "count" && strings.HasPrefix(lower, "count the letters in ") && len(line) > len("count the letters in "):
		return callMCP(phrases.MCPReadOnlyTool, line[len("count the letters in "):], req.Tools)
	case word == "shout" && rest != "":
		return callMCP(phrases.MCPAskingTool, rest, req.Tools)
	case word == "reverse" && rest != "":
		return reverse(rest, req.Tools)
	case word == "remind":
		return remind(rest)
	case strings.HasPrefix(lower, "reminder:"):
		return reaction{reply: "⏰ " + said + " (you asked me to tell you now)", thought: "on time", face: "excited"}
	case word == "remember" && rest != "":
		// The whole message is the note, less its first word; the echo
		// cap keeps it far under contracts.MaxRememberBytes.
		_, note, _ := strings.Cut(said, " ")
		return reaction{reply: fmt.Sprintf("Noted! I'll remember: “%s”.", note), thought: "noting it down", face: "smart",
			ops: []contracts.Op{{Body: contracts.Remember{Text: note}}}}
	case greetings[word]:
		return reaction{reply: fmt.Sprintf("Hello to you too! You said: “%s”.", said), thought: "my owner said hello", face: "happy"}
	case strings.HasSuffix(said, "?"):
		return reaction{reply: fmt.Sprintf("Ooh, a question: “%s” I'm only the scripted demo, so I can't look anything up, but I love that you asked. /help lists what I can do.", said), thought: "pondering a question", face: "curious"}
	case strings.Contains(said, "!"):
		return reaction{reply: fmt.Sprintf("Whoa, you sound excited: “%s” Me too!", said), thought: "sharing the excitement", face: "excited"}
	}
	h := fnv.New32a()
	h.Write([]byte(said))
	face := PersonaFaces[h.Sum32()%uint32(len(PersonaFaces))]
	return reaction{reply: fmt.Sprintf("You said: “%s”. I'm listening. (/help lists the phrases the demo understands.)", said), thought: capRunes("heard: "+said, maxThought), face: face}
}

// callTool is a call of tool with one string argument, or a refusal of an
// argument over maxArgument.
func callTool(tool, param, value string) reaction {
	if len(value) > maxArgument {
		return tooLong(value)
	}
	return reaction{call: &contracts.ToolCall{Name: tool, Args: jsonArgs(param, value)}}
}

func tooLong(value string) reaction {
	return reaction{reply: fmt.Sprintf("That is %d bytes; the demo passes on at most %d. Try something shorter.", len(value), maxArgument),
		thought: "too long for me", face: "bored"}
}

// jsonArgs encodes pairs of names and values as a JSON object.
func jsonArgs(pairs ...string) string {
	args := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		args[pairs[i]] = pairs[i+1]
	}
	// A map of strings always encodes; its keys come out sorted.
	data, _ := json.Marshal(args)
	return string(data)
}

// writeFile reads "TEXT to FILE"; "a haiku" (or "a poem") is the persona's
// own haiku.
func writeFile(rest string) reaction {
	i := strings.LastIndex(rest, " to ")
	if i < 0 || strings.TrimSpace(rest[i+len(" to "):]) == "" {
		return hint("Say what and where: write a haiku to poem.txt, or write buy milk to todo.txt.")
	}
	content, path := strings.TrimSpace(rest[:i]), strings.TrimSpace(rest[i+len(" to "):])
	switch strings.ToLower(content) {
	case "a haiku", "a poem":
		content = haiku
	default:
		content += "\n"
	}
	if len(content)+len(path) > maxArgument {
		return tooLong(rest)
	}
	return reaction{call: &contracts.ToolCall{Name: "write_file", Args: jsonArgs("path", path, "content", content)}}
}

// editFile reads "OLD with NEW in FILE".
func editFile(rest string) reaction {
	old, after, ok := strings.Cut(rest, " with ")
	i := strings.LastIndex(after, " in ")
	if !ok || i < 0 || strings.TrimSpace(after[i+len(" in "):]) == "" {
		return hint("Say what, with what, and where: replace moon with sun in poem.txt.")
	}
	if len(rest) > maxArgument {
		return tooLong(rest)
	}
	return reaction{call: &contracts.ToolCall{Name: "edit_file",
		Args: jsonArgs("path", strings.TrimSpace(after[i+len(" in "):]), "old", old, "new", after[:i])}}
}

// fetchDemoPage asks for the page the demo model serves, by the name
// localhost and the port the request came to: a name, so that the owner
// is asked and the network policy then judges the address actually
// dialled, which is loopback.
func fetchDemoPage(host string) reaction {
	_, port, err := net.SplitHostPort(host)
	if err != nil {
		return hint("I can't tell which port I'm serving on, so I have no page to fetch.")
	}
	return reaction{call: &contracts.ToolCall{Name: "http_get", Args: jsonArgs("url", "http://localhost:"+port+DemoPagePath)}}
}

// proposeTool writes the one tool the demo knows how to write.
func proposeTool(lower string) reaction {
	if !strings.Contains(lower, "revers") {
		return hint("In the demo I can write one tool of my own: say make a tool that reverses text.")
	}
	return reaction{
		reply: "I wrote myself a tool, " + ReverseToolName + ": Python, with a pytest test. It goes through my gate in the sandbox " +
			"(its imports read, its test run); if it passes, you decide whether I keep it. Once kept, say reverse hello world.",
		thought: "coding a tool", face: "smart",
		ops: []contracts.Op{{Body: contracts.ProposeTool{Name: ReverseToolName, Code: reverseToolCode, Test: reverseToolTest}}},
	}
}

// mcpToolName is the name the model is offered tool of the demo's MCP
// server by (config.MCP.ToolName).
func mcpToolName(tool string) string { return "mcp_" + phrases.MCPServer + "_" + tool }

// callMCP calls tool of the demo's MCP server with text, once it is
// offered. It is not when no example server is configured, when the
// sandbox its container needs is missing, or for the moment the server
// takes to start and list its tools: the persona cannot tell which, so
// it names them all, and /tools, where core says which.
func callMCP(tool, text string, offered []string) reaction {
	if !slices.Contains(offered, mcpToolName(tool)) {
		return reaction{reply: fmt.Sprintf("I have no tool of the demo MCP server this turn: %s is not among the tools I was given. "+
			"An MCP server runs in a sandbox container of its own, and its tools are offered once it has started there and listed them. "+
			"`make run` gives me the example server in bin/demo-mcp (`make build` puts it there), and it can start only where the sandbox can: "+
			"as root, with the image `make image` builds. /tools says which MCP servers I have, and why one is not running.", mcpToolName(tool)),
			thought: "no MCP server here", face: "curious"}
	}
	return callTool(mcpToolName(tool), "text", text)
}

// untrustedText is what an outside source said, from between the fence
// core put it in (approved.FenceUntrusted), or the whole answer if it
// holds no fence.
func untrustedText(answer string) string {
	_, inside, ok := strings.Cut(answer, " BEGIN>>>\n")
	end := strings.LastIndex(inside, "\n<<<")
	if !ok || end < 0 {
		return answer
	}
	return inside[:end]
}

// reverse calls the persona's own tool, once it is offered.
func reverse(text string, offered []string) reaction {
	if !slices.Contains(offered, ReverseToolName) {
		return hint("I have no tool for that yet: say make a tool that reverses text, and keep it when I ask.")
	}
	return callTool(ReverseToolName, "text", text)
}

// remind reads "me in DURATION to TEXT" or "me at HH:MM to TEXT" and
// proposes a one-off schedule, whose turn's message is "reminder: TEXT".
func remind(rest string) reaction {
	said, what, found := strings.Cut(strings.TrimPrefix(rest, "me "), " to ")
	text := "reminder: " + echoable(what)
	when, ok := scheduleWhen(said)
	if !strings.HasPrefix(rest, "me ") || !found || !ok || strings.TrimSpace(what) == "" || len(text) > contracts.MaxScheduleText {
		return hint("Say when (within a day) and what: remind me in 10m to stretch, or remind me at 18:30 to water the plants.")
	}
	return reaction{
		reply:   fmt.Sprintf("I'll remind you %s: “%s”. /schedule lists it; /schedule cancel ID drops it.", echoable(said), echoable(what)),
		thought: "a reminder to keep", face: "smart",
		ops: []contracts.Op{{Body: contracts.Schedule{When: when, Text: text}}},
	}
}

// scheduleWhen reads "in DURATION" (within a day, as a demo's reminder
// is) or "at HH:MM" into the schedule op's when: "in 10m" as it is,
// "18:30" for the next such local time.
func scheduleWhen(said string) (string, bool) {
	if d, ok := strings.CutPrefix(said, "in "); ok {
		duration, err := time.ParseDuration(d)
		return said, err == nil && duration > 0 && duration <= 24*time.Hour
	}
	if clock, ok := strings.CutPrefix(said, "at "); ok {
		_, err := time.Parse("15:04", clock)
		return clock, err == nil
	}
	return "", false
}

func hint(text string) reaction {
	return reaction{reply: text, thought: "not quite a phrase I know", face: "curious"}
}

// answeredCall finds the tool call the request's last message answers.
func answeredCall(messages []contracts.Message) (contracts.ToolCall, string, bool) {
	if len(messages) == 0 || messages[len(messages)-1].Role != contracts.ChatTool {
		return contracts.ToolCall{}, "", false
	}
	answer := messages[len(messages)-1]
	for i := len(messages) - 2; i >= 0; i-- {
		for _, call := range messages[i].ToolCalls {
			if call.ID == answer.ToolCallID {
				return call, answer.Content, true
			}
		}
	}
	return contracts.ToolCall{}, "", false
}

// afterTool says what a tool's answer means for the owner.
func afterTool(call contracts.ToolCall, answer string) reaction {
	failure, failed := strings.CutPrefix(answer, "error: ")
	switch {
	case answer == deniedByOwner:
		return reaction{reply: "All right, I left it alone: nothing ran.", thought: "the owner said no", face: "cool"}
	case failed && call.Name == "http_get":
		var args struct{ URL string }
		_ = json.Unmarshal([]byte(call.Args), &args)
		return reaction{
			reply: fmt.Sprintf("My network policy refused it: %s.\n\nThat is on purpose: http_get never reaches this machine itself "+
				"(loopback), link-local or cloud-metadata addresses, judged on the address actually dialled, so even the name "+
				"localhost cannot get there. The page is real — open %s in a browser — and with a real model a public page is "+
				"fetched once you approve.", echoable(refusalReason(failure)), echoable(args.URL)),
			thought: "the policy said no", face: "smart",
		}
	case failed:
		return reaction{reply: fmt.Sprintf("%s did not work: %s", call.Name, echoable(failure)), thought: "that did not work", face: "sad"}
	}
	switch call.Name {
	case "write_file", "edit_file":
		var args struct{ Path string }
		_ = json.Unmarshal([]byte(call.Args), &args)
		return reaction{reply: fmt.Sprintf("Done: %s. See it with: run cat %s", echoable(answer), echoable(args.Path)),
			thought: "the workspace changed", face: "happy"}
	case ReverseToolName:
		out := strings.TrimPrefix(answer, "exit 0\n")
		return reaction{reply: "My own tool says: " + echoable(out), thought: "my tool works", face: "excited"}
	case mcpToolName(phrases.MCPReadOnlyTool), mcpToolName(phrases.MCPAskingTool):
		return reaction{reply: fmt.Sprintf("The MCP server %s says, from its container: “%s”. Its words reach me fenced as outside data, "+
			"not yours: until this turn ends, nothing I would keep of you is kept without your word.", phrases.MCPServer, echoable(untrustedText(answer))),
			thought: "an MCP server answered", face: "smart"}
	}
	if ran, _, held := strings.Cut(answer, keptAside); held {
		// Core's words to the model; the owner has the request itself.
		return reaction{reply: fmt.Sprintf("%s answered:\n%s\nWhat it changed is not applied yet: some of it needs your own look, so I asked you about it on its own.",
			call.Name, shown(ran)), thought: "waiting for a second look", face: "curious"}
	}
	return reaction{reply: fmt.Sprintf("%s answered:\n%s", call.Name, shown(answer)), thought: capRunes("ran "+call.Name, maxThought), face: "cool"}
}

// shown is a tool's answer as a block of the reply: fenced, so no line of
// it is read as a THOUGHT: or FACE: line; with no backticks, so nothing
// in it closes the fence or opens an ops block; and capped.
func shown(answer string) string {
	lines := strings.Split(strings.ToValidUTF8(strings.TrimRight(answer, "\n"), "\uFFFD"), "\n")
	cut := len(lines) > maxShownLines
	if cut {
		lines = lines[:maxShownLines]
	}
	text := strings.ReplaceAll(strings.Join(lines, "\n"), "`", "'")
	if len(text) > maxShownBytes {
		// Cut on a byte; the rune it splits is dropped whole.
		text, cut = strings.ToValidUTF8(text[:maxShownBytes], ""), true
	}
	if cut {
		text += "\n[… cut]"
	}
	return "```\n" + text + "\n```"
}

// look is the persona's answer to a photo: what little it can tell of
// the image without eyes (its size), and the words that came with it.
func look(img contracts.Image, text string) reaction {
	size := "a picture I cannot read"
	if cfg, format, err := image.DecodeConfig(bytes.NewReader(img.Data)); err == nil {
		size = fmt.Sprintf("a %d×%d %s", cfg.Width, cfg.Height, format)
	}
	return reaction{reply: fmt.Sprintf("I see your photo: %s of %d KiB, with your words “%s”. The demo model has no eyes, so that is all I can say of it.",
		size, (len(img.Data)+1023)>>10, echoable(text)), thought: "looking at a photo", face: "curious"}
}

// lastUserImage is the last image of the owner's last message, if any.
func lastUserImage(messages []contracts.Message) (contracts.Image, bool) {
	for i := len(messages) - 1; i >= 0; i-- {
		if m := messages[i]; m.Role == contracts.ChatUser {
			if len(m.Images) == 0 {
				return contracts.Image{}, false
			}
			return m.Images[len(m.Images)-1], true
		}
	}
	return contracts.Image{}, false
}

func lastUserText(messages []contracts.Message) string {
	for i := len(messages) - 1; i >= 0; i-- {
		if messages[i].Role == contracts.ChatUser {
			return messages[i].Content
		}
	}
	return ""
}

// answeredBefore reports whether the assistant spoke before the owner's
// last message: the persona has introduced itself already.
func answeredBefore(messages []contracts.Message) bool {
	for i := len(messages) - 1; i >= 0; i-- {
		if messages[i].Role == contracts.ChatUser {
			messages = messages[:i]
			break
		}
	}
	return slices.ContainsFunc(messages, func(m contracts.Message) bool { return m.Role == contracts.ChatAssistant })
}

// refusals are how the network policy's refusals begin (policy's
// ErrForbiddenAddress and ErrForbiddenURL); what follows is its reason,
// in the owner's words.
var refusals = []string{"forbidden address: ", "forbidden URL: "}

// refusalReason is the policy's reason in core's answer to a refused
// http_get, which also holds words for the model ("tell them why") and
// the URL and address dialled: the text after the last refusal, or the
// whole failure when there is none.
func refusalReason(failure string) string {
	reason, at := failure, -1
	for _, r := range refusals {
		if i := strings.LastIndex(failure, r); i > at {
			reason, at = failure[i+len(r):], i
		}
	}
	return reason
}

// echoable makes the owner's words safe to repeat inside the persona's own
// reply: one line (so an echoed "FACE:" or fence never starts a line the
// reply parser would read) with no backticks (so nothing can close or open
// an ops block), capped.
func echoable(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "`", "'")
	return capRunes(s, maxEcho)
}

func capRunes(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max-1]) + "…"
}
