package telegramtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
)

// getUpdates polls without waiting and returns the update ids answered.
func getUpdates(t *testing.T, s *Server, params map[string]any) []int64 {
	t.Helper()
	status, answer := postJSON(t, s, "getUpdates", params)
	if status != 200 {
		t.Fatalf("getUpdates(%v) = %d %q", params, status, answer.Description)
	}
	var updates []models.Update
	if err := json.Unmarshal(answer.Result, &updates); err != nil {
		t.Fatalf("getUpdates(%v) result %s: %v", params, answer.Result, err)
	}
	ids := []int64{}
	for _, u := range updates {
		ids = append(ids, u.ID)
	}
	return ids
}

func TestGetUpdatesConfirmation(t *testing.T) {
	s := New(t, testToken)
	for i, want := range []int64{1000, 1001, 1002} {
		if got := s.SendText(owner, fmt.Sprint("message ", i)); got != want {
			t.Fatalf("SendText #%d = update %d, want %d", i, got, want)
		}
	}
	steps := []struct {
		name          string
		queue         int // texts queued before the call
		params        map[string]any
		want          []int64
		wantConfirmed int64
	}{
		{"everything pending", 0, map[string]any{}, []int64{1000, 1001, 1002}, 0},
		{"limit", 0, map[string]any{"limit": 2}, []int64{1000, 1001}, 0},
		{"limit over 100 is 100", 0, map[string]any{"limit": 1000}, []int64{1000, 1001, 1002}, 0},
		{"offset confirms the lower ids", 0, map[string]any{"offset": 1002}, []int64{1002}, 1001},
		{"confirmed updates are gone for good", 0, map[string]any{"offset": 0}, []int64{1002}, 1001},
		{"a lower offset brings nothing back", 0, map[string]any{"offset": 1000}, []int64{1002}, 1001},
		{"offset past the last confirms all", 0, map[string]any{"offset": 1003}, []int64{}, 1002},
		{"new updates after confirmation", 3, map[string]any{"offset": 1003}, []int64{1003, 1004, 1005}, 1002},
		{"negative offset keeps the last ones", 0, map[string]any{"offset": -1}, []int64{1005}, 1004},
		{"offset far ahead", 0, map[string]any{"offset": 5000}, []int64{}, 1005},
		{"later updates still come after a far offset", 1, map[string]any{}, []int64{1006}, 1005},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			for range step.queue {
				s.SendText(owner, "more")
			}
			if got := getUpdates(t, s, step.params); !slices.Equal(got, step.want) {
				t.Errorf("getUpdates(%v) = %v, want %v", step.params, got, step.want)
			}
			if got := s.Confirmed(); got != step.wantConfirmed {
				t.Errorf("Confirmed() after getUpdates(%v) = %d, want %d", step.params, got, step.wantConfirmed)
			}
		})
	}
	for id, want := range map[int64]int{1000: 3, 1001: 3, 1002: 5, 1005: 2, 1006: 1, 9999: 0} {
		if got := s.Delivered(id); got != want {
			t.Errorf("Delivered(%d) = %d, want %d", id, got, want)
		}
	}
}

func TestGetUpdatesURLEncoded(t *testing.T) {
	s := New(t, testToken)
	s.SendText(owner, "a")
	s.SendText(owner, "b")
	status, answer := post(t, s, "/bot"+testToken+"/getUpdates", "application/x-www-form-urlencoded", "offset=1001&limit=5&timeout=0")
	if status != 200 || !strings.Contains(string(answer.Result), `"update_id":1001`) || strings.Contains(string(answer.Result), `"update_id":1000`) {
		t.Errorf("getUpdates offset=1001 = %d %s, want only update 1001", status, answer.Result)
	}
}

func TestUpdateShapes(t *testing.T) {
	s := New(t, testToken)
	s.SendText(owner, "/start now")
	s.SendSticker(owner)
	status, answer := postJSON(t, s, "getUpdates", map[string]any{})
	var updates []models.Update
	if err := json.Unmarshal(answer.Result, &updates); status != 200 || err != nil || len(updates) != 2 {
		t.Fatalf("getUpdates = %d %s (%v), want two updates", status, answer.Result, err)
	}
	text, sticker := updates[0].Message, updates[1].Message
	if text == nil || text.Text != "/start now" || text.From.ID != owner || text.Chat.ID != owner || text.Chat.Type != "private" || text.Date == 0 || text.ID != 1 {
		t.Errorf("text update = %+v, want message 1 \"/start now\" from %d in their private chat", text, owner)
	}
	if want := []models.MessageEntity{{Type: "bot_command", Length: 6}}; text == nil || !slices.Equal(text.Entities, want) {
		t.Errorf("text update entities = %+v, want %+v", text.Entities, want)
	}
	if sticker == nil || sticker.Sticker == nil || sticker.Text != "" || sticker.ID != 2 {
		t.Errorf("sticker update = %+v, want message 2 with a sticker and no text", sticker)
	}
}

func TestLongPollWakesOnUpdate(t *testing.T) {
	s := New(t, testToken)
	_, updates := startBot(t, s)
	waitPolling(t, s) // go-telegram/bot asks for timeout=59: only a wake-up answers within the guard
	id := s.SendText(owner, "wake up")
	u := receive(t, updates)
	if u.ID != id || u.Message == nil || u.Message.Text != "wake up" {
		t.Fatalf("update = %+v, want %d \"wake up\"", u, id)
	}
	if !s.await(func() bool { return s.Confirmed() == id }) {
		t.Errorf("Confirmed() = %d, want %d once the client polls again", s.Confirmed(), id)
	}
	if got := s.Delivered(id); got != 1 {
		t.Errorf("Delivered(%d) = %d, want 1", id, got)
	}
}

func TestNewerPollEndsOlder(t *testing.T) {
	s := New(t, testToken)
	older := make(chan apiAnswer, 1)
	go func() {
		resp, err := http.Post(s.URL()+"/bot"+testToken+"/getUpdates", "application/json", strings.NewReader(`{"timeout":30}`))
		var answer apiAnswer
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&answer)
			resp.Body.Close()
		}
		if err != nil {
			answer.Description = err.Error()
		}
		older <- answer
	}()
	waitPolling(t, s)
	getUpdates(t, s, map[string]any{})
	select {
	case answer := <-older:
		if answer.ErrorCode != http.StatusConflict || !strings.HasPrefix(answer.Description, "Conflict: terminated by other getUpdates request") {
			t.Errorf("older long poll = %+v, want 409 Conflict", answer)
		}
	case <-time.After(guard):
		t.Fatalf("older long poll still waiting %v after a newer one", guard)
	}
}

func TestPollAfterClientGoesAway(t *testing.T) {
	s := New(t, testToken)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/bot"+testToken+"/getUpdates", strings.NewReader(`{"timeout":30}`))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
			var resp *http.Response
			if resp, err = http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		done <- err
	}()
	waitPolling(t, s)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled long poll: %v, want context.Canceled", err)
	}
	if !s.await(func() bool { return s.Calls("getUpdates")[0].answered }) {
		t.Fatalf("abandoned long poll never ended; calls:\n%s", describeCalls(s.Calls("")))
	}
	if c := s.Calls("getUpdates")[0]; c.Status != 0 {
		t.Errorf("abandoned long poll recorded with status %d, want 0", c.Status)
	}
	id := s.SendText(owner, "after")
	if got := getUpdates(t, s, map[string]any{}); !slices.Equal(got, []int64{id}) || s.Delivered(id) != 1 {
		t.Errorf("getUpdates after an abandoned poll = %v (delivered %d), want [%d] delivered once", got, s.Delivered(id), id)
	}
}

func TestTapAndAnswerCallbackQuery(t *testing.T) {
	s := New(t, testToken)
	b, updates := startBot(t, s)
	ctx := context.Background()
	s.SendText(owner, "hi")
	receive(t, updates)
	sent, err := b.SendMessage(ctx, &bot.SendMessageParams{
		ChatID: owner, Text: "Run <code>ls</code>?", ParseMode: models.ParseModeHTML,
		ReplyMarkup: models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{
			{Text: "Approve", CallbackData: "ok:7"}, {Text: "Deny", CallbackData: "no:7"},
		}}},
	})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}

	updateID, queryID := s.Tap(owner, owner, int64(sent.ID), "ok:7")
	u := receive(t, updates)
	cq := u.CallbackQuery
	if u.ID != updateID || cq == nil || cq.ID != queryID || cq.Data != "ok:7" || cq.From.ID != owner {
		t.Fatalf("tap update = %+v, want update %d with query %s \"ok:7\" from %d", u, updateID, queryID, owner)
	}
	tapped := cq.Message.Message
	if tapped == nil || tapped.ID != sent.ID || tapped.Text != "Run ls?" || tapped.ReplyMarkup == nil || tapped.ReplyMarkup.InlineKeyboard[0][1].CallbackData != "no:7" || tapped.From.ID != 123456 {
		t.Fatalf("tapped message = %+v, want the bot's message %d with its keyboard", tapped, sent.ID)
	}

	answers := []struct {
		name    string
		params  bot.AnswerCallbackQueryParams
		wantErr string
	}{
		{"text over 200", bot.AnswerCallbackQueryParams{CallbackQueryID: queryID, Text: strings.Repeat("x", 201)}, "MESSAGE_TOO_LONG"},
		{"first answer", bot.AnswerCallbackQueryParams{CallbackQueryID: queryID, Text: strings.Repeat("x", 200), ShowAlert: true}, ""},
		{"second answer", bot.AnswerCallbackQueryParams{CallbackQueryID: queryID}, "Bad Request: query is too old and response timeout expired or query ID is invalid"},
		{"unknown id", bot.AnswerCallbackQueryParams{CallbackQueryID: "12345"}, "Bad Request: query is too old"},
	}
	for _, tt := range answers {
		t.Run(tt.name, func(t *testing.T) {
			ok, err := b.AnswerCallbackQuery(ctx, &tt.params)
			if tt.wantErr == "" {
				if !ok || err != nil {
					t.Errorf("AnswerCallbackQuery(%s) = %v, %v; want true", tt.params.CallbackQueryID, ok, err)
				}
				return
			}
			if !errors.Is(err, bot.ErrorBadRequest) {
				t.Errorf("AnswerCallbackQuery(%s) error = %v, want bot.ErrorBadRequest", tt.params.CallbackQueryID, err)
			}
			wantAPIError(t, "AnswerCallbackQuery", err, tt.wantErr)
		})
	}
	if p := s.WaitCall(t, "answerCallbackQuery", nil).Params; p["show_alert"] != "true" {
		t.Errorf("answerCallbackQuery params = %q, want show_alert=true", p)
	}
}

func TestTapOnMissingMessage(t *testing.T) {
	s := New(t, testToken)
	s.SendText(owner, "hi")
	tests := []struct {
		name       string
		from, chat int64
	}{
		{"forged message id", owner, owner},
		{"stranger on an unknown chat", stranger, 31337},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			updateID, queryID := s.Tap(tt.from, tt.chat, 999, "ok:1")
			status, answer := postJSON(t, s, "getUpdates", map[string]any{"offset": updateID})
			var updates []models.Update
			if err := json.Unmarshal(answer.Result, &updates); status != 200 || err != nil || len(updates) != 1 {
				t.Fatalf("getUpdates = %d %s (%v), want the tap", status, answer.Result, err)
			}
			cq := updates[0].CallbackQuery
			if cq == nil || cq.ID != queryID || cq.From.ID != tt.from {
				t.Fatalf("tap update = %s, want query %s from %d", answer.Result, queryID, tt.from)
			}
			m := cq.Message.Message
			if m == nil || m.ID != 999 || m.Chat.ID != tt.chat || m.Text != "" || m.ReplyMarkup != nil {
				t.Errorf("tapped message = %+v, want a minimal message 999 of chat %d", m, tt.chat)
			}
		})
	}
	if status, _ := postJSON(t, s, "sendMessage", map[string]any{"chat_id": stranger, "text": "who are you"}); status != 200 {
		t.Errorf("sendMessage to a user who tapped = %d, want 200: a tap starts the chat", status)
	}
}
