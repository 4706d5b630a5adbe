package telegramtest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
)

func TestSendMessageText(t *testing.T) {
	s := New(t, testToken)
	s.SendText(owner, "hi")
	b := newBot(t, s)
	const html = models.ParseModeHTML
	tests := []struct {
		name, text string
		parseMode  models.ParseMode
		want       string // the text as shown, when accepted
		wantErr    string // the description, when refused
	}{
		{"formatting", "<b>bold</b> and <i>it</i>", html, "bold and it", ""},
		{"escaped script shown literally", "&lt;script&gt;alert(1)&lt;/script&gt;", html, "<script>alert(1)</script>", ""},
		{"script tag", "<script>alert(1)</script>", html, "", `Bad Request: can't parse entities: Unsupported start tag "script" at byte offset 0`},
		{"unclosed tag", "<b>bold", html, "", `Bad Request: can't parse entities: Can't find end tag corresponding to start tag "b"`},
		{"mis-nested tags", "<b><i>x</b></i>", html, "", `Bad Request: can't parse entities: Unmatched end tag at byte offset 7, expected "</i>", found "</b>"`},
		{"end tag without start", "x</b>", html, "", "Bad Request: can't parse entities: Unexpected end tag at byte offset 1"},
		{"bare less-than", "1 < 2", html, "", `Bad Request: can't parse entities: Unsupported start tag "" at byte offset 2`},
		{"bare ampersand", "fish & chips", html, "", "Bad Request: can't parse entities: Character entity expected at byte offset 5"},
		{"unsupported named entity", "a&nbsp;b", html, "", "Character entity expected at byte offset 1"},
		{"greater-than is fine", "2 > 1", html, "2 > 1", ""},
		{"character references", "&#65;&#x42;&#X43;&quot;&amp;&#128512;", html, `ABC"&😀`, ""},
		{"null reference", "&#0;", html, "", "Character entity expected"},
		{"link", `<a href="https://example.com/?a=1&amp;b=2">site</a>`, html, "site", ""},
		{"pre with a language", `<pre><code class="language-go">x := 1</code></pre>`, html, "x := 1", ""},
		{"spoiler", `<span class="tg-spoiler">secret</span> <tg-spoiler>more</tg-spoiler>`, html, "secret more", ""},
		{"span without the spoiler class", `<span>x</span>`, html, "", `Tag "span" must have class "tg-spoiler"`},
		{"expandable blockquote", `<blockquote expandable>quote</blockquote>`, html, "quote", ""},
		{"custom emoji", `<tg-emoji emoji-id="5368324170671202286">👍</tg-emoji>`, html, "👍", ""},
		{"custom emoji without id", `<tg-emoji>👍</tg-emoji>`, html, "", `Custom emoji entity must contain a tag "emoji-id"`},
		{"upper-case tags", "<B>loud</B>", html, "loud", ""},
		{"unclosed start tag", "<b", html, "", "Unclosed start tag at byte offset 0"},
		{"unterminated attribute", `<a href="x>y</a>`, html, "", "Unclosed start tag at byte offset 0"},
		{"blanks trimmed", "\n  <b>hi</b> \u200b \n", html, "hi", ""},
		{"empty", "", html, "", "Bad Request: message text is empty"},
		{"only tags", "<b></b>", html, "", "Bad Request: message text is empty"},
		{"only blanks", " \n\t ", "", "", "Bad Request: message text is empty"},
		{"4096 units", strings.Repeat("a", 4096), html, strings.Repeat("a", 4096), ""},
		{"4097 units", strings.Repeat("a", 4097), html, "", "Bad Request: message is too long"},
		{"tags do not count", "<b>" + strings.Repeat("a", 4096) + "</b>", html, strings.Repeat("a", 4096), ""},
		{"a reference counts once", strings.Repeat("&lt;", 4096), html, strings.Repeat("<", 4096), ""},
		{"2048 astral emoji are 4096 units", strings.Repeat("😀", 2048), html, strings.Repeat("😀", 2048), ""},
		{"2049 astral emoji are too long", strings.Repeat("😀", 2049), html, "", "Bad Request: message is too long"},
		{"4096 BMP runes of 3 bytes", strings.Repeat("€", 4096), "", strings.Repeat("€", 4096), ""},
		{"plain text keeps markup", "<script> & co", "", "<script> & co", ""},
		{"plain text too long", strings.Repeat("a", 4097), "", "", "Bad Request: message is too long"},
		{"invalid UTF-8", "a\xffb", "", "", "Bad Request: text must be encoded in UTF-8"},
		{"MarkdownV2", "*x*", models.ParseModeMarkdown, "", "Bad Request: parse_mode MarkdownV2 is not implemented"},
		{"unknown parse mode", "x", "XML", "", "Bad Request: unsupported parse_mode"},
		{"lower-case parse mode", "<b>x</b>", "html", "x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(s.Messages(owner))
			got, err := b.SendMessage(context.Background(), &bot.SendMessageParams{ChatID: owner, Text: tt.text, ParseMode: tt.parseMode})
			if tt.wantErr != "" {
				if !errors.Is(err, bot.ErrorBadRequest) {
					t.Errorf("SendMessage(%.40q, %q) error = %v, want bot.ErrorBadRequest", tt.text, tt.parseMode, err)
				}
				wantAPIError(t, "SendMessage", err, tt.wantErr)
				if n := len(s.Messages(owner)); n != before {
					t.Errorf("a refused SendMessage left %d messages, want %d", n, before)
				}
				return
			}
			if err != nil {
				t.Fatalf("SendMessage(%.40q, %q): %v", tt.text, tt.parseMode, err)
			}
			if got.Text != tt.want || got.Chat.ID != owner || got.From == nil || !got.From.IsBot {
				t.Errorf("SendMessage(%.40q) = %+v, want text %.40q from the bot in chat %d", tt.text, got, tt.want, owner)
			}
			msgs := s.Messages(owner)
			last := msgs[len(msgs)-1]
			if last.ID != int64(got.ID) || last.Text != tt.want || last.HTML != tt.text || last.ParseMode != string(tt.parseMode) {
				t.Errorf("Messages(owner) last = %+v, want id %d text %.40q html %.40q", last, got.ID, tt.want, tt.text)
			}
		})
	}
}

func TestSendMessageAnswerShape(t *testing.T) {
	s := New(t, testToken)
	s.SendText(owner, "hi")
	b := newBot(t, s)
	got, err := b.SendMessage(context.Background(), &bot.SendMessageParams{
		ChatID: owner, Text: `😀 <b>bold</b> <a href="https://e.x">link</a>`, ParseMode: models.ParseModeHTML,
	})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	want := []models.MessageEntity{{Type: "bold", Offset: 3, Length: 4}, {Type: "text_link", Offset: 8, Length: 4, URL: "https://e.x"}}
	if got.ID != 2 || got.Date == 0 || got.Chat.Type != "private" || got.Chat.FirstName == "" || !slices.EqualFunc(got.Entities, want, sameEntity) {
		t.Errorf("SendMessage = %+v (entities %+v), want message 2 with entities %+v", got, got.Entities, want)
	}
}

func sameEntity(a, b models.MessageEntity) bool {
	return a.Type == b.Type && a.Offset == b.Offset && a.Length == b.Length && a.URL == b.URL && a.Language == b.Language
}

func TestSendToUnknownChat(t *testing.T) {
	s := New(t, testToken)
	s.SendSticker(owner) // any message starts the chat
	b := newBot(t, s)
	ctx := context.Background()
	tests := []struct {
		name    string
		call    func(chat int64) error
		wantErr string
	}{
		{"sendMessage", func(chat int64) error {
			_, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat, Text: "x"})
			return err
		}, "Bad Request: chat not found"},
		{"sendChatAction", func(chat int64) error {
			_, err := b.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: chat, Action: models.ChatActionTyping})
			return err
		}, "Bad Request: chat not found"},
		{"sendDocument", func(chat int64) error {
			_, err := b.SendDocument(ctx, &bot.SendDocumentParams{ChatID: chat, Document: &models.InputFileUpload{Filename: "a.txt", Data: strings.NewReader("a")}})
			return err
		}, "Bad Request: chat not found"},
		{"editMessageText", func(chat int64) error {
			_, err := b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: chat, MessageID: 1, Text: "x"})
			return err
		}, "Bad Request: chat not found"},
		{"sendMessageDraft", func(chat int64) error {
			_, err := b.SendMessageDraft(ctx, &bot.SendMessageDraftParams{ChatID: chat, DraftID: "7", Text: "x"})
			return err
		}, "Bad Request: chat not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantAPIError(t, tt.name+" to a stranger", tt.call(stranger), tt.wantErr)
			if err := tt.call(owner); err != nil && strings.Contains(err.Error(), "chat not found") {
				t.Errorf("%s to the owner: %v, want the chat found", tt.name, err)
			}
		})
	}
}

// keyboardOf builds a one-row inline keyboard of callback buttons.
func keyboardOf(buttons ...models.InlineKeyboardButton) models.InlineKeyboardMarkup {
	return models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{buttons}}
}

func TestInlineKeyboard(t *testing.T) {
	s := New(t, testToken)
	s.SendText(owner, "hi")
	b := newBot(t, s)
	tests := []struct {
		name    string
		markup  models.ReplyMarkup
		want    [][]Button
		wantErr string
	}{
		{"64 bytes of data", keyboardOf(models.InlineKeyboardButton{Text: "A", CallbackData: strings.Repeat("d", 64)}), [][]Button{{{"A", strings.Repeat("d", 64)}}}, ""},
		{"65 bytes of data", keyboardOf(models.InlineKeyboardButton{Text: "A", CallbackData: strings.Repeat("d", 65)}), nil, "Bad Request: BUTTON_DATA_INVALID"},
		{"32 two-byte runes", keyboardOf(models.InlineKeyboardButton{Text: "A", CallbackData: strings.Repeat("é", 32)}), [][]Button{{{"A", strings.Repeat("é", 32)}}}, ""},
		{"33 two-byte runes are 66 bytes", keyboardOf(models.InlineKeyboardButton{Text: "A", CallbackData: strings.Repeat("é", 33)}), nil, "Bad Request: BUTTON_DATA_INVALID"},
		{"two rows", models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{
			{{Text: "Yes", CallbackData: "y"}, {Text: "No", CallbackData: "n"}}, {{Text: "Site", URL: "https://e.x"}},
		}}, [][]Button{{{"Yes", "y"}, {"No", "n"}}, {{"Site", ""}}}, ""},
		{"button without text", keyboardOf(models.InlineKeyboardButton{CallbackData: "x"}), nil, "Bad Request: BUTTON_TEXT_EMPTY"},
		{"text-only button", keyboardOf(models.InlineKeyboardButton{Text: "A"}), nil, "Text buttons are unallowed in the inline keyboard"},
		{"copy text button", keyboardOf(models.InlineKeyboardButton{Text: "Copy", CopyText: models.CopyTextButton{Text: "ls -la"}}), [][]Button{{{"Copy", ""}}}, ""},
		{"reply keyboard", models.ReplyKeyboardMarkup{Keyboard: [][]models.KeyboardButton{{{Text: "A"}}}}, nil, ""},
		{"empty inline keyboard", models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{}}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := b.SendMessage(context.Background(), &bot.SendMessageParams{ChatID: owner, Text: "pick", ReplyMarkup: tt.markup})
			if tt.wantErr != "" {
				wantAPIError(t, "SendMessage", err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatalf("SendMessage with %s: %v", tt.name, err)
			}
			msgs := s.Messages(owner)
			if kb := msgs[len(msgs)-1].Keyboard; !equalKeyboards(kb, tt.want) {
				t.Errorf("Keyboard = %+v, want %+v", kb, tt.want)
			}
			if (got.ReplyMarkup != nil) != (tt.want != nil) {
				t.Errorf("answered reply_markup = %+v, want one only with an inline keyboard", got.ReplyMarkup)
			}
		})
	}
}

func equalKeyboards(a, b [][]Button) bool {
	return slices.EqualFunc(a, b, func(x, y []Button) bool { return slices.Equal(x, y) }) && (a == nil) == (b == nil)
}

func TestEdits(t *testing.T) {
	s := New(t, testToken)
	s.SendText(owner, "hi")
	b := newBot(t, s)
	ctx := context.Background()
	yesNo := keyboardOf(models.InlineKeyboardButton{Text: "Yes", CallbackData: "y"}, models.InlineKeyboardButton{Text: "No", CallbackData: "n"})
	onlyNo := keyboardOf(models.InlineKeyboardButton{Text: "No", CallbackData: "n"})
	sent, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: owner, Text: "Run <code>ls</code>?", ParseMode: models.ParseModeHTML, ReplyMarkup: yesNo})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	id := sent.ID
	editText := func(messageID int, text string, markup models.ReplyMarkup) func() error {
		return func() error {
			_, err := b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: owner, MessageID: messageID, Text: text, ParseMode: models.ParseModeHTML, ReplyMarkup: markup})
			return err
		}
	}
	editMarkup := func(markup models.ReplyMarkup) func() error {
		return func() error {
			_, err := b.EditMessageReplyMarkup(ctx, &bot.EditMessageReplyMarkupParams{ChatID: owner, MessageID: id, ReplyMarkup: markup})
			return err
		}
	}
	const notModified = "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"
	yesNoButtons := [][]Button{{{"Yes", "y"}, {"No", "n"}}}
	steps := []struct {
		name         string
		edit         func() error
		wantErr      string
		wantText     string
		wantKeyboard [][]Button
		wantEdits    int
	}{
		{"unknown message", editText(99, "x", nil), "Bad Request: message to edit not found", "Run ls?", yesNoButtons, 0},
		{"the owner's message", editText(1, "x", nil), "Bad Request: message can't be edited", "Run ls?", yesNoButtons, 0},
		{"same text and keyboard", editText(id, "Run <code>ls</code>?", yesNo), notModified, "Run ls?", yesNoButtons, 0},
		{"bad HTML", editText(id, "<x>", yesNo), `Unsupported start tag "x"`, "Run ls?", yesNoButtons, 0},
		{"empty text", editText(id, "", yesNo), "Bad Request: message text is empty", "Run ls?", yesNoButtons, 0},
		{"without markup drops the keyboard", editText(id, "Run <code>ls</code>?", nil), "", "Run ls?", nil, 1},
		{"same again", editText(id, "Run <code>ls</code>?", nil), notModified, "Run ls?", nil, 1},
		{"only the formatting changes", editText(id, "Run ls?", nil), "", "Run ls?", nil, 2},
		{"set a keyboard", editMarkup(onlyNo), "", "Run ls?", [][]Button{{{"No", "n"}}}, 3},
		{"same keyboard", editMarkup(onlyNo), notModified, "Run ls?", [][]Button{{{"No", "n"}}}, 3},
		{"remove the keyboard", editMarkup(nil), "", "Run ls?", nil, 4},
		{"remove it again", editMarkup(nil), notModified, "Run ls?", nil, 4},
		{"new text and keyboard", editText(id, "Ran <b>ls</b> ✅", yesNo), "", "Ran ls ✅", yesNoButtons, 5},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			err := step.edit()
			if step.wantErr == "" && err != nil {
				t.Fatalf("edit: %v", err)
			}
			if step.wantErr != "" {
				wantAPIError(t, "edit", err, step.wantErr)
			}
			m := s.Messages(owner)[0]
			if m.Text != step.wantText || !equalKeyboards(m.Keyboard, step.wantKeyboard) || m.Edits != step.wantEdits {
				t.Errorf("message after edit = %+v, want text %q keyboard %+v edits %d", m, step.wantText, step.wantKeyboard, step.wantEdits)
			}
		})
	}
	if m := s.Messages(owner)[0]; m.HTML != "Ran <b>ls</b> ✅" || m.ParseMode != "HTML" {
		t.Errorf("edited message HTML = %q (%s), want the last text sent", m.HTML, m.ParseMode)
	}
}

func TestSendChatAction(t *testing.T) {
	s := New(t, testToken)
	s.SendText(owner, "hi")
	b := newBot(t, s)
	tests := []struct {
		action  models.ChatAction
		wantErr string
	}{
		{models.ChatActionTyping, ""},
		{models.ChatActionUploadDocument, ""},
		{"dancing", "Bad Request: wrong parameter action in request"},
		{"", "Bad Request: wrong parameter action in request"},
	}
	for _, tt := range tests {
		t.Run(string(tt.action), func(t *testing.T) {
			ok, err := b.SendChatAction(context.Background(), &bot.SendChatActionParams{ChatID: owner, Action: tt.action})
			if tt.wantErr != "" {
				wantAPIError(t, "SendChatAction("+string(tt.action)+")", err, tt.wantErr)
				return
			}
			if !ok || err != nil {
				t.Errorf("SendChatAction(%s) = %v, %v; want true", tt.action, ok, err)
			}
		})
	}
}

func TestSendDocument(t *testing.T) {
	s := New(t, testToken)
	s.SendText(owner, "hi")
	b := newBot(t, s)
	content := "line 1\n\x00binary\xff"
	tests := []struct {
		name     string
		params   bot.SendDocumentParams
		wantErr  string
		wantDoc  Document
		wantSize int
	}{
		{"with an HTML caption", bot.SendDocumentParams{
			ChatID: owner, Document: &models.InputFileUpload{Filename: "out.txt", Data: strings.NewReader(content)},
			Caption: "<b>Output</b> of &lt;ls&gt;", ParseMode: models.ParseModeHTML,
		}, "", Document{FileName: "out.txt", Content: []byte(content), Caption: "Output of <ls>"}, len(content)},
		{"without a caption", bot.SendDocumentParams{
			ChatID: owner, Document: &models.InputFileUpload{Filename: "a.log", Data: strings.NewReader("x")},
		}, "", Document{FileName: "a.log", Content: []byte("x")}, 1},
		{"caption of 1024", bot.SendDocumentParams{
			ChatID: owner, Document: &models.InputFileUpload{Filename: "a", Data: strings.NewReader("x")}, Caption: strings.Repeat("c", 1024),
		}, "", Document{FileName: "a", Content: []byte("x"), Caption: strings.Repeat("c", 1024)}, 1},
		{"caption of 1025", bot.SendDocumentParams{
			ChatID: owner, Document: &models.InputFileUpload{Filename: "a", Data: strings.NewReader("x")}, Caption: strings.Repeat("c", 1025),
		}, "Bad Request: message caption is too long", Document{}, 0},
		{"bad caption HTML", bot.SendDocumentParams{
			ChatID: owner, Document: &models.InputFileUpload{Filename: "a", Data: strings.NewReader("x")}, Caption: "<b>", ParseMode: models.ParseModeHTML,
		}, "Can't find end tag", Document{}, 0},
		{"empty file", bot.SendDocumentParams{
			ChatID: owner, Document: &models.InputFileUpload{Filename: "a", Data: strings.NewReader("")},
		}, "Bad Request: file must be non-empty", Document{}, 0},
		{"unknown file id", bot.SendDocumentParams{
			ChatID: owner, Document: &models.InputFileString{Data: "BQACAgIAAxkDAAIBfake"},
		}, "Bad Request: wrong file identifier/HTTP URL specified", Document{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := b.SendDocument(context.Background(), &tt.params)
			if tt.wantErr != "" {
				wantAPIError(t, "SendDocument", err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatalf("SendDocument: %v", err)
			}
			if got.Document == nil || got.Document.FileName != tt.wantDoc.FileName || got.Document.FileSize != int64(tt.wantSize) || got.Document.FileID == "" || got.Caption != tt.wantDoc.Caption || got.Text != "" {
				t.Errorf("SendDocument = %+v (document %+v), want document %q of %d bytes with caption %q", got, got.Document, tt.wantDoc.FileName, tt.wantSize, tt.wantDoc.Caption)
			}
			msgs := s.Messages(owner)
			doc := msgs[len(msgs)-1].Document
			if doc == nil || doc.FileName != tt.wantDoc.FileName || string(doc.Content) != string(tt.wantDoc.Content) || doc.Caption != tt.wantDoc.Caption {
				t.Errorf("Messages(owner) last document = %+v, want %+v", doc, tt.wantDoc)
			}
			calls := s.Calls("sendDocument")
			if p := calls[len(calls)-1].Params; p["document"] != string(tt.wantDoc.Content) {
				t.Errorf("recorded document param = %q, want the file content", p["document"])
			}
		})
	}
	first := s.Messages(owner)[0]
	_, err := b.EditMessageText(context.Background(), &bot.EditMessageTextParams{ChatID: owner, MessageID: int(first.ID), Text: "x"})
	wantAPIError(t, "EditMessageText on a document", err, "Bad Request: there is no text in the message to edit")
}

func TestSetMyCommands(t *testing.T) {
	s := New(t, testToken)
	b := newBot(t, s)
	good := []models.BotCommand{{Command: "start", Description: "Say hello"}, {Command: "status_2", Description: "How it is"}}
	if ok, err := b.SetMyCommands(context.Background(), &bot.SetMyCommandsParams{Commands: good}); !ok || err != nil {
		t.Fatalf("SetMyCommands(%+v) = %v, %v; want true", good, ok, err)
	}
	want := []BotCommand{{"start", "Say hello"}, {"status_2", "How it is"}}
	tests := []struct {
		name    string
		command models.BotCommand
		wantErr string
	}{
		{"upper case", models.BotCommand{Command: "Start", Description: "d"}, "Bad Request: BOT_COMMAND_INVALID"},
		{"leading slash", models.BotCommand{Command: "/start", Description: "d"}, "Bad Request: BOT_COMMAND_INVALID"},
		{"33 characters", models.BotCommand{Command: strings.Repeat("c", 33), Description: "d"}, "Bad Request: BOT_COMMAND_INVALID"},
		{"empty command", models.BotCommand{Command: "", Description: "d"}, "Bad Request: BOT_COMMAND_INVALID"},
		{"empty description", models.BotCommand{Command: "help", Description: ""}, "COMMAND_DESCRIPTION_INVALID"},
		{"257-character description", models.BotCommand{Command: "help", Description: strings.Repeat("d", 257)}, "COMMAND_DESCRIPTION_INVALID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.SetMyCommands(context.Background(), &bot.SetMyCommandsParams{Commands: []models.BotCommand{tt.command}})
			wantAPIError(t, "SetMyCommands", err, tt.wantErr)
			if got := s.Commands(); !slices.Equal(got, want) {
				t.Errorf("Commands() after a refused set = %+v, want the last good set %+v", got, want)
			}
		})
	}
	longest := []models.BotCommand{{Command: strings.Repeat("c", 32), Description: strings.Repeat("d", 256)}}
	if _, err := b.SetMyCommands(context.Background(), &bot.SetMyCommandsParams{Commands: longest}); err != nil {
		t.Errorf("SetMyCommands with the longest command and description: %v", err)
	}
}

// TestSendMessageDraft: a draft streams into the chat as Telegram shows
// it, never becomes a message, and is refused without its id or past its
// length.
func TestSendMessageDraft(t *testing.T) {
	s := New(t, testToken)
	s.SendText(owner, "hi")
	b := newBot(t, s)
	ctx := context.Background()
	for _, text := range []string{"It", "It is <b>sunny</b>"} {
		if ok, err := b.SendMessageDraft(ctx, &bot.SendMessageDraftParams{ChatID: owner, DraftID: "42", Text: text, ParseMode: models.ParseModeHTML}); err != nil || !ok {
			t.Fatalf("SendMessageDraft(%q) = %v, %v", text, ok, err)
		}
	}
	if got, want := s.Drafts(owner), []Draft{{42, "It"}, {42, "It is sunny"}}; !slices.Equal(got, want) {
		t.Errorf("Drafts = %v, want %v", got, want)
	}
	if n := len(s.Messages(owner)); n != 0 {
		t.Errorf("the bot has %d messages in the chat after two drafts, want none", n)
	}
	_, err := b.SendMessageDraft(ctx, &bot.SendMessageDraftParams{ChatID: owner, DraftID: "0", Text: "x"})
	wantAPIError(t, "a draft with id 0", err, "draft_id must be non-zero")
	_, err = b.SendMessageDraft(ctx, &bot.SendMessageDraftParams{ChatID: owner, DraftID: "1", Text: strings.Repeat("x", 4097)})
	wantAPIError(t, "a draft of 4097 characters", err, "text is too long")
}
