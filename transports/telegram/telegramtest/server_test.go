package telegramtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
)

const (
	testToken = "123456:TEST-token"
	owner     = int64(42)
	stranger  = int64(666)
	// guard bounds waits on channels; a failing test stops here instead of
	// hanging. Nothing sleeps for it.
	guard = 5 * time.Second
)

// newBot is the real go-telegram/bot client, pointed at s.
func newBot(t *testing.T, s *Server, opts ...bot.Option) *bot.Bot {
	t.Helper()
	opts = append([]bot.Option{bot.WithServerURL(s.URL()), bot.WithSkipGetMe(), bot.WithErrorsHandler(func(error) {})}, opts...)
	b, err := bot.New(testToken, opts...)
	if err != nil {
		t.Fatalf("bot.New: %v", err)
	}
	return b
}

// startBot runs a client's long-poll loop until the test ends and hands
// over every update it receives, in order.
func startBot(t *testing.T, s *Server) (*bot.Bot, <-chan *models.Update) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	updates := make(chan *models.Update)
	b := newBot(t, s, bot.WithNotAsyncHandlers(), bot.WithDefaultHandler(func(ctx context.Context, _ *bot.Bot, u *models.Update) {
		select {
		case updates <- u:
		case <-ctx.Done():
		}
	}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return b, updates
}

func receive(t *testing.T, updates <-chan *models.Update) *models.Update {
	t.Helper()
	select {
	case u := <-updates:
		return u
	case <-time.After(guard):
		t.Fatalf("no update within %v", guard)
		return nil
	}
}

// apiAnswer is a Bot API answer as the tests read it.
type apiAnswer struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// post sends a raw request, bypassing the client, to test encodings and
// bodies go-telegram/bot never sends.
func post(t *testing.T, s *Server, path, contentType, body string) (int, apiAnswer) {
	t.Helper()
	resp, err := http.Post(s.URL()+path, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: read: %v", path, err)
	}
	var answer apiAnswer
	if err := json.Unmarshal(raw, &answer); err != nil {
		t.Fatalf("POST %s: answer %q is not JSON: %v", path, raw, err)
	}
	if answer.OK != (resp.StatusCode == http.StatusOK) || !answer.OK && answer.ErrorCode != resp.StatusCode {
		t.Fatalf("POST %s: status %d with answer %s", path, resp.StatusCode, raw)
	}
	return resp.StatusCode, answer
}

func postJSON(t *testing.T, s *Server, method string, params map[string]any) (int, apiAnswer) {
	t.Helper()
	body, err := json.Marshal(params)
	if err != nil {
		t.Fatalf("encode %v: %v", params, err)
	}
	return post(t, s, "/bot"+testToken+"/"+method, "application/json", string(body))
}

// wantAPIError checks that err is the Bot API error description want.
func wantAPIError(t *testing.T, call string, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%s error = %v, want one containing %q", call, err, want)
	}
}

func TestRouting(t *testing.T) {
	s := New(t, testToken)
	tests := []struct {
		name, path string
		wantStatus int
		wantDesc   string
	}{
		{"known method", "/bot" + testToken + "/getMe", 200, ""},
		{"method names ignore case", "/bot" + testToken + "/GETME", 200, ""},
		{"wrong token", "/bot123456:wrong/getMe", 401, "Unauthorized"},
		{"unknown method", "/bot" + testToken + "/sendPigeon", 404, "Not Found"},
		{"no method", "/bot" + testToken + "/", 404, "Not Found"},
		{"not a bot path", "/getMe", 404, "Not Found"},
		{"nested path", "/bot" + testToken + "/test/getMe", 404, "Not Found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, answer := post(t, s, tt.path, "", "")
			if status != tt.wantStatus || answer.Description != tt.wantDesc {
				t.Errorf("POST %s = %d %q, want %d %q", tt.path, status, answer.Description, tt.wantStatus, tt.wantDesc)
			}
		})
	}
}

func TestClientErrors(t *testing.T) {
	s := New(t, testToken)
	if _, err := bot.New("999:wrong", bot.WithServerURL(s.URL())); !errors.Is(err, bot.ErrorUnauthorized) {
		t.Errorf("bot.New with a wrong token: error = %v, want bot.ErrorUnauthorized", err)
	}
	b, err := bot.New(testToken, bot.WithServerURL(s.URL()))
	if err != nil {
		t.Fatalf("bot.New: %v", err)
	}
	me, err := b.GetMe(context.Background())
	if err != nil || me.ID != 123456 || !me.IsBot || me.Username != botUsername {
		t.Errorf("GetMe = %+v, %v; want the bot user 123456 @%s", me, err, botUsername)
	}
	if _, err := b.GetMyName(context.Background(), &bot.GetMyNameParams{}); !errors.Is(err, bot.ErrorNotFound) {
		t.Errorf("GetMyName (not implemented) error = %v, want bot.ErrorNotFound", err)
	}
	if ok, err := b.DeleteWebhook(context.Background(), nil); !ok || err != nil {
		t.Errorf("DeleteWebhook = %v, %v; want true", ok, err)
	}
}

func TestBotIDWithoutNumericToken(t *testing.T) {
	s := New(t, "not-numeric")
	status, answer := post(t, s, "/botnot-numeric/getMe", "", "")
	var me user
	if err := json.Unmarshal(answer.Result, &me); err != nil || status != 200 || me.ID != defaultBotID {
		t.Errorf("getMe = %d %s, want the bot user %d", status, answer.Result, defaultBotID)
	}
}

func TestBodyEncodings(t *testing.T) {
	s := New(t, testToken)
	s.SendText(owner, "hi")
	markup := `{"inline_keyboard":[[{"text":"Yes","callback_data":"y"}]]}`
	tests := []struct {
		name, contentType, body string
	}{
		{"json with object markup", "application/json", `{"chat_id":42,"text":"<b>json</b>","parse_mode":"HTML","reply_markup":` + markup + `}`},
		{"json with string markup", "application/json", `{"chat_id":"42","text":"<b>json</b>","parse_mode":"HTML","reply_markup":` + jsonString(markup) + `}`},
		{"url-encoded", "application/x-www-form-urlencoded", url.Values{"chat_id": {"42"}, "text": {"<b>json</b>"}, "parse_mode": {"HTML"}, "reply_markup": {markup}}.Encode()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, answer := post(t, s, "/bot"+testToken+"/sendMessage", tt.contentType, tt.body)
			if status != 200 {
				t.Fatalf("sendMessage(%s) = %d %q, want 200", tt.body, status, answer.Description)
			}
			var m models.Message
			if err := json.Unmarshal(answer.Result, &m); err != nil {
				t.Fatalf("sendMessage result %s: %v", answer.Result, err)
			}
			if m.Text != "json" || m.ReplyMarkup == nil || m.ReplyMarkup.InlineKeyboard[0][0].CallbackData != "y" {
				t.Errorf("sendMessage(%s) = %s, want text \"json\" and the keyboard", tt.body, answer.Result)
			}
			calls := s.Calls("sendMessage")
			if got := calls[len(calls)-1].Params; got["chat_id"] != "42" || got["reply_markup"] != markup {
				t.Errorf("recorded params = %q, want chat_id 42 and the markup as JSON text", got)
			}
		})
	}
}

func jsonString(s string) string {
	quoted, _ := json.Marshal(s) // a string always encodes
	return string(quoted)
}

func TestMalformedRequestsAreRefused(t *testing.T) {
	s := New(t, testToken)
	s.SendText(owner, "hi")
	if status, _ := postJSON(t, s, "sendMessage", map[string]any{"chat_id": owner, "text": "message 2"}); status != 200 {
		t.Fatalf("sendMessage = %d, want 200", status)
	}
	path := func(method string) string { return "/bot" + testToken + "/" + method }
	tests := []struct {
		name, method, contentType, body, wantDesc string
	}{
		{"broken JSON", "sendMessage", "application/json", `{"chat_id":`, "Bad Request: can't parse request"},
		{"JSON array", "sendMessage", "application/json", `[1,2]`, "Bad Request: can't parse request"},
		{"multipart without boundary", "sendMessage", "multipart/form-data", "--x\r\n", "Bad Request: can't parse request"},
		{"broken multipart", "sendMessage", "multipart/form-data; boundary=x", "--x\r\nbroken", "Bad Request: can't parse request"},
		{"unknown content type", "sendMessage", "text/plain", "hello", "Bad Request: can't parse request"},
		{"bad content type", "sendMessage", "/////", "hello", "Bad Request: can't parse request"},
		{"bad offset", "getUpdates", "application/json", `{"offset":"abc"}`, "Bad Request: invalid offset specified"},
		{"bad limit", "getUpdates", "application/json", `{"limit":1.5}`, "Bad Request: invalid limit specified"},
		{"bad timeout", "getUpdates", "application/json", `{"timeout":[]}`, "Bad Request: invalid timeout specified"},
		{"no chat", "sendMessage", "application/json", `{"text":"x"}`, "Bad Request: chat_id is empty"},
		{"username chat", "sendMessage", "application/json", `{"chat_id":"@someone","text":"x"}`, "Bad Request: chat not found"},
		{"markup not an object", "sendMessage", "application/json", `{"chat_id":42,"text":"x","reply_markup":"[1,2]"}`, "Bad Request: can't parse reply keyboard markup JSON object"},
		{"markup of nothing known", "sendMessage", "application/json", `{"chat_id":42,"text":"x","reply_markup":{"a":1}}`, "Bad Request: can't parse reply keyboard markup JSON object"},
		{"keyboard not an array", "sendMessage", "application/json", `{"chat_id":42,"text":"x","reply_markup":{"inline_keyboard":5}}`, "must be an Array of Arrays"},
		{"null button", "sendMessage", "application/json", `{"chat_id":42,"text":"x","reply_markup":{"inline_keyboard":[[null]]}}`, `Field "text" must be of type String`},
		{"numeric button text", "sendMessage", "application/json", `{"chat_id":42,"text":"x","reply_markup":{"inline_keyboard":[[{"text":5,"callback_data":"y"}]]}}`, `Field "text" must be of type String`},
		{"numeric callback data", "sendMessage", "application/json", `{"chat_id":42,"text":"x","reply_markup":{"inline_keyboard":[[{"text":"a","callback_data":5}]]}}`, "BUTTON_DATA_INVALID"},
		{"empty url", "sendMessage", "application/json", `{"chat_id":42,"text":"x","reply_markup":{"inline_keyboard":[[{"text":"a","url":""}]]}}`, "BUTTON_URL_INVALID"},
		{"edit with a reply keyboard", "editMessageReplyMarkup", "application/json", `{"chat_id":42,"message_id":2,"reply_markup":{"remove_keyboard":true}}`, "Bad Request: inline keyboard expected"},
		{"edit without message id", "editMessageText", "application/json", `{"chat_id":42,"text":"x"}`, "Bad Request: message identifier is not specified"},
		{"edit of an inline message", "editMessageText", "application/json", `{"inline_message_id":"abc","text":"x"}`, "Bad Request: MESSAGE_ID_INVALID"},
		{"commands missing", "setMyCommands", "application/json", `{}`, `Bad Request: parameter "commands" is required`},
		{"commands not JSON", "setMyCommands", "application/x-www-form-urlencoded", `commands=nope`, "Bad Request: can't parse commands JSON object"},
		{"command null", "setMyCommands", "application/json", `{"commands":[{"command":null,"description":"d"}]}`, "Bad Request: BOT_COMMAND_INVALID"},
		{"document by unknown file id", "sendDocument", "application/json", `{"chat_id":42,"document":"BQACAgIAAxkD"}`, "Bad Request: wrong file identifier/HTTP URL specified"},
		{"no document", "sendDocument", "application/json", `{"chat_id":42}`, "Bad Request: there is no document in the request"},
		{"unknown callback query", "answerCallbackQuery", "application/json", `{"callback_query_id":"123"}`, "Bad Request: query is too old and response timeout expired or query ID is invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, answer := post(t, s, path(tt.method), tt.contentType, tt.body)
			if status != http.StatusBadRequest || !strings.Contains(answer.Description, tt.wantDesc) {
				t.Errorf("%s(%s) = %d %q, want 400 %q", tt.method, tt.body, status, answer.Description, tt.wantDesc)
			}
		})
	}
	s.SendText(owner, "still up")
	if status, _ := postJSON(t, s, "sendMessage", map[string]any{"chat_id": owner, "text": "ok"}); status != 200 {
		t.Errorf("sendMessage after the malformed requests = %d, want 200", status)
	}
}

func TestRateLimit(t *testing.T) {
	s := New(t, testToken)
	s.SendText(owner, "hi")
	b := newBot(t, s)
	ctx := context.Background()
	s.RateLimit(2, 7)

	if status, answer := postJSON(t, s, "getUpdates", map[string]any{}); status != 200 {
		t.Errorf("getUpdates while rate limited = %d %q, want 200: getUpdates is exempt", status, answer.Description)
	}
	for i := range 2 {
		_, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: owner, Text: "hello"})
		var tooMany *bot.TooManyRequestsError
		if !errors.As(err, &tooMany) || tooMany.RetryAfter != 7 {
			t.Fatalf("SendMessage #%d while rate limited: error = %v, want *bot.TooManyRequestsError with RetryAfter 7", i+1, err)
		}
	}
	if _, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: owner, Text: "hello"}); err != nil {
		t.Fatalf("SendMessage after the rate limit: %v", err)
	}
	calls := s.Calls("sendMessage")
	if len(calls) != 3 || calls[0].Status != 429 || calls[0].Error != "Too Many Requests: retry after 7" || calls[2].Status != 200 {
		t.Errorf("sendMessage calls = %+v, want two 429s then a 200", calls)
	}
	if got := len(s.Messages(owner)); got != 1 {
		t.Errorf("Messages(owner) holds %d messages, want 1: a 429 must not send", got)
	}
}

func TestFail(t *testing.T) {
	s := New(t, testToken)
	s.SendText(owner, "hi")
	s.SendText(stranger, "hi too")
	b := newBot(t, s)
	ctx := context.Background()
	s.Fail(Fault{Method: "sendMessage", Chat: owner, Status: http.StatusInternalServerError})
	s.Fail(Fault{Method: "setMyCommands", Status: http.StatusNotFound})
	s.Fail(Fault{Method: "sendChatAction", Status: http.StatusBadRequest, Description: "Bad Request: method not found"})
	s.Fail(Fault{Method: "sendDocument", Chat: stranger, Status: http.StatusTooManyRequests, Description: "Too Many Requests: retry after 9", RetryAfter: 9})

	if _, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: owner, Text: "lost"}); err == nil || !strings.Contains(err.Error(), "500 Internal Server Error") {
		t.Errorf("SendMessage to the failing chat: error = %v, want the 500 answered", err)
	}
	if _, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: stranger, Text: "through"}); err != nil {
		t.Errorf("SendMessage to another chat: %v, want it sent", err)
	}
	if _, err := b.SetMyCommands(ctx, &bot.SetMyCommandsParams{Commands: []models.BotCommand{{Command: "help", Description: "help"}}}); !errors.Is(err, bot.ErrorNotFound) {
		t.Errorf("SetMyCommands: error = %v, want bot.ErrorNotFound", err)
	}
	if _, err := b.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: stranger, Action: models.ChatActionTyping}); !errors.Is(err, bot.ErrorBadRequest) || !strings.Contains(err.Error(), "method not found") {
		t.Errorf("SendChatAction: error = %v, want the description given", err)
	}
	_, err := b.SendDocument(ctx, &bot.SendDocumentParams{ChatID: stranger, Document: &models.InputFileUpload{Filename: "a.txt", Data: strings.NewReader("a")}})
	var tooMany *bot.TooManyRequestsError
	if !errors.As(err, &tooMany) || tooMany.RetryAfter != 9 {
		t.Errorf("SendDocument: error = %v, want *bot.TooManyRequestsError with RetryAfter 9", err)
	}
	if got := s.Messages(owner); len(got) != 0 {
		t.Errorf("Messages(owner) = %+v, want none: a failed call must not send", got)
	}
	if len(s.Commands()) != 0 {
		t.Errorf("Commands() = %+v, want none set", s.Commands())
	}

	s.Heal("sendMessage", owner)
	if _, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: owner, Text: "healed"}); err != nil {
		t.Errorf("SendMessage after Heal: %v", err)
	}
	calls := s.Calls("sendMessage")
	if len(calls) != 3 || calls[0].Status != 500 || calls[0].Error != "Internal Server Error" || calls[1].Status != 200 || calls[2].Status != 200 {
		t.Errorf("sendMessage calls = %+v, want a 500 and two 200s", calls)
	}
}

func TestSetDown(t *testing.T) {
	s := New(t, testToken)
	s.SendText(owner, "hi")
	b := newBot(t, s)
	ctx := context.Background()

	s.SetDown(true)
	_, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: owner, Text: "hello"})
	var transportErr *url.Error
	if !errors.As(err, &transportErr) {
		t.Fatalf("SendMessage while down: error = %v, want a transport error (*url.Error)", err)
	}
	if calls := s.Calls("sendMessage"); len(calls) != 1 || calls[0].Status != 0 {
		t.Errorf("sendMessage calls while down = %+v, want one with status 0", calls)
	}
	s.SetDown(false)
	if _, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: owner, Text: "hello"}); err != nil {
		t.Fatalf("SendMessage after SetDown(false): %v", err)
	}
	if got := s.Messages(owner); len(got) != 1 || got[0].Text != "hello" {
		t.Errorf("Messages(owner) = %+v, want only the message sent while up", got)
	}
}

func TestSetDownDropsWaitingLongPoll(t *testing.T) {
	s := New(t, testToken)
	polled := make(chan error, 1)
	go func() {
		resp, err := http.Post(s.URL()+"/bot"+testToken+"/getUpdates", "application/json", strings.NewReader(`{"timeout":30}`))
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("answered %s", resp.Status)
		}
		polled <- err
	}()
	waitPolling(t, s)
	s.SetDown(true)
	select {
	case err := <-polled:
		var transportErr *url.Error
		if !errors.As(err, &transportErr) {
			t.Errorf("long poll when the server went down: %v, want a transport error", err)
		}
	case <-time.After(guard):
		t.Fatalf("long poll still waiting %v after SetDown(true)", guard)
	}
}

// waitPolling waits until a getUpdates call is waiting for updates.
func waitPolling(t *testing.T, s *Server) {
	t.Helper()
	if !s.await(func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.polling > 0
	}) {
		t.Fatalf("no getUpdates call in flight; calls:\n%s", describeCalls(s.Calls("")))
	}
}

func TestCallsRecordArrivalOrder(t *testing.T) {
	s := New(t, testToken)
	s.SendText(owner, "hi")
	b := newBot(t, s)
	ctx := context.Background()
	postJSON(t, s, "getUpdates", map[string]any{"offset": 0})
	if _, err := b.SendMessage(ctx, &bot.SendMessageParams{
		ChatID: owner, Text: "<b>x</b>", ParseMode: models.ParseModeHTML,
		ReplyMarkup: models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{{Text: "A", CallbackData: "a"}}}},
	}); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	b.SendMessage(ctx, &bot.SendMessageParams{ChatID: owner, Text: ""}) // refused, still recorded
	b.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: owner, Action: models.ChatActionTyping})

	all := s.Calls("")
	wantMethods := []string{"getUpdates", "sendMessage", "sendMessage", "sendChatAction"}
	if len(all) != len(wantMethods) {
		t.Fatalf("Calls(\"\") = %+v, want %v", all, wantMethods)
	}
	for i, c := range all {
		if c.Seq != i+1 || c.Method != wantMethods[i] || c.At.IsZero() {
			t.Errorf("call %d = #%d %s at %v, want #%d %s", i, c.Seq, c.Method, c.At, i+1, wantMethods[i])
		}
	}
	sent := s.Calls("sendMessage")
	if p := sent[0].Params; p["chat_id"] != "42" || p["text"] != "<b>x</b>" || p["parse_mode"] != "HTML" || !strings.Contains(p["reply_markup"], `"callback_data":"a"`) {
		t.Errorf("sendMessage params = %q, want chat_id, text, parse_mode and the markup JSON", p)
	}
	if sent[1].Status != 400 || sent[1].Error != "Bad Request: message text is empty" {
		t.Errorf("empty sendMessage recorded as %d %q, want 400 \"Bad Request: message text is empty\"", sent[1].Status, sent[1].Error)
	}
	got := s.WaitCall(t, "sendMessage", func(c Call) bool { return c.Status == 400 || c.Params["text"] == "<b>x</b>" })
	if got.Seq != 2 {
		t.Errorf("WaitCall found #%d, want #2: the first successful match", got.Seq)
	}
}

// TestConnectionsCountsAccepted: calls over a kept-alive connection add
// none; a client that closes each connection adds one a call.
func TestConnectionsCountsAccepted(t *testing.T) {
	tests := []struct {
		name       string
		keepAlives bool
		want       int
	}{
		{"kept alive", true, 1},
		{"closed after each call", false, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(t, testToken)
			conns := &http.Transport{DisableKeepAlives: !tt.keepAlives}
			defer conns.CloseIdleConnections()
			b := newBot(t, s, bot.WithHTTPClient(time.Minute, &http.Client{Transport: conns, Timeout: guard}))
			for range 3 {
				if _, err := b.GetMe(context.Background()); err != nil {
					t.Fatalf("GetMe: %v", err)
				}
			}
			if got := s.Connections(); got != tt.want {
				t.Errorf("Connections() after 3 calls = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestSetLatencyHoldsAnswersBack(t *testing.T) {
	s := New(t, testToken)
	const latency = 50 * time.Millisecond
	s.SetLatency(latency)
	start := time.Now()
	if _, err := newBot(t, s).GetMe(context.Background()); err != nil {
		t.Fatalf("GetMe: %v", err)
	}
	if took := time.Since(start); took < latency {
		t.Errorf("GetMe with SetLatency(%v) took %v, want at least %v", latency, took, latency)
	}
}

// fatalRecorder stands in for a test to catch a wait giving up.
type fatalRecorder struct {
	testing.TB
	message string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.message = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// failed runs wait as a test would and returns what it failed with.
func failed(wait func(testing.TB)) string {
	recorder := &fatalRecorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait(recorder)
	}()
	<-done
	return recorder.message
}

func TestWaitsGiveUp(t *testing.T) {
	s := New(t, testToken)
	s.waitTimeout = 20 * time.Millisecond
	s.SendText(owner, "hi")
	postJSON(t, s, "sendMessage", map[string]any{"chat_id": owner, "text": "hello"})

	msg := failed(func(tb testing.TB) {
		s.WaitCall(tb, "sendMessage", func(c Call) bool { return c.Params["text"] == "bye" })
	})
	if !strings.Contains(msg, `no successful "sendMessage" call matched`) || !strings.Contains(msg, "#1 sendMessage status=200") {
		t.Errorf("WaitCall for a call never made failed with %q, want the calls seen listed", msg)
	}
	msg = failed(func(tb testing.TB) { s.WaitMessage(tb, owner, func(m Message) bool { return m.Text == "bye" }) })
	if !strings.Contains(msg, "no message to chat 42 matched") || !strings.Contains(msg, `"hello"`) {
		t.Errorf("WaitMessage for a message never sent failed with %q, want the messages seen listed", msg)
	}
}

func TestWaitsWakeOnChange(t *testing.T) {
	s := New(t, testToken)
	s.SendText(owner, "hi")
	b := newBot(t, s)
	go b.SendMessage(context.Background(), &bot.SendMessageParams{ChatID: owner, Text: "later"})
	if got := s.WaitMessage(t, owner, func(m Message) bool { return m.Text == "later" }); got.ID != 2 || got.Chat != owner {
		t.Errorf("WaitMessage = %+v, want message 2 of chat %d", got, owner)
	}
	if got := s.WaitCall(t, "sendMessage", nil); got.Params["text"] != "later" {
		t.Errorf("WaitCall(sendMessage) = %+v, want the call sending \"later\"", got)
	}
}
