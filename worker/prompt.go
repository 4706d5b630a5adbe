package worker

import (
	"strings"
	"time"
	"unicode/utf8"

	"shelldon/contracts"
)

// DefaultPromptChars is the prompt budget when PromptInput.MaxChars is unset.
const DefaultPromptChars = 24000

// cutMarker shows where text was cut to fit the budget.
const cutMarker = "…[cut]…"

// minTextRunes is how much of the owner's text survives however tight the
// budget: the turn exists to answer it, so it is never cut to nothing.
const minTextRunes = 200

// PromptInput is everything one turn's prompt is built from.
type PromptInput struct {
	Directive string                   // DIRECTIVE.md
	About     string                   // about.md (may be empty)
	Faces     []string                 // face names the model may pick
	History   []contracts.HistoryEntry // oldest → newest
	// Text is the owner's message(s) for this turn; coalesced messages are
	// joined by newlines.
	Text string
	Now  time.Time
	// Mood is how the pet feels, and why; empty leaves it out.
	Mood, MoodWhy string
	// Scheduled marks a turn the pet started itself: Text is what the
	// owner asked for at this time, not something they just wrote.
	Scheduled bool
	// ByName are the tools the model is told of by name alone.
	ByName []string
	// Skills is the skills section (skills.Section); "" for none.
	Skills string
	// MaxChars is the budget, in characters, for the contents of all the
	// prompt's messages; zero or less means DefaultPromptChars.
	MaxChars int
}

// BuildPrompt assembles a turn's messages: the system message (directive,
// what is known of the owner, the faces, the local time), the history as
// user and assistant messages, and the owner's text last.
//
// To fit MaxChars it drops the oldest history first. If the system message
// and the text alone are over, it shortens about.md and then the middle of
// the text, keeping its start and end. The directive is never cut and the
// text keeps at least minTextRunes characters, so a directive that nearly
// fills the budget overruns it.
func BuildPrompt(in PromptInput) []contracts.Message {
	budget := in.MaxChars
	if budget <= 0 {
		budget = DefaultPromptChars
	}
	about := strings.TrimSpace(in.About)
	text := in.Text

	if about != "" {
		others := runeLen(systemPrompt(in, about)) - runeLen(about) + runeLen(text)
		about = cutEnd(about, max(budget-others, 0))
	}
	system := systemPrompt(in, about)
	if room := budget - runeLen(system); runeLen(text) > room {
		text = cutMiddle(text, max(room, minTextRunes))
	}

	history := recentHistory(in.History, budget-runeLen(system)-runeLen(text))
	messages := make([]contracts.Message, 0, len(history)+2)
	messages = append(messages, contracts.Message{Role: contracts.ChatSystem, Content: system})
	messages = append(messages, history...)
	return append(messages, contracts.Message{Role: contracts.ChatUser, Content: text})
}

// systemPrompt writes the system message around about, which the budget
// may already have shortened and which is empty when nothing is known.
func systemPrompt(in PromptInput, about string) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(in.Directive))
	b.WriteString("\n\n## About your owner\n")
	if about == "" {
		b.WriteString("Nothing is known about your owner yet.")
	} else {
		b.WriteString(about)
	}
	if len(in.Faces) > 0 {
		b.WriteString("\n\n## Faces\nPick one for your reply on a FACE: line: ")
		b.WriteString(strings.Join(in.Faces, ", "))
	}
	if len(in.ByName) > 0 {
		b.WriteString("\n\n## More tools\nYou also have these tools, described only once you call one: call it by name, and from then on its description and parameters come with your tools: ")
		b.WriteString(strings.Join(in.ByName, ", "))
	}
	if in.Skills != "" {
		b.WriteString("\n\n## Skills\n")
		b.WriteString(in.Skills)
	}
	b.WriteString("\n\n## Now\nLocal date and time: ")
	b.WriteString(in.Now.Format("Monday 2 January 2006, 15:04 MST"))
	if in.Mood != "" {
		b.WriteString("\n\n## Your mood\nYou feel " + in.Mood)
		if in.MoodWhy != "" {
			b.WriteString(" (" + in.MoodWhy + ")")
		}
		b.WriteString(". Let it colour your answer a little; your owner comes first.")
	}
	if in.Scheduled {
		b.WriteString("\n\n## This turn\nNobody wrote just now: your owner asked you earlier to do this at this time, " +
			"so the last message is their request, not something they just said. Do it, and tell them.")
	}
	return b.String()
}

// recentHistory turns the newest history entries that fit in room
// characters into messages, oldest first. It stops at the first entry that
// does not fit, so what is kept is always the most recent stretch of the
// conversation with no gaps. Entries of any other role are dropped, so
// history can never smuggle in a system message.
func recentHistory(entries []contracts.HistoryEntry, room int) []contracts.Message {
	var kept []contracts.Message
	for i := len(entries) - 1; i >= 0; i-- {
		entry := entries[i]
		if !isConversationRole(entry.Role) || entry.Text == "" {
			continue
		}
		size := runeLen(entry.Text)
		if size > room {
			break
		}
		room -= size
		kept = append(kept, contracts.Message{Role: entry.Role, Content: entry.Text})
	}
	// Collected newest first; the model reads oldest first.
	for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
		kept[i], kept[j] = kept[j], kept[i]
	}
	return kept
}

func isConversationRole(role string) bool {
	return role == contracts.ChatUser || role == contracts.ChatAssistant
}

// cutEnd shortens s to at most limit runes, ending it with the cut marker.
// Below the marker's own length, the marker alone is returned.
func cutEnd(s string, limit int) string {
	if runeLen(s) <= limit {
		return s
	}
	keep := max(limit-runeLen(cutMarker), 0)
	return capRunes(s, keep) + cutMarker
}

// cutMiddle shortens s to at most limit runes by replacing its middle with
// the cut marker, so both the start and the end of the text survive.
func cutMiddle(s string, limit int) string {
	size := runeLen(s)
	if size <= limit {
		return s
	}
	keep := max(limit-runeLen(cutMarker), 0)
	tail := keep / 2
	head := keep - tail
	return capRunes(s, head) + cutMarker + lastRunes(s, tail)
}

func runeLen(s string) int { return utf8.RuneCountInString(s) }

func lastRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	i := len(s)
	for count := 0; count < n && i > 0; count++ {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
}
