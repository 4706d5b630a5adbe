package telegramtest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"shelldon/transports/telegram/telegramtest"
)

// exampleT stands in for the *testing.T a real test would pass to New.
type exampleT struct {
	testing.TB
	cleanups []func()
}

func (e *exampleT) Helper()                           {}
func (e *exampleT) Cleanup(f func())                  { e.cleanups = append(e.cleanups, f) }
func (e *exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func (e *exampleT) finish() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
}

func Example() {
	t := &exampleT{}
	defer t.finish()

	s := telegramtest.New(t, "123456:token")
	s.SendText(42, "hello") // the owner starts the chat

	b, err := bot.New("123456:token", bot.WithServerURL(s.URL()))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	_, err = b.SendMessage(ctx, &bot.SendMessageParams{
		ChatID: 42, Text: "Run <code>ls</code>?", ParseMode: models.ParseModeHTML,
		ReplyMarkup: models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{
			{Text: "Approve", CallbackData: "ok"},
		}}},
	})
	fmt.Println("sent:", err)

	_, err = b.SendMessage(ctx, &bot.SendMessageParams{ChatID: 42, Text: "a <script>", ParseMode: models.ParseModeHTML})
	fmt.Println("refused:", err)

	m := s.WaitMessage(t, 42, nil)
	fmt.Printf("%d %q %+v\n", m.ID, m.Text, m.Keyboard)
	// Output:
	// sent: <nil>
	// refused: bad request, Bad Request: can't parse entities: Unsupported start tag "script" at byte offset 2
	// 2 "Run ls?" [[{Text:Approve CallbackData:ok}]]
}
