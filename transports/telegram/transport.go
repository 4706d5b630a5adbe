package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"shelldon/bus"
	"shelldon/clock"
	"shelldon/contracts"
	authority "shelldon/daemon/approval"
	"shelldon/daemon/state"
)

// TransportName is the name the transport joins the bus with, and the
// key of its rows in the state store.
const TransportName = "telegram"

// ErrNoAllowedIDs is returned by [New] when no user may chat: a bot that
// answers everyone would hand the pet to strangers.
var ErrNoAllowedIDs = errors.New("no allowed Telegram user ids and no pairing: run shelldon pair and send the code to the bot, or put your numeric user id (from @userinfobot) in telegram.allowed_users")

// ErrTokenRefused is returned by [Transport.Run] when Telegram says the
// bot token is not valid: retrying would not help.
var ErrTokenRefused = errors.New("the bot token was refused by Telegram; check it with @BotFather")

// telegramAPI is Telegram's own Bot API server.
const telegramAPI = "https://api.telegram.org"

// Defaults for the zero values of [Config].
const (
	defaultPollTimeout = 30 * time.Second
	defaultRetryMin    = time.Second
	defaultRetryMax    = time.Minute
	// An item Telegram keeps failing is given up on after this many
	// failed attempts Telegram answered (some ten minutes with the default
	// backoff), or once it has failed for a day, whichever comes first: by
	// then a reply is stale, and it holds up its chat.
	defaultGiveUpAttempts = 20
	defaultGiveUpAge      = 24 * time.Hour
	// typingEvery renews the typing indicator, which Telegram shows for
	// five seconds.
	typingEvery = 4 * time.Second
	// maxTyping stops the indicator of a turn whose end never came.
	maxTyping = 10 * time.Minute
	// botCallTimeout bounds a call of the Bot API client, as its own
	// default client does; the callers' contexts are mostly shorter.
	botCallTimeout = time.Minute
)

// Connections to the Bot API, which the transport keeps alive between
// turns: against Telegram each new one is a TLS handshake, several ms of
// a Pi Zero's CPU.
const (
	// maxIdleConns is more than a turn's calls at once (the long poll,
	// typing, the reaction, the status message, the reply): with
	// net/http's default of 2 idle a host, one or two connections closed
	// after every turn, and the next turn opened them again.
	maxIdleConns = 8
	// idleConnTimeout keeps a turn's connections for the owner's next
	// message in a conversation; the long poll keeps one busy anyway.
	idleConnTimeout = 5 * time.Minute
)

// Config configures a Telegram transport.
type Config struct {
	Token string
	// APIURL is the Bot API server; empty means Telegram's own.
	APIURL string
	// AllowedIDs are the Telegram user ids that may chat and tap buttons
	// (telegram.allowed_users); with none, and no owner paired, the bot
	// answers strangers only "not paired".
	AllowedIDs []int64
	// Pairing is the file where `shelldon pair` keeps a code's hash
	// (statedir.Layout.Pairing); empty turns pairing off.
	Pairing  string
	Socket   string
	MaxFrame int
	// Store keeps the updates not yet handled, the messages not yet
	// sent and the messages that show requests, across restarts.
	Store *state.Store
	// Statuses says where each request stands: the approval authority's
	// word, which the transport shows and never keeps a copy of.
	Statuses StatusReader
	// PollTimeout is how long one getUpdates waits for news.
	PollTimeout time.Duration
	// Idle, if set, is told each time a long poll ends with no update
	// (its timeout, or a failure). Between the owner's messages the poll
	// is the process's one recurring work, every PollTimeout for months,
	// and what it ran is a chore whose pages the process may give back
	// (core: Core.ChoreDone). A poll that brings updates is not told: the
	// turn they start owns what follows.
	Idle func()
	// Backoff bounds the waits after network errors.
	Backoff Backoff
	// GiveUp bounds how long an item of the outbox is tried; zero values
	// mean the defaults.
	GiveUp GiveUp
	// Clock and Location say when things happen and how times are shown;
	// nil means the real clock and the local time zone.
	Clock    clock.Clock
	Location *time.Location
	// Log receives the transport's notes; nil discards them.
	Log *slog.Logger
	// Transcription and Vision say that a provider turns voice notes
	// into text, and that one takes photos; without them the owner is
	// told which setting is missing.
	Transcription, Vision bool
	// VoiceMaxBytes, PhotoMaxBytes and PhotoMaxSide bound the voice notes
	// and photos taken; zero means the defaults (2 MiB, 1 MiB, 1280 px).
	VoiceMaxBytes, PhotoMaxBytes int64
	PhotoMaxSide                 int
	// React sets 👀 on each of the owner's messages once core has kept
	// it (telegram.react).
	React bool
}

// GiveUp bounds how long an item of the outbox is tried: past either
// bound, an item still failing is dropped, and for a reply the owner is
// told once Telegram takes messages for the chat again.
type GiveUp struct {
	// Attempts counts the failed attempts that Telegram answered; an
	// outage, or a 429 asking for a wait, counts none, so replies ride
	// out an outage shorter than Age.
	Attempts int
	// Age is counted from when the item was queued.
	Age time.Duration
}

// StatusReader says where the request of key stands, as the approval
// authority knows it (authority.Statuses).
type StatusReader interface {
	Status(ctx context.Context, key string) (authority.Status, error)
}

// updateStore keeps the updates taken from Telegram. It is the state
// store; it is an interface so that tests can make storing fail, or stop
// the transport right after it, and see that no update is lost.
type updateStore interface {
	Offset(ctx context.Context, transport string) (int64, error)
	Receive(ctx context.Context, transport string, items []state.InboxItem) error
}

// Transport joins Telegram to core's bus. It runs inside core's process:
// it holds the bot token core holds, and keeps its state in core's store.
type Transport struct {
	cfg     Config
	owners  owners
	pairer  pairer
	store   *state.Queues
	updates updateStore
	clock   clock.Clock
	loc     *time.Location
	backoff Backoff
	giveUp  GiveUp
	log     *slog.Logger
	client  *bus.Client
	bot     *bot.Bot
	// apiURL is the Bot API server's base URL, without a trailing slash.
	apiURL string
	// conns are the connections to it, which the long poll, the Bot API
	// client and the downloads share.
	conns *http.Transport
	// files downloads what the owner sends; transcripts waits for the
	// broker's words of their voice notes.
	files       *http.Client
	transcripts transcripts

	inWake   chan struct{} // an update was stored
	coreBack chan struct{} // the bus connection to core is up again
	passed   passed        // messages core has not yet confirmed kept
	taps     taps          // decisions tapped that core has not yet settled
	out      *outbox
	typing   typing
	// status shows what a turn is doing; reactions tells the owner that
	// their message is safe.
	status    *statusBoard
	reactions *reactions
	// drafts streams a turn's reply into the chat as it is written.
	drafts *draftBoard
}

// New checks cfg and returns a transport; it touches no network.
func New(cfg Config) (*Transport, error) {
	switch {
	case strings.TrimSpace(cfg.Token) == "":
		return nil, errors.New("telegram: empty bot token")
	case len(cfg.AllowedIDs) == 0 && cfg.Pairing == "":
		return nil, fmt.Errorf("telegram: %w", ErrNoAllowedIDs)
	case cfg.Socket == "":
		return nil, errors.New("telegram: no bus socket")
	case cfg.Store == nil:
		return nil, errors.New("telegram: no state store")
	case cfg.Statuses == nil:
		return nil, errors.New("telegram: no reader of the requests' statuses")
	}
	t := &Transport{
		cfg: cfg, owners: owners{configured: cfg.AllowedIDs}, store: cfg.Store.Queues(), updates: cfg.Store.Queues(), clock: cfg.Clock, loc: cfg.Location,
		backoff: cfg.Backoff, giveUp: cfg.GiveUp, log: cfg.Log, apiURL: strings.TrimSuffix(cfg.APIURL, "/"),
		inWake: make(chan struct{}, 1), coreBack: make(chan struct{}, 1),
	}
	if t.clock == nil {
		t.clock = clock.Real{}
	}
	if t.loc == nil {
		t.loc = time.Local
	}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	t.pairer = pairer{file: cfg.Pairing, store: cfg.Store, owners: &t.owners, clock: t.clock, log: t.log}
	if t.cfg.PollTimeout <= 0 {
		t.cfg.PollTimeout = defaultPollTimeout
	}
	if t.backoff.Min <= 0 {
		t.backoff.Min = defaultRetryMin
	}
	if t.backoff.Max < t.backoff.Min {
		t.backoff.Max = max(defaultRetryMax, t.backoff.Min)
	}
	if t.giveUp.Attempts <= 0 {
		t.giveUp.Attempts = defaultGiveUpAttempts
	}
	if t.giveUp.Age <= 0 {
		t.giveUp.Age = defaultGiveUpAge
	}
	if t.apiURL == "" {
		t.apiURL = telegramAPI
	}
	if t.cfg.VoiceMaxBytes <= 0 {
		t.cfg.VoiceMaxBytes = defaultVoiceMaxBytes
	}
	if t.cfg.PhotoMaxBytes <= 0 {
		t.cfg.PhotoMaxBytes = defaultPhotoMaxBytes
	}
	if t.cfg.PhotoMaxSide <= 0 {
		t.cfg.PhotoMaxSide = defaultPhotoMaxSide
	}
	t.out = &outbox{store: t.store, statuses: cfg.Statuses, clock: t.clock, loc: t.loc, log: t.log, backoff: t.backoff, giveUp: t.giveUp,
		wake: make(chan struct{}, 1)}
	t.conns = http.DefaultTransport.(*http.Transport).Clone()
	t.conns.MaxIdleConns, t.conns.MaxIdleConnsPerHost = maxIdleConns, maxIdleConns
	t.conns.IdleConnTimeout = idleConnTimeout
	t.files = t.httpClient(downloadTimeout)
	t.client = &bus.Client{
		Socket: cfg.Socket, MaxFrame: cfg.MaxFrame,
		Hello: contracts.Hello{Role: contracts.RoleTransport, Name: TransportName},
		Logf:  func(format string, args ...any) { t.log.Info(fmt.Sprintf(format, args...)) },
		OnConnect: func(*bus.Conn) {
			// What the last connection passed and core did not confirm
			// goes to the new one.
			t.passed.reset()
			poke(t.inWake)
			select {
			case t.coreBack <- struct{}{}:
			default:
			}
		},
	}
	t.typing = typing{send: t.sendTyping, clock: t.clock, running: map[int64]*context.CancelFunc{}}
	t.status = &statusBoard{t: t, chats: map[int64]*status{}}
	t.drafts = &draftBoard{t: t, chats: map[int64]*chatDraft{}}
	t.reactions = newReactions(cfg.React, t.setSeen, t.log.Info)
	return t, nil
}

// Run serves the owner's chat until ctx is done. It returns early only
// for what retrying cannot mend: a refused token or a hello core refuses.
// Telegram being out of reach is not one: the transport waits, keeps what
// it must send, and carries on when Telegram is back.
func (t *Transport) Run(ctx context.Context) error {
	offset, err := t.updates.Offset(ctx, TransportName)
	if err != nil {
		return fmt.Errorf("telegram: %w", err)
	}
	// The client sends; updates are taken by the transport's own poller,
	// which stores them before Telegram is told they arrived.
	b, err := bot.New(t.cfg.Token,
		bot.WithSkipGetMe(),
		bot.WithServerURL(t.apiURL),
		// The poll timeout given is the library's own long poll's, not used.
		bot.WithHTTPClient(t.cfg.PollTimeout, t.httpClient(botCallTimeout)),
		bot.WithErrorsHandler(func(err error) { t.log.Warn("telegram: Bot API client", "err", err) }),
	)
	if err != nil {
		return fmt.Errorf("telegram: %w", err)
	}
	t.bot, t.out.bot = b, b
	defer t.conns.CloseIdleConnections()
	if err := t.pairer.load(ctx); err != nil {
		t.log.Error("telegram: reading the paired owner", "err", err)
	}
	// A message is kept to be edited as long as the authority remembers
	// what its request came to, and no longer.
	if n, err := t.store.ForgetApprovalMessages(ctx, TransportName, "", t.clock.Now().Add(-state.KeepSettledApprovals)); err != nil {
		t.log.Warn("telegram: forgetting old requests' messages", "err", err)
	} else if n > 0 {
		t.log.Info("telegram: forgot old requests' messages", "count", n)
	}

	t.status.tidy(ctx)

	// The status messages' senders end with ctx; the bus, which starts
	// them, has ended before.
	defer t.status.wg.Wait()
	defer t.drafts.wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer t.typing.stopAll()
	wg.Go(func() { t.reactions.run(ctx) })
	busDone := make(chan error, 1)
	wg.Go(func() {
		busDone <- t.client.Run(ctx, func(_ *bus.Conn, env contracts.Envelope) { t.fromCore(ctx, env) })
	})
	wg.Go(func() { t.out.sendLoop(ctx) })
	if err := t.greet(ctx); err != nil {
		cancel()
		return err
	}
	// Updates are taken from Telegram only once core can be told of them.
	select {
	case <-t.coreBack:
		poke(t.coreBack) // for the inbox loop, if it waits on it
	case err := <-busDone:
		return busError(err)
	case <-ctx.Done():
		return nil
	}
	wg.Go(func() { t.inboxLoop(ctx) })
	wg.Go(func() { t.poll(ctx, offset) })
	select {
	case err = <-busDone:
		return busError(err)
	case <-ctx.Done():
		return nil
	}
}

// httpClient is a client of the Bot API server over the transport's
// connections, whose calls take at most timeout.
func (t *Transport) httpClient(timeout time.Duration) *http.Client {
	return &http.Client{Transport: t.conns, Timeout: timeout}
}

func busError(err error) error {
	if err != nil {
		return fmt.Errorf("telegram: %w", err)
	}
	return nil
}

// greet checks the token with getMe, waiting out network trouble, and
// queues the commands for the owner's menu.
func (t *Transport) greet(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		callCtx, cancel := context.WithTimeout(ctx, sendTimeout)
		me, err := t.bot.GetMe(callCtx)
		cancel()
		switch {
		case err == nil:
			t.log.Info("telegram: connected", "bot", me.Username, "owners", len(t.owners.all()))
			// Registered anew at every start; one still queued from a
			// start before will do.
			if _, queued, err := t.store.NextOutbox(ctx, TransportName, laneCommands); err != nil || !queued {
				t.out.enqueue(ctx, outCommands, outItem{})
			}
			return nil
		case errors.Is(err, bot.ErrorUnauthorized), errors.Is(err, bot.ErrorNotFound):
			// Telegram answers 404 to a token it does not know at all.
			return fmt.Errorf("telegram: %w (%v)", ErrTokenRefused, err)
		case ctx.Err() != nil:
			return nil
		}
		retryIn := t.backoff.delay(attempt)
		t.log.Warn("telegram: Telegram is out of reach; trying again", "in", retryIn.Round(time.Millisecond), "err", err)
		wait(ctx, t.clock, nil, retryIn)
	}
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// fromCore shows what core sends.
func (t *Transport) fromCore(ctx context.Context, env contracts.Envelope) {
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
		if out.Key != "" {
			t.takeReply(ctx, out)
			return
		}
		for _, chat := range t.chats(out.Chat) {
			for _, it := range replyItems(chat, out) {
				t.out.enqueue(ctx, it.kind, it.item)
			}
		}
	case contracts.KindApprovalRequest:
		var req contracts.ApprovalRequest
		if err := env.Decode(&req); err != nil || req.Turn == "" {
			t.log.Warn("telegram: bad approval request from core", "err", err)
			return
		}
		// A key asked again (a resumed turn's next call): the messages
		// of its earlier request are not this one's to settle.
		var asked time.Time
		if st, err := t.cfg.Statuses.Status(ctx, req.Turn); err == nil && st.State == authority.Open {
			asked = st.Created
			if _, err := t.store.ForgetApprovalMessages(ctx, TransportName, req.Turn, st.Created); err != nil {
				t.log.Error("telegram: an earlier request's messages may show this one's outcome", "turn", req.Turn, "err", err)
			}
		}
		shown := renderApproval(req, t.loc, t.clock.Now())
		for _, chat := range t.chats(req.Chat) {
			if shown.File != nil {
				t.out.enqueue(ctx, outDocument, outItem{Chat: chat, FileName: shown.FileName, File: shown.File})
			}
			t.out.enqueue(ctx, outMessage, outItem{Chat: chat, HTML: shown.HTML, Approval: req.Turn, Asked: asked, Always: req.Always != ""})
		}
	case contracts.KindApprovalClosed:
		var c contracts.ApprovalClosed
		if err := env.Decode(&c); err != nil || c.Turn == "" {
			t.log.Warn("telegram: bad settled request from core", "err", err)
			return
		}
		t.taps.done(c.Turn)
		t.out.settle(ctx, c.Turn, c.Outcome, c.At)
	case contracts.KindInboundAck:
		var a contracts.InboundAck
		if err := env.Decode(&a); err != nil {
			t.log.Warn("telegram: bad confirmation from core", "err", err)
			return
		}
		t.confirmed(ctx, a.Ref)
	case contracts.KindTranscript:
		var tr contracts.Transcript
		if err := env.Decode(&tr); err != nil || !t.transcripts.deliver(tr) {
			t.log.Warn("telegram: a transcript nobody waits for", "id", tr.ID, "err", err)
		}
	case contracts.KindReplyDraft:
		var d contracts.Draft
		if err := env.Decode(&d); err != nil || d.Turn == "" {
			t.log.Warn("telegram: bad draft from core", "err", err)
			return
		}
		for _, chat := range t.chats(d.Chat) {
			t.drafts.show(ctx, chat, d)
		}
	case contracts.KindProgress:
		var p contracts.Progress
		if err := env.Decode(&p); err != nil || p.Turn == "" {
			t.log.Warn("telegram: bad progress from core", "err", err)
			return
		}
		for _, chat := range t.chats(p.Chat) {
			t.status.show(ctx, chat, p)
		}
	case contracts.KindActivity:
		var a contracts.Activity
		if err := env.Decode(&a); err != nil {
			return
		}
		for _, chat := range t.chats(a.Chat) {
			t.typing.set(ctx, chat, a.Busy)
		}
	}
}

// chats resolves a contract chat to Telegram chat ids: empty means every
// allowed user's private chat; a chat that is not a number belongs to
// another transport.
func (t *Transport) chats(chat string) []int64 {
	if chat == "" {
		return t.owners.all()
	}
	id, err := strconv.ParseInt(chat, 10, 64)
	if err != nil {
		return nil
	}
	return []int64{id}
}

func (t *Transport) toCore(kind contracts.Kind, body any) error {
	env, err := contracts.NewEnvelope(kind, "", body)
	if err != nil {
		return err
	}
	return t.client.Send(env)
}

// reply queues a plain-text message of the transport's own.
func (t *Transport) reply(ctx context.Context, chat int64, text string) {
	for _, piece := range renderReply(text, maxMessage) {
		t.out.enqueue(ctx, outMessage, outItem{Chat: chat, HTML: piece})
	}
}

func (t *Transport) sendTyping(ctx context.Context, chat int64) {
	ctx, cancel := context.WithTimeout(ctx, typingEvery)
	defer cancel()
	if _, err := t.bot.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: chat, Action: models.ChatActionTyping}); err != nil {
		t.log.Debug("telegram: typing indicator", "err", err)
	}
}

// typing keeps Telegram's "typing…" shown in the chats where a turn runs.
type typing struct {
	send  func(context.Context, int64)
	clock clock.Clock

	mu      sync.Mutex
	running map[int64]*context.CancelFunc
}

// set starts or stops the indicator of chat.
func (ty *typing) set(ctx context.Context, chat int64, busy bool) {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	if stop, ok := ty.running[chat]; ok {
		if busy {
			return
		}
		(*stop)()
		delete(ty.running, chat)
		return
	}
	if !busy {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	entry := &cancel
	ty.running[chat] = entry
	go func() {
		ty.keep(ctx, chat)
		ty.mu.Lock()
		defer ty.mu.Unlock()
		if ty.running[chat] == entry { // not a newer turn's
			cancel()
			delete(ty.running, chat)
		}
	}()
}

// keep renews the indicator until stopped, or for maxTyping at most.
func (ty *typing) keep(ctx context.Context, chat int64) {
	deadline := ty.clock.Now().Add(maxTyping)
	for ctx.Err() == nil && ty.clock.Now().Before(deadline) {
		ty.send(ctx, chat)
		tick := make(chan struct{})
		timer := ty.clock.AfterFunc(typingEvery, func() { close(tick) })
		select {
		case <-ctx.Done():
			timer.Stop()
		case <-tick:
		}
	}
}

func (ty *typing) stopAll() {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	for chat, stop := range ty.running {
		(*stop)()
		delete(ty.running, chat)
	}
}
