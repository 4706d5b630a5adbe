package telegramtest

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

func (s *Server) getMe(context.Context, request) (any, error) {
	return botUser{user: s.bot, CanJoinGroups: true}, nil
}

func (s *Server) deleteWebhook(context.Context, request) (any, error) { return true, nil }

// targetChat is the chat named by chat_id. Callers hold s.mu.
func (s *Server) targetChat(req request) (*chat, error) {
	raw := strings.TrimSpace(req.params["chat_id"])
	if raw == "" {
		return nil, badRequest("chat_id is empty")
	}
	id, err := req.int("chat_id", 0)
	if err != nil {
		return nil, badRequest("chat not found") // an @username: the fake knows no public chats
	}
	c, ok := s.chats[id]
	if !ok {
		return nil, badRequest("chat not found")
	}
	return c, nil
}

// targetMessage is the chat named by chat_id and the message id named by
// message_id, which may name no message. Callers hold s.mu.
func (s *Server) targetMessage(req request) (*chat, int64, error) {
	c, err := s.targetChat(req)
	if err != nil {
		return nil, 0, err
	}
	id, err := req.int("message_id", 0)
	if err != nil || id == 0 {
		return nil, 0, badRequest("message identifier is not specified")
	}
	return c, id, nil
}

func (s *Server) sendMessage(_ context.Context, req request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.targetChat(req)
	if err != nil {
		return nil, err
	}
	text, err := format(req.params["text"], req.params["parse_mode"], messageLimits)
	if err != nil {
		return nil, err
	}
	kb, err := parseReplyMarkup(req.params["reply_markup"], false)
	if err != nil {
		return nil, err
	}
	m := c.add(&message{
		fromBot: true, text: text.text, entities: text.entities,
		html: req.params["text"], parseMode: req.params["parse_mode"], keyboard: kb,
	})
	s.notify()
	return s.wire(c, m), nil
}

// editTarget is the bot's message an edit names. Callers hold s.mu.
func (s *Server) editTarget(req request) (*chat, *message, error) {
	if req.params["inline_message_id"] != "" {
		return nil, nil, badRequest("MESSAGE_ID_INVALID") // the fake sends no inline messages
	}
	c, id, err := s.targetMessage(req)
	if err != nil {
		return nil, nil, err
	}
	m := c.find(id)
	switch {
	case m == nil:
		return nil, nil, badRequest("message to edit not found")
	case !m.fromBot:
		return nil, nil, badRequest("message can't be edited")
	}
	return c, m, nil
}

var errNotModified = badRequest("message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message")

func (s *Server) editMessageText(_ context.Context, req request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, m, err := s.editTarget(req)
	if err != nil {
		return nil, err
	}
	if m.document != nil {
		return nil, badRequest("there is no text in the message to edit")
	}
	text, err := format(req.params["text"], req.params["parse_mode"], messageLimits)
	if err != nil {
		return nil, err
	}
	// Without reply_markup the edit removes the keyboard, as Telegram's does.
	kb, err := parseReplyMarkup(req.params["reply_markup"], true)
	if err != nil {
		return nil, err
	}
	if text.text == m.text && slices.Equal(text.entities, m.entities) && kb.same(m.keyboard) {
		return nil, errNotModified
	}
	m.text, m.entities, m.keyboard = text.text, text.entities, kb
	m.html, m.parseMode = req.params["text"], req.params["parse_mode"]
	s.edited(m)
	return s.wire(c, m), nil
}

func (s *Server) editMessageReplyMarkup(_ context.Context, req request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, m, err := s.editTarget(req)
	if err != nil {
		return nil, err
	}
	kb, err := parseReplyMarkup(req.params["reply_markup"], true)
	if err != nil {
		return nil, err
	}
	if kb.same(m.keyboard) {
		return nil, errNotModified
	}
	m.keyboard = kb
	s.edited(m)
	return s.wire(c, m), nil
}

// edited counts an edit of m. Callers hold s.mu.
func (s *Server) edited(m *message) {
	m.edits++
	m.editDate = time.Now().Unix()
	s.notify()
}

// maxCallbackAnswer is Telegram's limit on answerCallbackQuery's text.
const maxCallbackAnswer = 200

func (s *Server) answerCallbackQuery(_ context.Context, req request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := req.params["callback_query_id"]
	if answered, issued := s.queries[id]; !issued || answered {
		return nil, badRequest("query is too old and response timeout expired or query ID is invalid")
	}
	if utf16Units(req.params["text"]) > maxCallbackAnswer {
		return nil, badRequest("MESSAGE_TOO_LONG")
	}
	s.queries[id] = true
	s.notify()
	return true, nil
}

// chatActions are the actions sendChatAction takes.
var chatActions = []string{
	"typing", "upload_photo", "record_video", "upload_video", "record_voice", "upload_voice",
	"upload_document", "choose_sticker", "find_location", "record_video_note", "upload_video_note",
}

func (s *Server) sendChatAction(_ context.Context, req request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.targetChat(req); err != nil {
		return nil, err
	}
	if !slices.Contains(chatActions, req.params["action"]) {
		return nil, badRequest("wrong parameter action in request")
	}
	return true, nil
}

func (s *Server) sendDocument(_ context.Context, req request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.targetChat(req)
	if err != nil {
		return nil, err
	}
	file, err := documentUpload(req)
	if err != nil {
		return nil, err
	}
	caption, err := format(req.params["caption"], req.params["parse_mode"], captionLimits)
	if err != nil {
		return nil, err
	}
	kb, err := parseReplyMarkup(req.params["reply_markup"], false)
	if err != nil {
		return nil, err
	}
	s.nextFile++
	m := c.add(&message{
		fromBot: true, text: caption.text, entities: caption.entities,
		html: req.params["caption"], parseMode: req.params["parse_mode"], keyboard: kb,
		document:     &Document{FileName: file.name, Content: file.content, Caption: caption.text},
		fileID:       fmt.Sprintf("BQACAgIAAxkDAAIB%08d", s.nextFile),
		fileUniqueID: fmt.Sprintf("AgADB%08d", s.nextFile),
	})
	s.notify()
	return s.wire(c, m), nil
}

// documentUpload finds sendDocument's file: a file part named document, or
// one named by "attach://<name>". A file id or URL names a file the fake
// never stored.
func documentUpload(req request) (upload, error) {
	file, ok := req.files["document"]
	if name, attached := strings.CutPrefix(req.params["document"], "attach://"); !ok && attached {
		file, ok = req.files[name]
	}
	switch {
	case ok && len(file.content) == 0:
		return upload{}, badRequest("file must be non-empty")
	case ok:
		return file, nil
	case req.params["document"] == "":
		return upload{}, badRequest("there is no document in the request")
	default:
		return upload{}, badRequest("wrong file identifier/HTTP URL specified")
	}
}

const (
	maxCommands           = 100
	maxCommandDescription = 256
)

var commandPattern = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

func (s *Server) setMyCommands(_ context.Context, req request) (any, error) {
	raw, ok := req.params["commands"]
	if !ok {
		return nil, badRequest(`parameter "commands" is required`)
	}
	var commands []struct {
		Command     *string `json:"command"`
		Description *string `json:"description"`
	}
	if err := json.Unmarshal([]byte(raw), &commands); err != nil {
		return nil, badRequest("can't parse commands JSON object")
	}
	if len(commands) > maxCommands {
		return nil, badRequest("BOT_COMMANDS_TOO_MUCH")
	}
	set := make([]BotCommand, 0, len(commands))
	for _, c := range commands {
		if c.Command == nil || !commandPattern.MatchString(*c.Command) {
			return nil, badRequest("BOT_COMMAND_INVALID")
		}
		if c.Description == nil || strings.TrimSpace(*c.Description) == "" || utf16Units(*c.Description) > maxCommandDescription {
			return nil, badRequest("BOT_COMMAND_DESCRIPTION_INVALID")
		}
		set = append(set, BotCommand{Command: *c.Command, Description: *c.Description})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commands = set
	s.notify()
	return true, nil
}
