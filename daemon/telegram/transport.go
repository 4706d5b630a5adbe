package telegram

import (
	"context"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"shelldon/bus"
	"shelldon/contracts"
)

// TransportName is the name the transport joins the bus with.
const TransportName = "telegram"

// ErrNoAllowedIDs is returned by [New] when no user may chat: a bot that
// answers everyone would hand the pet to strangers.
var ErrNoAllowedIDs = errors.New("no allowed Telegram user ids; message @userinfobot on Telegram to learn your numeric user id, then add it to the allowed list")

// Replies the transport gives on its own.
const (
	textOnlyReply    = "I can only read text for now."
	unreachableReply = "I can't reach my core right now; try again in a moment."
)

// maxRetryAfter caps how long a 429 answer may hold a send.
const maxRetryAfter = 30 * time.Second

// Config configures a Telegram transport.
type Config struct {
	Token string
	// APIURL is the Bot API server; empty means Telegram's own.
	APIURL string
	// AllowedIDs are the Telegram user ids that may chat and tap buttons.
	AllowedIDs []int64
	Socket     string
	MaxFrame   int
	// Offsets keeps the last handled update id across restarts.
	Offsets OffsetStore
	// Log receives the transport's notes; nil discards them.
	Log *slog.Logger
}

// Transport joins Telegram to core's bus.
type Transport struct {
	cfg     Config
	log     *slog.Logger
	client  *bus.Client
	bot     *bot.Bot
	ignored atomic.Int64
}

// New checks cfg and returns a transport; it touches no network.
func New(cfg Config) (*Transport, error) {
	switch {
	case strings.TrimSpace(cfg.Token) == "":
		return nil, errors.New("telegram: empty bot token")
	case len(cfg.AllowedIDs) == 0:
		return nil, fmt.Errorf("telegram: %w", ErrNoAllowedIDs)
	case cfg.Socket == "":
		return nil, errors.New("telegram: no bus socket")
	case cfg.Offsets == nil:
		return nil, errors.New("telegram: no offset store")
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Transport{cfg: cfg, log: log}
	t.client = &bus.Client{
		Socket: cfg.Socket, MaxFrame: cfg.MaxFrame,
		Hello: contracts.Hello{Role: contracts.RoleTransport, Name: TransportName},
		Logf:  func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) },
	}
	return t, nil
}

// Ignored counts the updates dropped because their sender is not allowed.
func (t *Transport) Ignored() int64 { return t.ignored.Load() }

// Run polls Telegram and serves the bus until ctx is done. It fails at
// once if the saved offset cannot be read, the bot token is refused, or
// core refuses the transport.
func (t *Transport) Run(ctx context.Context) error {
	offset, err := t.cfg.Offsets.Load()
	if err != nil {
		return fmt.Errorf("telegram: %w", err)
	}
	opts := []bot.Option{
		bot.WithDefaultHandler(t.handleUpdate),
		// Updates are handled one at a time, in order, so the saved
		// offset never passes an update still being handled.
		bot.WithNotAsyncHandlers(),
		bot.WithInitialOffset(offset),
		bot.WithErrorsHandler(func(err error) { t.log.Warn("telegram api", "err", err) }),
	}
	if t.cfg.APIURL != "" {
		opts = append(opts, bot.WithServerURL(t.cfg.APIURL))
	}
	b, err := bot.New(t.cfg.Token, opts...)
	if err != nil {
		return fmt.Errorf("telegram: start bot: %w", err)
	}
	t.bot = b

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	busDone := make(chan error, 1)
	joined := make(chan struct{})
	var once sync.Once
	t.client.OnConnect = func(*bus.Conn) { once.Do(func() { close(joined) }) }
	go func() {
		busDone <- t.client.Run(ctx, func(_ *bus.Conn, env contracts.Envelope) { t.handleEnvelope(ctx, env) })
	}()
	// Updates are taken from Telegram only once core can be told of
	// them: an update handled before that would be answered "try again"
	// and, its offset saved, never seen by core.
	select {
	case <-joined:
	case err := <-busDone:
		if err != nil {
			return fmt.Errorf("telegram: %w", err)
		}
		return nil
	case <-ctx.Done():
		return nil
	}
	pollDone := make(chan struct{})
	go func() {
		b.Start(ctx)
		close(pollDone)
	}()
	select {
	case err = <-busDone:
		cancel()
		<-pollDone
	case <-pollDone:
		err = <-busDone
	}
	if err != nil {
		return fmt.Errorf("telegram: %w", err)
	}
	return nil
}

func (t *Transport) allowed(id int64) bool { return slices.Contains(t.cfg.AllowedIDs, id) }

func (t *Transport) ignore(what string, from int64) {
	t.ignored.Add(1)
	t.log.Warn("telegram: ignored a stranger", "what", what, "user_id", from)
}

// handleUpdate handles one update, then records it as handled.
func (t *Transport) handleUpdate(ctx context.Context, _ *bot.Bot, upd *models.Update) {
	switch {
	case upd.Message != nil:
		t.handleMessage(ctx, upd.Message)
	case upd.CallbackQuery != nil:
		t.handleCallback(ctx, upd.CallbackQuery)
	}
	if err := t.cfg.Offsets.Save(upd.ID); err != nil {
		t.log.Error("telegram: update may be handled again after a restart", "update", upd.ID, "err", err)
	}
}

func (t *Transport) handleMessage(ctx context.Context, msg *models.Message) {
	if msg.From == nil || !t.allowed(msg.From.ID) {
		var from int64
		if msg.From != nil {
			from = msg.From.ID
		}
		t.ignore("message", from)
		return
	}
	if msg.Text == "" {
		t.sendText(ctx, msg.Chat.ID, textOnlyReply)
		return
	}
	chat := strconv.FormatInt(msg.Chat.ID, 10)
	if err := t.sendBus(contracts.KindInbound, contracts.Inbound{Chat: chat, Text: msg.Text}); err != nil {
		t.log.Warn("telegram: message not delivered to core", "err", err)
		t.sendText(ctx, msg.Chat.ID, unreachableReply)
	}
}

func (t *Transport) handleCallback(ctx context.Context, cq *models.CallbackQuery) {
	if !t.allowed(cq.From.ID) {
		t.ignore("button tap", cq.From.ID)
		return
	}
	// Answered before anything else, so the owner's spinner stops even
	// if core is slow or gone.
	if _, err := t.call(ctx, func() (any, error) {
		return t.bot.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: cq.ID})
	}); err != nil {
		t.log.Warn("telegram: answer callback", "err", err)
	}
	turn, approve, ok := parseCallback(cq.Data)
	if !ok {
		t.log.Warn("telegram: tap with unreadable data", "data", cq.Data)
		return
	}
	msg := cq.Message.Message
	chatID := cq.From.ID
	if msg != nil {
		chatID = msg.Chat.ID
	}
	chat := strconv.FormatInt(chatID, 10)
	if err := t.sendBus(contracts.KindDecision, contracts.Decision{Turn: turn, Approve: approve, Chat: chat}); err != nil {
		t.log.Warn("telegram: decision not delivered to core", "turn", turn, "err", err)
		t.sendText(ctx, chatID, unreachableReply)
		return // the buttons stay, so the owner can tap again
	}
	if msg == nil {
		return
	}
	outcome := deniedMark
	if approve {
		outcome = approvedMark
	}
	// The edit drops the keyboard (none is given), so a second tap has
	// nothing to press.
	if _, err := t.call(ctx, func() (any, error) {
		return t.bot.EditMessageText(ctx, &bot.EditMessageTextParams{
			ChatID: msg.Chat.ID, MessageID: msg.ID, ParseMode: models.ParseModeHTML,
			Text: html.EscapeString(truncate(msg.Text, maxMessage-width(outcome)-2)) + "\n\n" + outcome,
		})
	}); err != nil {
		t.log.Warn("telegram: edit decided approval", "turn", turn, "err", err)
	}
}

// handleEnvelope shows what core sends.
func (t *Transport) handleEnvelope(ctx context.Context, env contracts.Envelope) {
	if env.To != "" && env.To != TransportName {
		return
	}
	switch env.Kind {
	case contracts.KindOutbound:
		var out contracts.Outbound
		if err := env.Decode(&out); err != nil {
			t.log.Warn("telegram: bad reply from core", "err", err)
			return
		}
		for _, id := range t.chats(out.Chat) {
			for _, piece := range splitText(out.Text, maxMessage) {
				if strings.TrimSpace(piece) != "" {
					t.sendHTML(ctx, id, html.EscapeString(piece), nil)
				}
			}
		}
	case contracts.KindApprovalRequest:
		var req contracts.ApprovalRequest
		if err := env.Decode(&req); err != nil {
			t.log.Warn("telegram: bad approval request from core", "err", err)
			return
		}
		for _, id := range t.chats(req.Chat) {
			t.sendHTML(ctx, id, approvalText(req), approvalKeyboard(req.Turn))
		}
	}
}

// chats resolves a contract chat to Telegram chat ids: empty means every
// allowed user's private chat; a chat that is not a number belongs to
// another transport.
func (t *Transport) chats(chat string) []int64 {
	if chat == "" {
		return t.cfg.AllowedIDs
	}
	id, err := strconv.ParseInt(chat, 10, 64)
	if err != nil {
		return nil
	}
	return []int64{id}
}

func (t *Transport) sendBus(kind contracts.Kind, body any) error {
	env, err := contracts.NewEnvelope(kind, "", body)
	if err != nil {
		return err
	}
	return t.client.Send(env)
}

func (t *Transport) sendText(ctx context.Context, chat int64, text string) {
	t.sendHTML(ctx, chat, html.EscapeString(text), nil)
}

func (t *Transport) sendHTML(ctx context.Context, chat int64, text string, markup models.ReplyMarkup) {
	params := &bot.SendMessageParams{ChatID: chat, Text: text, ParseMode: models.ParseModeHTML}
	if markup != nil {
		params.ReplyMarkup = markup
	}
	if _, err := t.call(ctx, func() (any, error) { return t.bot.SendMessage(ctx, params) }); err != nil {
		t.log.Warn("telegram: send message", "chat", chat, "err", err)
	}
}

// call runs one API call, once more after the wait Telegram asks for when
// it answers 429.
func (t *Transport) call(ctx context.Context, do func() (any, error)) (any, error) {
	res, err := do()
	var tooMany *bot.TooManyRequestsError
	if !errors.As(err, &tooMany) {
		return res, err
	}
	wait := min(time.Duration(tooMany.RetryAfter)*time.Second, maxRetryAfter)
	select {
	case <-ctx.Done():
		return nil, err
	case <-time.After(wait):
	}
	return do()
}
