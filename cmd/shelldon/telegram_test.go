package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/pairing"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/demomodel"
	"shelldon/transports/telegram"
	"shelldon/transports/telegram/telegramtest"
)

const (
	botToken = "123456:AAbbCCddEEffGGhhIIjjKKllMMnnOOppQQ"
	ownerID  = 4242
)

// withTelegram has core run its Telegram transport against api, for the
// owner ownerID.
func withTelegram(api *telegramtest.Server) petOption {
	return func(c *config.Config) {
		c.Telegram.Token, c.Telegram.APIURL, c.Telegram.AllowedUsers = botToken, api.URL(), []int64{ownerID}
		c.Telegram.PollTimeout.Duration, c.Telegram.RetryMax.Duration = 2*time.Second, time.Second
	}
}

func textHas(s string) func(telegramtest.Message) bool {
	return func(m telegramtest.Message) bool { return strings.Contains(m.Text, s) }
}

// tap presses a button of msg and returns the query id.
func tap(api *telegramtest.Server, msg telegramtest.Message, label string) string {
	for _, row := range msg.Keyboard {
		for _, b := range row {
			if strings.Contains(b.Text, label) {
				_, query := api.Tap(ownerID, ownerID, msg.ID, b.CallbackData)
				return query
			}
		}
	}
	return ""
}

// TestTelegramOwnerChatsAndDecides is the owner's life on Telegram with
// a real core: a chat turn, a write approved and one denied with the
// buttons, the spinner stopped before the work, the buttons replaced by
// the outcome, a stale tap ignored, a stranger ignored and counted, and
// the owner's commands.
func TestTelegramOwnerChatsAndDecides(t *testing.T) {
	t.Parallel()
	model := demomodel.New(
		demomodel.Step{Text: "Hello <b>owner</b> & friends"},
		writeCall("w1", "todo.txt", "milk"), demomodel.Step{Text: "Saved your list."},
		writeCall("w2", "diary.txt", "nope"), demomodel.Step{Text: "All right, I won't."},
	)
	api := telegramtest.New(t, botToken)
	p := newPet(t, model, withTelegram(api))
	ws := statedir.Layout{Root: p.cfg.StateDir}.Workspace()

	api.SendText(ownerID, "hi")
	hello := api.WaitMessage(t, ownerID, textHas("Hello"))
	if hello.Text != "Hello <b>owner</b> & friends" {
		t.Errorf("reply shown as %q, want the model's words as written", hello.Text)
	}
	api.WaitCall(t, "sendChatAction", nil)

	// Approve.
	api.SendText(ownerID, "put milk on my list")
	ask := api.WaitMessage(t, ownerID, func(m telegramtest.Message) bool { return len(m.Keyboard) > 0 })
	if !strings.Contains(ask.Text, "write todo.txt:\nmilk") || !strings.Contains(ask.HTML, "<pre>") {
		t.Fatalf("request = %+v, want the exact write in <pre>", ask)
	}
	p.waitTurns(2)
	before := len(api.Calls(""))
	query := tap(api, ask, "Approve")
	api.WaitMessage(t, ownerID, textHas("Saved your list."))
	if b, err := os.ReadFile(filepath.Join(ws, "todo.txt")); err != nil || string(b) != "milk" {
		t.Errorf("todo.txt = %q, %v; want the approved content", b, err)
	}
	answered := api.WaitCall(t, "answerCallbackQuery", func(c telegramtest.Call) bool { return c.Params["callback_query_id"] == query })
	for _, c := range api.Calls("")[before:] {
		if c.Seq > answered.Seq {
			break
		}
		if c.Method == "sendChatAction" || c.Method == "sendMessage" {
			t.Errorf("the resumed turn showed itself (call #%d, %s) before the tap was answered (call #%d)", c.Seq, c.Method, answered.Seq)
		}
	}
	settled := api.WaitMessage(t, ownerID, func(m telegramtest.Message) bool { return m.ID == ask.ID && m.Keyboard == nil })
	if !strings.Contains(settled.Text, "✅ Approved at") || !strings.Contains(settled.HTML, "<pre>") {
		t.Errorf("approved request shows %q, want the outcome and its formatting kept", settled.Text)
	}

	// Deny.
	api.SendText(ownerID, "write a secret")
	ask2 := api.WaitMessage(t, ownerID, func(m telegramtest.Message) bool { return len(m.Keyboard) > 0 && m.ID != ask.ID })
	p.waitTurns(4)
	tap(api, ask2, "Deny")
	api.WaitMessage(t, ownerID, textHas("All right, I won't."))
	if _, err := os.Stat(filepath.Join(ws, "diary.txt")); err == nil {
		t.Error("diary.txt was written although the owner said no")
	}
	api.WaitMessage(t, ownerID, func(m telegramtest.Message) bool {
		return m.ID == ask2.ID && m.Keyboard == nil && strings.Contains(m.Text, "❌ Denied at")
	})

	// A stale tap on the first request does nothing.
	turns := len(p.waitTurns(5))
	stale := tap(api, ask, "Approve")
	api.WaitCall(t, "answerCallbackQuery", func(c telegramtest.Call) bool {
		return c.Params["callback_query_id"] == stale && strings.Contains(c.Params["text"], "settled")
	})

	// A stranger is ignored, and counted.
	api.SendText(9999, "hello? whose bot is this?")
	api.SendText(ownerID, "/status")
	status := api.WaitMessage(t, ownerID, textHas("Up "))
	for _, want := range []string{"Ignored 1 message(s) from 1 stranger(s)", "Last turns:", "Memory:", "Mood:"} {
		if !strings.Contains(status.Text, want) {
			t.Errorf("/status lacks %q:\n%s", want, status.Text)
		}
	}
	api.SendText(ownerID, "/tools")
	if tools := api.WaitMessage(t, ownerID, textHas("Built in:")); !strings.Contains(tools.Text, "run_shell") {
		t.Errorf("/tools = %q", tools.Text)
	}
	api.SendText(ownerID, "/pending")
	api.WaitMessage(t, ownerID, textHas("Nothing is waiting for your answer."))
	for _, m := range api.Messages(9999) {
		t.Errorf("the stranger got %q", m.Text)
	}
	if n := len(p.turns()); n != turns {
		t.Errorf("%d turns after the stale tap, commands and the stranger, want %d", n, turns)
	}
}

// TestTelegramPendingShowsButtonsAgain: a request shown again by /pending
// can be decided from its new message, and both messages are settled.
func TestTelegramPendingShowsButtonsAgain(t *testing.T) {
	t.Parallel()
	model := demomodel.New(writeCall("w1", "later.txt", "eggs"), demomodel.Step{Text: "Saved the eggs."})
	api := telegramtest.New(t, botToken)
	p := newPet(t, model, withTelegram(api))
	api.SendText(ownerID, "eggs, later")
	first := api.WaitMessage(t, ownerID, func(m telegramtest.Message) bool { return len(m.Keyboard) > 0 })
	p.waitTurns(1)
	api.SendText(ownerID, "/pending")
	again := api.WaitMessage(t, ownerID, func(m telegramtest.Message) bool { return len(m.Keyboard) > 0 && m.ID != first.ID })
	api.WaitMessage(t, ownerID, textHas("One request is waiting"))
	tap(api, again, "Approve")
	api.WaitMessage(t, ownerID, textHas("Saved the eggs."))
	for _, id := range []int64{first.ID, again.ID} {
		api.WaitMessage(t, ownerID, func(m telegramtest.Message) bool {
			return m.ID == id && m.Keyboard == nil && strings.Contains(m.Text, "Approved at")
		})
	}
}

// TestTelegramOutageDuringATurn: Telegram goes away for 30 s while a turn
// runs; the turn is not held up, and its reply arrives once Telegram is
// back, followed by the pet's answers to what the owner says next.
func TestTelegramOutageDuringATurn(t *testing.T) {
	t.Parallel()
	model := demomodel.New(demomodel.Step{Text: "answered during the outage", Delay: time.Second}, demomodel.Step{Text: "and after it"})
	api := telegramtest.New(t, botToken)
	p := newPet(t, model, withTelegram(api))
	api.SendText(ownerID, "a question")
	p.waitRequests(1)
	api.SetDown(true)
	back := time.After(30 * time.Second)
	p.waitTurns(1) // the turn ends while Telegram is away
	<-back
	api.SetDown(false)
	api.WaitMessage(t, ownerID, textHas("answered during the outage"))
	api.SendText(ownerID, "still there?")
	api.WaitMessage(t, ownerID, textHas("and after it"))
}

// TestTelegramRestartHandlesEachUpdateOnce: core restarts between two
// messages; each is answered once, and the first is not taken again.
func TestTelegramRestartHandlesEachUpdateOnce(t *testing.T) {
	t.Parallel()
	model := demomodel.New(demomodel.Step{Text: "first answer"}, demomodel.Step{Text: "second answer"})
	api := telegramtest.New(t, botToken)
	p := newPet(t, model, withTelegram(api))
	first := api.SendText(ownerID, "one")
	api.WaitMessage(t, ownerID, textHas("first answer"))
	p.stopCore()
	second := api.SendText(ownerID, "two")
	p.startCore()
	api.WaitMessage(t, ownerID, textHas("second answer"))
	p.waitTurns(2)
	if reqs := p.model.Requests(); len(reqs) != 2 {
		t.Errorf("the model was asked %d times, want twice", len(reqs))
	}
	if a, b := api.Delivered(first), api.Delivered(second); a != 1 || b != 1 {
		t.Errorf("updates delivered %d and %d times, want once each", a, b)
	}
	var answers []string
	for _, m := range api.Messages(ownerID) {
		answers = append(answers, m.Text)
	}
	if strings.Join(answers, "|") != "first answer|second answer" {
		t.Errorf("the owner got %q", answers)
	}
}

// TestOwnerCommands: the commands core answers itself, on any transport,
// without a turn.
func TestOwnerCommands(t *testing.T) {
	t.Parallel()
	p := newPet(t, demomodel.New())
	tests := []struct{ say, want string }{
		{"/help", "/pending — requests waiting for your answer"},
		{"/start", "Hello! I'm shelldon"},
		{"/status@shelldon_bot", "Idle, waiting for a message."},
		{"/status", "Self-driven turns today: 0 of 12."},
		{"/tools", "Put away: none."},
		{"/pending", "Nothing is waiting for your answer."},
		{"/schedule", "Nothing is scheduled."},
		{"/schedule cancel 7", "I could not cancel 7"},
		{"/schedule cancel", "Which one?"},
		{"/restore", "Which tool?"},
		{"/restore ghost", "No quarantined tool is called ghost"},
		{"/frobnicate", "I don't know /frobnicate."},
	}
	for _, tc := range tests {
		p.say(tc.say)
		if r := p.reply(10 * time.Second); !strings.Contains(r.Text, tc.want) {
			t.Errorf("%s answered %q, want it to say %q", tc.say, r.Text, tc.want)
		}
	}
	if n := len(p.turns()); n != 0 {
		t.Errorf("commands started %d turns, want none", n)
	}
	if reqs := p.model.Requests(); len(reqs) != 0 {
		t.Errorf("commands reached the model %d times", len(reqs))
	}
}

// TestTelegramPairsTheOwnerWithAOneTimeCode: a bot with nobody allowed
// waits to be paired. A stranger's /start reads only "not paired", once a
// minute at most; wrong guesses are bounded and spend a code, after which
// the right one pairs no one; the code of a second `shelldon pair` makes
// its first sender the owner, whom the pet then answers, also after a
// restart; the same code from another user pairs no one.
func TestTelegramPairsTheOwnerWithAOneTimeCode(t *testing.T) {
	const stranger, guesser, late = 5151, 6161, 7171
	model := demomodel.New(demomodel.Step{Text: "Hello, owner."}, demomodel.Step{Text: "Hello again."})
	api := telegramtest.New(t, botToken)
	p := newPet(t, model, withTelegram(api), func(c *config.Config) { c.Telegram.AllowedUsers = nil })
	// logged waits until the log holds n lines with each of parts.
	logged := func(n int, parts ...string) {
		t.Helper()
		count := func() int {
			found := 0
			for line := range strings.Lines(p.logs.String()) {
				if !slices.ContainsFunc(parts, func(part string) bool { return !strings.Contains(line, part) }) {
					found++
				}
			}
			return found
		}
		for deadline := time.Now().Add(15 * time.Second); count() < n; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the log holds %d lines with %q within 15 s, want %d", count(), parts, n)
			}
		}
	}
	pair := func() string {
		t.Helper()
		out, _, err := runCLI(t, "pair", "--config", writeConfig(t, p))
		code := regexp.MustCompile(`[0-9A-Z]{4}-[0-9A-Z]{4}`).FindString(out)
		if err != nil || code == "" {
			t.Fatalf("shelldon pair = %q, %v; want a code", out, err)
		}
		return code
	}

	api.SendText(stranger, "/start")
	if m := api.WaitMessage(t, stranger, nil); m.Text != "not paired" {
		t.Fatalf("a stranger's /start was answered %q, want only \"not paired\"", m.Text)
	}

	spent := pair()
	for i := range pairing.MaxGuesses {
		api.SendText(guesser, fmt.Sprintf("AAAA-%04d", i))
	}
	api.SendText(guesser, spent)
	logged(1, "pairing code was spent", "user_id=6161")
	logged(pairing.MaxGuesses+1, "ignored a stranger", "user_id=6161")
	if strings.Contains(p.logs.String(), "paired a new owner") {
		t.Fatal("a code spent by wrong guesses paired its next sender")
	}
	api.WaitMessage(t, guesser, nil)
	if got := api.Messages(guesser); len(got) != 1 || got[0].Text != "not paired" {
		t.Errorf("the guesser read %+v, want one \"not paired\" for all their guesses", got)
	}

	code := pair()
	api.SendText(ownerID, strings.ToLower(code))
	if m := api.WaitMessage(t, ownerID, nil); !strings.Contains(m.Text, "Paired") {
		t.Fatalf("the code's sender read %q, want that they are paired", m.Text)
	}
	api.SendText(ownerID, "hi")
	api.WaitMessage(t, ownerID, textHas("Hello, owner."))
	api.SendText(late, code)
	logged(1, "ignored a stranger", "user_id=7171")
	if got := api.Messages(late); len(got) != 0 {
		t.Errorf("a second sender of the used code read %+v, want nothing: the pet has its owner", got)
	}

	p.stopCore()
	p.startCore()
	api.SendText(ownerID, "still there?")
	api.WaitMessage(t, ownerID, textHas("Hello again."))
	if !strings.Contains(p.logs.String(), "user_id=4242") {
		t.Errorf("the pairing is not in the log with who paired")
	}
}

// TestTelegramShowsWhatATurnIsDoing: with a real core, worker and
// transport, the owner's message gets 👀 once core kept it, and a turn
// whose tool step is followed by a slow model call shows one status
// message in the pet's words ("⏳ reading notes.md…"), deleted once the
// reply has come.
func TestTelegramShowsWhatATurnIsDoing(t *testing.T) {
	t.Parallel()
	model := demomodel.New(
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "r1", Name: "read_file", Args: `{"path":"notes.md"}`}}},
		demomodel.Step{Text: "Your notes say: buy milk.", Delay: 3 * time.Second},
	)
	api := telegramtest.New(t, botToken)
	p := newPet(t, model, withTelegram(api))
	ws := statedir.Layout{Root: p.cfg.StateDir}.Workspace()
	if err := os.WriteFile(filepath.Join(ws, "notes.md"), []byte("buy milk\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	update := api.SendText(ownerID, "what is in my notes?")
	seen := api.WaitCall(t, "setMessageReaction", nil)
	if !strings.Contains(seen.Params["reaction"], "👀") || seen.Params["chat_id"] != strconv.Itoa(ownerID) {
		t.Errorf("reaction = %v, want 👀 in the owner's chat (update %d)", seen.Params, update)
	}
	status := api.WaitMessage(t, ownerID, textHas("⏳ reading notes.md…"))
	api.WaitMessage(t, ownerID, textHas("Your notes say: buy milk."))
	api.WaitCall(t, "deleteMessage", func(c telegramtest.Call) bool { return c.Params["message_id"] == strconv.FormatInt(status.ID, 10) })
	for _, m := range api.Messages(ownerID) {
		if strings.HasPrefix(m.Text, "⏳") {
			t.Errorf("a status message stays after the reply: %q", m.Text)
		}
	}
}

// TestTelegramOversizedUpdateHoldsUpNothing: a Bot API server hands the
// pet a 5 MiB text update. The owner is told it was dropped, and the
// pet answers the next message, where the update once failed to reach
// core every few seconds, forever, ahead of everything after it.
func TestTelegramOversizedUpdateHoldsUpNothing(t *testing.T) {
	t.Parallel()
	api := telegramtest.New(t, botToken)
	newPet(t, demomodel.New(demomodel.Step{Text: "answered after it"}), withTelegram(api))
	api.SendText(ownerID, strings.Repeat("x", 5<<20))
	api.SendText(ownerID, "and now?")
	api.WaitMessage(t, ownerID, textHas("dropped it unread"))
	api.WaitMessage(t, ownerID, textHas("answered after it"))
}

// TestTelegramHundredsOfRequestsLoseNoReply: 300 requests wait for the
// owner on Telegram. /pending shows a few of them with their buttons and
// one message counting them all, and the owner's next message is
// answered; a minute after the start all 300 expire in one check, and the
// owner reads one note for them, and the next message is answered too.
// Once /pending sent 300 requests at once, the hub's queue for the
// transport filled, the transport was dropped as a slow reader, /pending
// was delivered again and again, and the replies routed meanwhile were
// lost; 300 expiring lost most of their 300 notes.
func TestTelegramHundredsOfRequestsLoseNoReply(t *testing.T) {
	t.Parallel()
	const waiting = 300
	model := demomodel.New(demomodel.Step{Text: "answered beside /pending"}, demomodel.Step{Text: "answered after the expiry"})
	api := telegramtest.New(t, botToken)
	p := newPet(t, model, withTelegram(api))
	p.stopCore()
	store, err := state.Open(statedir.Layout{Root: p.cfg.StateDir})
	if err != nil {
		t.Fatal(err)
	}
	chat := strconv.Itoa(ownerID)
	now := time.Now()
	for i := range waiting {
		call := contracts.ToolCall{ID: "c1", Name: "write_file", Args: fmt.Sprintf(`{"path":"f%03d.txt","content":"x"}`, i)}
		if err := store.Approvals().Park(context.Background(), state.PendingApproval{
			Turn: fmt.Sprintf("%016x", i+1), Kind: "call", Call: call, Title: "write_file",
			Summary: fmt.Sprintf("writes 1 byte to f%03d.txt", i), Detail: fmt.Sprintf("f%03d.txt: x", i), Digest: fmt.Sprintf("digest%d", i),
			Messages:  []contracts.Message{{Role: contracts.ChatAssistant, ToolCalls: []contracts.ToolCall{call}}},
			Transport: telegram.TransportName, Chat: chat, Shown: []state.Audience{{Transport: telegram.TransportName, Chat: chat}},
			// Waiting now, and expired by the first check, a minute after
			// the start.
			Created: now, Expires: now.Add(40 * time.Second),
		}); err != nil {
			t.Fatal(err)
		}
	}
	store.Close()
	p.startCore()

	pending := api.SendText(ownerID, "/pending")
	api.SendText(ownerID, "hello there")
	api.WaitMessage(t, ownerID, textHas("answered beside /pending"))
	api.WaitMessage(t, ownerID, textHas("300 requests are waiting"))
	time.Sleep(2 * time.Second) // what else /pending sends
	buttons := 0
	for _, m := range api.Messages(ownerID) {
		if len(m.Keyboard) > 0 {
			buttons++
		}
	}
	if buttons == 0 || buttons > 10 {
		t.Errorf("/pending showed %d requests with their buttons, want a few of the 300", buttons)
	}
	if n := api.Delivered(pending); n > 1 {
		t.Errorf("/pending was delivered %d times", n)
	}

	api.SetWaitLimit(90 * time.Second)
	note := api.WaitMessage(t, ownerID, textHas("Nobody answered"))
	if !strings.Contains(note.Text, "300") {
		t.Errorf("the expiry's note says %q, want it to count the 300 requests", note.Text)
	}
	api.SendText(ownerID, "still there?")
	api.WaitMessage(t, ownerID, textHas("answered after the expiry"))
	time.Sleep(2 * time.Second)
	if n := len(slices.DeleteFunc(api.Messages(ownerID), func(m telegramtest.Message) bool { return !strings.Contains(m.Text, "Nobody answered") })); n != 1 {
		t.Errorf("the owner got %d notes of the expiry, want one", n)
	}
	if strings.Contains(p.logs.String(), "slow reader") {
		t.Error("the hub dropped a slow reader")
	}
}
