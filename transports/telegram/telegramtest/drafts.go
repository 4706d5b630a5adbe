package telegramtest

import (
	"context"
	"slices"
)

// draftLimits are a draft's bounds: up to 4096 characters after entities
// parsing, and an empty text is allowed (Telegram shows "Thinking…").
var draftLimits = textLimits{maxUnits: 4096, tooLong: "text is too long"}

// maxDraftsKept bounds the drafts a chat remembers, the oldest dropped.
const maxDraftsKept = 1024

// Draft is one sendMessageDraft call the server took: the draft's id and
// its text as Telegram shows it (entities parsed away). A draft is a
// preview of a message being written: it never becomes one of the chat's
// messages, and the bot must send the message itself when it is done.
type Draft struct {
	ID   int64
	Text string
}

// Drafts returns the drafts the bot streamed into chat, in order.
func (s *Server) Drafts(chat int64) []Draft {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.chats[chat]; ok {
		return slices.Clone(c.drafts)
	}
	return nil
}

// sendMessageDraft takes a draft of a message being written into a
// private chat (every chat of this server is one), as the Bot API does
// since 9.3: a draft_id that is not zero, a text within its limits.
func (s *Server) sendMessageDraft(_ context.Context, req request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.targetChat(req)
	if err != nil {
		return nil, err
	}
	id, err := req.int("draft_id", 0)
	if err != nil || id == 0 {
		return nil, badRequest("draft_id must be non-zero")
	}
	text, err := format(req.params["text"], req.params["parse_mode"], draftLimits)
	if err != nil {
		return nil, err
	}
	if len(c.drafts) == maxDraftsKept {
		c.drafts = slices.Delete(c.drafts, 0, 1)
	}
	c.drafts = append(c.drafts, Draft{ID: id, Text: text.text})
	s.notify()
	return true, nil
}
