package telegramtest

import (
	"slices"
	"strconv"
	"testing"
	"time"
)

// chat is a private chat between the bot and one user. Both sides' messages
// share one id sequence, as in Telegram.
type chat struct {
	id       int64
	owner    user
	lastID   int64
	messages []*message
	deleted  []int64 // the ids of the messages deleted, in order
	drafts   []Draft // the drafts streamed, in order (drafts.go)
}

// message is one message in a chat, in its current state.
type message struct {
	id       int64
	fromBot  bool
	date     int64
	editDate int64
	// text is the caption when document is set.
	text      string
	entities  []entity
	html      string
	parseMode string
	keyboard  keyboard
	edits     int
	sticker   bool
	document  *Document
	// fileID and fileUniqueID name the document's file.
	fileID, fileUniqueID string
	// voice, audio and photo are what the owner sent; text is then the
	// caption.
	voice *wireVoice
	audio *wireAudio
	photo []wirePhotoSize
	// reactions are the bot's on the message.
	reactions []string
}

// Message is one of the bot's messages, in its current state.
type Message struct {
	ID        int64
	Chat      int64
	Text      string // as Telegram shows it: HTML parsed, entities decoded, tags gone (the caption of a document)
	HTML      string // exactly as sent, whatever the parse mode
	ParseMode string
	Keyboard  [][]Button // the current inline keyboard; nil when none
	Edits     int
	Document  *Document // set for sendDocument
}

// Button is one inline keyboard button.
type Button struct{ Text, CallbackData string }

// Document is a file sent with sendDocument.
type Document struct {
	FileName string
	Content  []byte
	Caption  string // as Telegram shows it
}

// chatWith returns the private chat with user id, starting it if needed.
// Callers hold s.mu.
func (s *Server) chatWith(id int64) *chat {
	c, ok := s.chats[id]
	if !ok {
		c = &chat{id: id, owner: user{ID: id, FirstName: "Tester", LanguageCode: "en"}}
		s.chats[id] = c
	}
	return c
}

func (c *chat) add(m *message) *message {
	c.lastID++
	m.id = c.lastID
	m.date = time.Now().Unix()
	c.messages = append(c.messages, m)
	return m
}

func (c *chat) find(id int64) *message {
	for _, m := range c.messages {
		if m.id == id {
			return m
		}
	}
	return nil
}

func (c *chat) wire() wireChat {
	return wireChat{ID: c.id, Type: "private", FirstName: c.owner.FirstName}
}

// wire is the message as the Bot API shows it.
func (s *Server) wire(c *chat, m *message) wireMessage {
	w := wireMessage{MessageID: m.id, Chat: c.wire(), Date: m.date, EditDate: m.editDate}
	from := c.owner
	if m.fromBot {
		from = s.bot
	}
	w.From = &from
	switch {
	case m.document != nil:
		w.Document = &wireDocument{
			FileName: m.document.FileName, FileID: m.fileID, FileUniqueID: m.fileUniqueID,
			FileSize: len(m.document.Content),
		}
		w.Caption, w.CaptionEntities = m.text, m.entities
	case m.voice != nil:
		w.Voice = m.voice
	case m.audio != nil:
		w.Audio = m.audio
	case len(m.photo) > 0:
		w.Photo = m.photo
		w.Caption, w.CaptionEntities = m.text, m.entities
	case m.sticker:
		w.Sticker = &wireSticker{
			FileID: "CAACAgIAAxkBAAIBY2ZZ", FileUniqueID: "AgADY2ZZ", Type: "regular",
			Width: 512, Height: 512, Emoji: "🐢",
		}
	default:
		w.Text, w.Entities = m.text, m.entities
	}
	if m.keyboard != nil {
		w.ReplyMarkup = &inlineMarkup{InlineKeyboard: m.keyboard}
	}
	return w
}

// exported is the message as the package's callers see it.
func (m *message) exported(chat int64) Message {
	out := Message{
		ID: m.id, Chat: chat, Text: m.text, HTML: m.html, ParseMode: m.parseMode,
		Keyboard: m.keyboard.buttons(), Edits: m.edits,
	}
	if m.document != nil {
		doc := *m.document
		doc.Content = slices.Clone(doc.Content)
		out.Document = &doc
	}
	return out
}

// Messages returns the bot's messages to chat, in the order sent, in their
// current state after edits.
func (s *Server) Messages(chat int64) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.chats[chat]
	if !ok {
		return nil
	}
	var out []Message
	for _, m := range c.messages {
		if m.fromBot {
			out = append(out, m.exported(chat))
		}
	}
	return out
}

// WaitMessage returns the first of the bot's messages to chat whose current
// state match accepts (nil accepts all), waiting up to 15 s for one; then
// it fails t, listing the messages seen.
func (s *Server) WaitMessage(t testing.TB, chat int64, match func(Message) bool) Message {
	t.Helper()
	var found Message
	if s.await(func() bool {
		for _, m := range s.Messages(chat) {
			if match == nil || match(m) {
				found = m
				return true
			}
		}
		return false
	}) {
		return found
	}
	seen := "\t(none)\n"
	if len(s.Messages(chat)) > 0 {
		seen = ""
	}
	for _, m := range s.Messages(chat) {
		seen += "\t#" + strconv.FormatInt(m.ID, 10) + " " + strconv.Quote(m.Text) + "\n"
	}
	t.Fatalf("telegramtest: no message to chat %d matched within %v; messages seen:\n%s", chat, s.waitTimeout, seen)
	return Message{}
}

// Commands returns the commands set by the last setMyCommands.
func (s *Server) Commands() []BotCommand {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.commands)
}
