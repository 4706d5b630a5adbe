package telegramtest

import (
	"encoding/json"
	"strings"
)

// keyboard is an inline keyboard as the bot set it. Each button keeps the
// fields the bot sent, so answers echo them back as Telegram does.
type keyboard [][]map[string]json.RawMessage

// maxCallbackData is Telegram's limit on callback_data, in bytes.
const maxCallbackData = 64

// buttonActions are the fields of which an inline button needs one.
var buttonActions = []string{
	"url", "callback_data", "web_app", "login_url", "switch_inline_query",
	"switch_inline_query_current_chat", "switch_inline_query_chosen_chat",
	"copy_text", "callback_game", "pay",
}

// parseReplyMarkup reads a reply_markup field. It returns the inline
// keyboard it sets, nil for none. Edits (inlineOnly) take nothing but an
// inline keyboard; an empty field or object means "no keyboard".
func parseReplyMarkup(raw string, inlineOnly bool) (keyboard, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" || raw == "null" {
		return nil, nil
	}
	var markup map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &markup); err != nil || markup == nil {
		return nil, badRequest("can't parse reply keyboard markup JSON object")
	}
	rows, isInline := markup["inline_keyboard"]
	switch {
	case isInline:
	case inlineOnly && len(markup) == 0:
		return nil, nil
	case inlineOnly:
		return nil, badRequest("inline keyboard expected")
	case markup["keyboard"] != nil, markup["remove_keyboard"] != nil, markup["force_reply"] != nil:
		return nil, nil // a reply keyboard: accepted, but not an inline one
	default:
		return nil, badRequest("can't parse reply keyboard markup JSON object")
	}
	var buttons keyboard
	if err := json.Unmarshal(rows, &buttons); err != nil {
		return nil, badRequest(`field "inline_keyboard" of the InlineKeyboardMarkup must be an Array of Arrays`)
	}
	var kept keyboard
	for _, row := range buttons {
		for _, button := range row {
			if err := checkButton(button); err != nil {
				return nil, err
			}
		}
		if len(row) > 0 {
			kept = append(kept, row)
		}
	}
	return kept, nil
}

// checkButton checks one inline button as Telegram does.
func checkButton(button map[string]json.RawMessage) error {
	var text string
	if button == nil || json.Unmarshal(button["text"], &text) != nil {
		return badRequest(`can't parse inline keyboard button: Field "text" must be of type String`)
	}
	if strings.TrimFunc(text, isBlank) == "" {
		return badRequest("BUTTON_TEXT_EMPTY")
	}
	if raw, ok := button["callback_data"]; ok {
		var data string
		if json.Unmarshal(raw, &data) != nil || data == "" || len(data) > maxCallbackData {
			return badRequest("BUTTON_DATA_INVALID")
		}
	}
	if raw, ok := button["url"]; ok {
		var url string
		if json.Unmarshal(raw, &url) != nil || strings.TrimSpace(url) == "" {
			return badRequest("BUTTON_URL_INVALID")
		}
	}
	// go-telegram/bot always sends "copy_text":{"text":""}; Telegram takes
	// an empty copy_text as no copy_text at all.
	var copyText struct{ Text string }
	if raw, ok := button["copy_text"]; ok && json.Unmarshal(raw, &copyText) == nil && copyText.Text == "" {
		delete(button, "copy_text")
	}
	for _, action := range buttonActions {
		if raw, ok := button[action]; ok && string(raw) != "false" && string(raw) != "null" {
			return nil
		}
	}
	return badRequest("can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard")
}

// buttons is the keyboard as the package's callers see it.
func (k keyboard) buttons() [][]Button {
	if len(k) == 0 {
		return nil
	}
	rows := make([][]Button, len(k))
	for i, row := range k {
		for _, raw := range row {
			var b Button
			_ = json.Unmarshal(raw["text"], &b.Text)                  // checked by checkButton
			_ = json.Unmarshal(raw["callback_data"], &b.CallbackData) // absent for url buttons
			rows[i] = append(rows[i], b)
		}
	}
	return rows
}

// same reports whether two keyboards are the same to Telegram's eyes.
func (k keyboard) same(other keyboard) bool {
	a, errA := json.Marshal(k)
	b, errB := json.Marshal(other)
	return errA == nil && errB == nil && string(a) == string(b)
}
