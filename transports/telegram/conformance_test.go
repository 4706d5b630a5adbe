package telegram

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"shelldon/contracts"
	authority "shelldon/daemon/approval"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/transports/telegram/telegramtest"
	"shelldon/transports/transporttest"
)

// TestConformance runs the transport suite over the bot, against the
// local Bot API server. The bot keeps its queues in core's store, so it
// promises what it holds across its restart; it deletes a turn's status
// message once the turn has settled.
func TestConformance(t *testing.T) {
	transporttest.Run(t, []transporttest.Impl{
		{Name: "telegram", New: conformingBot, ProgressTakenAway: true, Durable: true},
	})
}

func conformingBot(t *testing.T, core *transporttest.Core) transporttest.Target {
	store, err := state.Open(statedir.Layout{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	o := &botOwner{api: telegramtest.New(t, token), store: store, core: core, buttons: map[int64][]telegramtest.Button{}}
	o.start(t)
	// Telegram lets a bot write only to a user who wrote to it first.
	o.api.SendText(owner, "/start")
	return transporttest.Target{Owner: o, Chat: "42", InputBound: maxUpdateBytes}
}

// coreStatuses reads where requests stand from the suite's core, which
// plays the approval authority.
type coreStatuses struct{ core *transporttest.Core }

func (s coreStatuses) Status(_ context.Context, key string) (authority.Status, error) {
	switch r, ok := s.core.Request(key); {
	case !ok:
		return authority.Status{}, nil
	case r.Open:
		return authority.Status{State: authority.Open, Created: r.Created, Expires: r.Expires}, nil
	default:
		return authority.Status{State: authority.Settled, Outcome: r.Outcome, At: r.At}, nil
	}
}

// botOwner is the owner in their private chat with the bot.
type botOwner struct {
	api   *telegramtest.Server
	store *state.Store
	core  *transporttest.Core
	stop  func()

	mu sync.Mutex
	// buttons are the buttons of each message, by its id, as the owner
	// first saw them: a stale client taps them still.
	buttons map[int64][]telegramtest.Button
}

// start runs a transport over the owner's store until stop or the
// test's end.
func (o *botOwner) start(t *testing.T) {
	t.Helper()
	tr, err := New(Config{
		Token: token, APIURL: o.api.URL(), AllowedIDs: []int64{owner}, Socket: o.core.Socket(), MaxFrame: 4 << 20,
		Store: o.store, Statuses: coreStatuses{o.core}, PollTimeout: 2 * time.Second, Backoff: Backoff{Min: 20 * time.Millisecond, Max: 200 * time.Millisecond},
		Location: time.UTC,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx) }()
	var once sync.Once
	o.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run = %v, want nil after cancel", err)
				}
			case <-time.After(waitLimit):
				t.Error("Run did not return after cancel")
			}
		})
	}
	t.Cleanup(o.stop)
}

func (o *botOwner) Say(t *testing.T, text string) { o.api.SendText(owner, text) }

// Shown is the bot's messages to the owner as they show now, one after
// another. The buttons of a message are remembered as the owner first
// saw them, for a stale tap.
func (o *botOwner) Shown() string {
	var texts []string
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, m := range o.api.Messages(owner) {
		texts = append(texts, m.Text)
		if _, seen := o.buttons[m.ID]; !seen && len(m.Keyboard) > 0 {
			o.buttons[m.ID] = slices.Concat(m.Keyboard...)
		}
	}
	return strings.Join(texts, "\n")
}

// Answer taps the request's button for answer, as the owner saw it on
// the request's message.
func (o *botOwner) Answer(t *testing.T, req contracts.ApprovalRequest, answer transporttest.Answer) {
	t.Helper()
	o.Shown()
	m := o.api.WaitMessage(t, owner, func(m telegramtest.Message) bool { return strings.Contains(m.Text, req.Detail) })
	label := map[transporttest.Answer]string{transporttest.Deny: "❌ Deny", transporttest.Approve: "✅ Approve", transporttest.Always: "🔁 Always for this rule"}[answer]
	o.mu.Lock()
	buttons := o.buttons[m.ID]
	o.mu.Unlock()
	for _, b := range buttons {
		if b.Text == label {
			o.api.Tap(owner, owner, m.ID, b.CallbackData)
			return
		}
	}
	t.Fatalf("the owner never saw a %q button on the message of request %s, only %+v", label, req.Turn, buttons)
}

// Restart stops the transport and starts another over the same store and
// server.
func (o *botOwner) Restart(t *testing.T) {
	o.stop()
	o.start(t)
}
