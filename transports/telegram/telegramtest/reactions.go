package telegramtest

import (
	"context"
	"encoding/json"
	"slices"
)

// reactionEmoji are the emoji the Bot API takes in a ReactionTypeEmoji
// (https://core.telegram.org/bots/api#reactiontypeemoji).
var reactionEmoji = []string{
	"❤", "👍", "👎", "🔥", "🥰", "👏", "😁", "🤔", "🤯", "😱", "🤬", "😢", "🎉", "🤩", "🤮", "💩", "🙏", "👌", "🕊", "🤡",
	"🥱", "🥴", "😍", "🐳", "❤‍🔥", "🌚", "🌭", "💯", "🤣", "⚡", "🍌", "🏆", "💔", "🤨", "😐", "🍓", "🍾", "💋", "🖕", "😈",
	"😴", "😭", "🤓", "👻", "👨‍💻", "👀", "🎃", "🙈", "😇", "😨", "🤝", "✍", "🤗", "🫡", "🎅", "🎄", "☃", "💅", "🤪", "🗿",
	"🆒", "💘", "🙉", "🦄", "😘", "💊", "🙊", "😎", "👾", "🤷‍♂", "🤷", "🤷‍♀", "😡",
}

// SetReactionsAllowed makes setMessageReaction refuse every reaction, as
// Telegram does in a chat whose reactions are turned off ("Bad Request:
// REACTION_INVALID"), or take them again. A server without the method at
// all is Fail with status 404.
func (s *Server) SetReactionsAllowed(allowed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noReactions = !allowed
	s.notify()
}

// Reactions returns the emoji the bot set on message id of chat (the
// owner's message, usually), as its last setMessageReaction left them.
func (s *Server) Reactions(chat, id int64) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.chats[chat]
	if !ok {
		return nil
	}
	if m := c.find(id); m != nil {
		return slices.Clone(m.reactions)
	}
	return nil
}

// Deleted returns the ids of the messages the bot deleted in chat, in the
// order it deleted them.
func (s *Server) Deleted(chat int64) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.chats[chat]; ok {
		return slices.Clone(c.deleted)
	}
	return nil
}

// setMessageReaction sets the bot's reaction on a message, either side's:
// one ReactionTypeEmoji from Telegram's list, or none to take it away
// (a bot, like a user without Premium, sets at most one).
func (s *Server) setMessageReaction(_ context.Context, req request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, id, err := s.targetMessage(req)
	if err != nil {
		return nil, err
	}
	m := c.find(id)
	if m == nil {
		return nil, badRequest("message to react not found")
	}
	var reactions []struct {
		Type          string `json:"type"`
		Emoji         string `json:"emoji"`
		CustomEmojiID string `json:"custom_emoji_id"`
	}
	if raw := req.params["reaction"]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &reactions); err != nil {
			return nil, badRequest("can't parse reaction types JSON object")
		}
	}
	if len(reactions) > 1 {
		return nil, badRequest("REACTIONS_TOO_MANY")
	}
	var set []string
	for _, r := range reactions {
		switch {
		case r.Type == "custom_emoji":
			return nil, badRequest("REACTION_INVALID") // a bot's custom emoji needs the chat's own set
		case r.Type != "emoji":
			return nil, badRequest("unsupported reaction type")
		case !slices.Contains(reactionEmoji, r.Emoji), s.noReactions:
			return nil, badRequest("REACTION_INVALID")
		}
		set = append(set, r.Emoji)
	}
	m.reactions = set
	s.notify()
	return true, nil
}

// deleteMessage deletes a message of the chat. In a private chat a bot
// may delete both sides' messages.
func (s *Server) deleteMessage(_ context.Context, req request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, id, err := s.targetMessage(req)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(c.messages, func(m *message) bool { return m.id == id })
	if i < 0 {
		return nil, badRequest("message to delete not found")
	}
	c.messages = slices.Delete(c.messages, i, i+1)
	c.deleted = append(c.deleted, id)
	s.notify()
	return true, nil
}
