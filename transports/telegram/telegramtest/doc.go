// Package telegramtest is a local Telegram Bot API server for tests: the
// real go-telegram/bot client talks to it over loopback HTTP, and a test
// plays the owner's side (SendText, SendSticker, SendVoice, SendAudio,
// SendPhoto, Tap), inspects what the bot did (Calls, Messages, Commands,
// Delivered, Confirmed, Reactions, Deleted, Connections), injects faults
// (RateLimit, SetDown, Fail, FailDownloads, SetReactionsAllowed, a
// Voice's or Photo's ClaimedSize that lies about the file's size) and
// holds answers back as a network's round trip would (SetLatency).
//
// It is strict on purpose, so that a wrong call by the code under test
// fails as it would against Telegram: answers have the Bot API's JSON
// shapes and error bodies ({"ok":false,"error_code":400,"description":
// "Bad Request: ..."}); parse_mode HTML is parsed with Telegram's tag set
// and nesting rules; lengths are counted in UTF-16 code units; callback_data
// is limited to 64 bytes; an edit that changes nothing is refused, and an
// editMessageText without reply_markup drops the keyboard. Requests may be
// multipart (as go-telegram/bot sends them), JSON or url-encoded.
//
// It implements getMe, getUpdates, deleteWebhook, sendMessage,
// editMessageText, editMessageReplyMarkup, deleteMessage,
// setMessageReaction (one ReactionTypeEmoji of Telegram's list, else
// "REACTION_INVALID"), answerCallbackQuery, sendChatAction, sendDocument,
// setMyCommands and getFile, and serves the
// files the owner sent at /file/bot<token>/<file_path>; any other method answers
// 404 Not Found. A second getUpdates ends one still waiting with 409
// Conflict, and a negative offset keeps only the last -offset updates, both
// as on Telegram. Both sides' messages in a chat share one message id
// sequence, as on Telegram, so the bot's answer to the owner's first
// message has id 2.
//
// Where it departs from Telegram:
//   - an '&' that starts no character reference is refused in HTML, where
//     Telegram lets it through; its documentation asks for &amp;
//   - parse_mode Markdown and MarkdownV2 are refused as not implemented;
//   - no url, mention or hashtag entities are detected in the bot's texts;
//   - a tap on a message that does not exist still arrives, carrying a
//     minimal message (id, chat, date);
//   - editMessageReplyMarkup counts in Message.Edits like editMessageText.
package telegramtest
