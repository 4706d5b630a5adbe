package telegramtest

import (
	"strings"
	"unicode/utf8"
)

// formatted is a text as Telegram stores it: markup parsed, ends trimmed.
type formatted struct {
	text     string
	entities []entity
}

// textLimits are Telegram's bounds for one kind of text.
type textLimits struct {
	maxUnits int
	// empty is the error for an empty text; "" when an empty text is fine.
	empty   string
	tooLong string
}

var (
	messageLimits = textLimits{maxUnits: 4096, empty: "message text is empty", tooLong: "message is too long"}
	captionLimits = textLimits{maxUnits: 1024, tooLong: "message caption is too long"}
)

// format parses raw under parseMode and checks its length in UTF-16 units,
// the way Telegram counts.
func format(raw, parseMode string, limits textLimits) (formatted, error) {
	if !utf8.ValidString(raw) {
		return formatted{}, badRequest("text must be encoded in UTF-8")
	}
	var f formatted
	switch {
	case parseMode == "":
		f.text = raw
	case strings.EqualFold(parseMode, "HTML"):
		text, entities, err := parseHTML(raw)
		if err != nil {
			return formatted{}, badRequest("%s", err)
		}
		f.text, f.entities = text, entities
	case strings.EqualFold(parseMode, "Markdown"), strings.EqualFold(parseMode, "MarkdownV2"):
		return formatted{}, badRequest("parse_mode %s is not implemented by telegramtest; use HTML", parseMode)
	default:
		return formatted{}, badRequest("unsupported parse_mode")
	}
	f.text, f.entities = trimBlank(f.text, f.entities)
	switch units := utf16Units(f.text); {
	case units == 0 && limits.empty != "":
		return formatted{}, badRequest("%s", limits.empty)
	case units > limits.maxUnits:
		return formatted{}, badRequest("%s", limits.tooLong)
	}
	return f, nil
}
