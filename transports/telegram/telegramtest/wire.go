package telegramtest

import "encoding/json"

// The types below are the Bot API's JSON shapes, written out here rather
// than borrowed from go-telegram/bot's models so that the answers are
// Telegram's and not the client's idea of them.

type user struct {
	ID           int64  `json:"id"`
	IsBot        bool   `json:"is_bot"`
	FirstName    string `json:"first_name"`
	Username     string `json:"username,omitempty"`
	LanguageCode string `json:"language_code,omitempty"`
}

// botUser is what getMe answers.
type botUser struct {
	user
	CanJoinGroups           bool `json:"can_join_groups"`
	CanReadAllGroupMessages bool `json:"can_read_all_group_messages"`
	SupportsInlineQueries   bool `json:"supports_inline_queries"`
	CanConnectToBusiness    bool `json:"can_connect_to_business"`
	HasMainWebApp           bool `json:"has_main_web_app"`
}

type wireChat struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"`
	FirstName string `json:"first_name,omitempty"`
}

type wireDocument struct {
	FileName     string `json:"file_name,omitempty"`
	MimeType     string `json:"mime_type,omitempty"`
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	FileSize     int    `json:"file_size"`
}

type wireSticker struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	Type         string `json:"type"`
	Width        int    `json:"width"`
	Height       int    `json:"height"`
	IsAnimated   bool   `json:"is_animated"`
	IsVideo      bool   `json:"is_video"`
	Emoji        string `json:"emoji,omitempty"`
}

type wireVoice struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	Duration     int    `json:"duration"`
	MimeType     string `json:"mime_type,omitempty"`
	FileSize     int64  `json:"file_size,omitempty"`
}

type wireAudio struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	Duration     int    `json:"duration"`
	FileName     string `json:"file_name,omitempty"`
	MimeType     string `json:"mime_type,omitempty"`
	FileSize     int64  `json:"file_size,omitempty"`
}

type wirePhotoSize struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	Width        int    `json:"width"`
	Height       int    `json:"height"`
	FileSize     int64  `json:"file_size,omitempty"`
}

// wireFile is what getFile answers.
type wireFile struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	FileSize     int64  `json:"file_size,omitempty"`
	FilePath     string `json:"file_path,omitempty"`
}

type inlineMarkup struct {
	InlineKeyboard keyboard `json:"inline_keyboard"`
}

type wireMessage struct {
	MessageID       int64           `json:"message_id"`
	From            *user           `json:"from,omitempty"`
	Chat            wireChat        `json:"chat"`
	Date            int64           `json:"date"`
	EditDate        int64           `json:"edit_date,omitempty"`
	Text            string          `json:"text,omitempty"`
	Entities        []entity        `json:"entities,omitempty"`
	Document        *wireDocument   `json:"document,omitempty"`
	Sticker         *wireSticker    `json:"sticker,omitempty"`
	Voice           *wireVoice      `json:"voice,omitempty"`
	Audio           *wireAudio      `json:"audio,omitempty"`
	Photo           []wirePhotoSize `json:"photo,omitempty"`
	Caption         string          `json:"caption,omitempty"`
	CaptionEntities []entity        `json:"caption_entities,omitempty"`
	ReplyMarkup     *inlineMarkup   `json:"reply_markup,omitempty"`
}

type wireCallbackQuery struct {
	ID           string      `json:"id"`
	From         user        `json:"from"`
	Message      wireMessage `json:"message"`
	ChatInstance string      `json:"chat_instance"`
	Data         string      `json:"data"`
}

type wireUpdate struct {
	UpdateID      int64              `json:"update_id"`
	Message       *wireMessage       `json:"message,omitempty"`
	CallbackQuery *wireCallbackQuery `json:"callback_query,omitempty"`
}

type responseParameters struct {
	RetryAfter int `json:"retry_after"`
}

// response is the envelope of every Bot API answer.
type response struct {
	OK          bool                `json:"ok"`
	Result      any                 `json:"result,omitempty"`
	ErrorCode   int                 `json:"error_code,omitempty"`
	Description string              `json:"description,omitempty"`
	Parameters  *responseParameters `json:"parameters,omitempty"`
}

// queuedUpdate is an update waiting to be confirmed, encoded once when
// queued so that every delivery shows the same thing.
type queuedUpdate struct {
	id   int64
	body json.RawMessage
}
