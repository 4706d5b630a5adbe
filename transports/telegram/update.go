package telegram

import "encoding/json"

// update is what the transport reads of a Bot API update: the fields it
// uses, and no more. encoding/json keeps, for good, a description of each
// struct type it has decoded into, and go-telegram/bot's models.Update
// reaches so many types that one message and one tap left 400 KB of them
// on core's heap (a third of core's live heap on the arm64 VM, spread
// over spans that held 1 MB more part-empty). These types cost a few KB.
type update struct {
	Message       *message       `json:"message"`
	CallbackQuery *callbackQuery `json:"callback_query"`
}

// message is a message in a chat with the bot.
type message struct {
	ID      int         `json:"message_id"`
	From    *user       `json:"from"`
	Chat    chat        `json:"chat"`
	Text    string      `json:"text"`
	Caption string      `json:"caption"`
	Voice   *voice      `json:"voice"`
	Audio   *audio      `json:"audio"`
	Photo   []photoSize `json:"photo"`
}

// user is who sent a message or tapped a button.
type user struct {
	ID        int64  `json:"id"`
	Username  string `json:"username"`
	FirstName string `json:"first_name"`
}

// chat is where a message is.
type chat struct {
	ID int64 `json:"id"`
}

// voice is a voice note.
type voice struct {
	FileID   string `json:"file_id"`
	MimeType string `json:"mime_type"`
	FileSize int64  `json:"file_size"`
}

// audio is an audio file.
type audio struct {
	FileID   string `json:"file_id"`
	FileName string `json:"file_name"`
	MimeType string `json:"mime_type"`
	FileSize int64  `json:"file_size"`
}

// photoSize is one of the sizes Telegram offers of a photo.
type photoSize struct {
	FileID   string `json:"file_id"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
	FileSize int    `json:"file_size"`
}

// callbackQuery is a tap on a button. Its message says where the button
// was: Telegram sends the message, or, for one too old to show, its chat
// and id with a date of 0, the same two fields either way.
type callbackQuery struct {
	ID      string   `json:"id"`
	From    user     `json:"from"`
	Message *message `json:"message"`
	Data    string   `json:"data"`
}

// readUpdate reads an update's body as Telegram sent it.
func readUpdate(body []byte) (update, error) {
	var upd update
	err := json.Unmarshal(body, &upd)
	return upd, err
}
