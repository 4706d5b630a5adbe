package contracts

import (
	"strings"
	"unicode"
)

// Command is one of the owner's commands: text starting with a slash that
// core answers itself instead of handing it to the model.
type Command struct {
	Name        string // without the slash
	Description string
	// Arg names the command's argument, if it takes one.
	Arg string
}

// Commands are the owner's commands, in the order help lists them.
// Transports that can advertise commands (Telegram's setMyCommands) take
// them from here.
var Commands = []Command{
	{Name: "start", Description: "say hello and see what I understand"},
	{Name: "help", Description: "what I understand and how approvals work"},
	{Name: "status", Description: "uptime, current turn, memory, last turns"},
	{Name: "tools", Description: "my tools: live, waiting for you, put away"},
	{Name: "pending", Description: "requests waiting for your answer, shown again to answer"},
	{Name: "schedule", Description: "what I will do by myself; /schedule cancel ID drops one", Arg: "[cancel ID]"},
	{Name: "restore", Description: "put a tool I put away back: /restore NAME", Arg: "NAME"},
	{Name: "rules", Description: "what you let me do without asking; /rules revoke N drops one", Arg: "[revoke N]"},
}

// InboundCommand reads an owner's message as a command. Only what they
// typed is one: a voice note's transcript is words said to the pet (or
// near it: a radio, a visitor), and a photo's caption is about the
// photo, whatever either starts with; both go to the model as words.
func InboundCommand(in Inbound) (name, arg string, ok bool) {
	if in.Spoken || in.Image != nil {
		return "", "", false
	}
	return ParseCommand(in.Text)
}

// ParseCommand reads text as an owner's command: "/status", or
// "/restore calc" with its argument. A suffix naming the bot
// ("/status@shelldon_bot", as Telegram sends it in groups) is dropped. An
// argument may follow an underscore instead of a space ("/pending_6" is
// "/pending 6"): Telegram makes such a word one tap in a message, where
// it would take the command's name alone. ok is false for text that does
// not start with a slash and a name.
func ParseCommand(text string) (name, arg string, ok bool) {
	text = strings.TrimSpace(text)
	rest, found := strings.CutPrefix(text, "/")
	if !found {
		return "", "", false
	}
	word := rest
	if i := strings.IndexFunc(rest, unicode.IsSpace); i >= 0 {
		word, arg = rest[:i], strings.TrimSpace(rest[i:])
	}
	word, _, _ = strings.Cut(word, "@")
	if name, tapped, found := strings.Cut(word, "_"); found && arg == "" {
		word, arg = name, tapped
	}
	if word == "" || strings.Contains(word, "/") {
		return "", "", false
	}
	return strings.ToLower(word), arg, true
}
