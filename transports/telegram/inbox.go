package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/go-telegram/bot"

	"shelldon/bus"
	"shelldon/contracts"
	authority "shelldon/daemon/approval"
	"shelldon/daemon/state"
)

// Replies the transport gives on its own.
const (
	textOnlyReply  = "I can read text, voice notes and photos, but not that kind of message."
	notPassedReply = "I could not pass that on to my core; tap again in a moment."
	// oversizedReply names the update's size (MiB) and the bound (KiB).
	oversizedReply = "Telegram handed me an update of %.1f MiB, past the %d KiB I take of one, so I dropped it unread. If it was a message of yours, send it in smaller pieces."
	// tooLongReply names the message's size (KiB).
	tooLongReply = "Your message of %d KiB is too long to pass on to my core (bus.max_frame), so I dropped it. Send it in smaller pieces."
)

// Answers to a tap, shown by Telegram as a short notice.
const (
	tapApproving  = "Approved — on it."
	tapDenying    = "Denied."
	tapAnswered   = "You already answered that one."
	tapUnknown    = "I don't know that request. /pending shows what waits for you."
	tapNotOurs    = "That button is not one of mine."
	tapTrouble    = "Something went wrong on my side; tap again in a moment."
	tapSettledFmt = "That request is settled: %s."
)

// allowedUpdates are the kinds of update asked of Telegram.
var allowedUpdates = []string{"message", "callback_query"}

// poll takes updates from Telegram until ctx is done, from offset, the
// highest update id stored. The rule that keeps an update from being lost
// to a crash: getUpdates with an offset tells Telegram to forget every
// update below it, so the offset moves past a batch only once the batch
// is stored, together with its highest id, in one transaction. A batch
// that could not be stored is asked for again, and Telegram keeps it;
// after a restart the stored id says where to go on, so what was stored
// is not taken again.
//
// The offset is sent only to confirm, in a call that does not wait; the
// long poll asks without one, for whatever Telegram was not told of: after
// a week without updates Telegram picks the next id at random, and a poll
// waiting with an offset past it would make Telegram forget the owner's
// next message unseen.
func (t *Transport) poll(ctx context.Context, offset int64) {
	client := t.httpClient(t.cfg.PollTimeout + sendTimeout)
	confirm := true // an earlier transport may have stored a batch and died before telling
	for fails := 0; ctx.Err() == nil; {
		var from int64
		if confirm {
			from = offset + 1
		}
		waited := !confirm
		items, err := t.getUpdates(ctx, client, from, waited)
		if err == nil {
			confirm = false // told, if there was anything to tell
		}
		if err == nil && len(items) > 0 {
			if err = t.updates.Receive(ctx, TransportName, items); err != nil {
				err = fmt.Errorf("store updates before confirming them: %w", err)
			} else {
				confirm = true
			}
		}
		if ctx.Err() != nil {
			return
		}
		// A long poll that brought nothing was a chore. The call that
		// confirms a batch comes back at once as its turn starts, which
		// owns what follows.
		if waited && len(items) == 0 && t.cfg.Idle != nil {
			t.cfg.Idle()
		}
		switch {
		case err != nil:
			fails++
			_, retryIn := classify(err)
			if retryIn == 0 {
				retryIn = t.backoff.delay(fails)
			}
			t.log.Warn("telegram: taking updates failed; Telegram keeps them until they are stored", "in", retryIn.Round(time.Millisecond), "err", err)
			wait(ctx, t.clock, nil, retryIn)
			continue
		}
		fails = 0
		if len(items) > 0 {
			// The batch's own highest id, not the highest ever: once ids
			// started again lower, a confirmation past the old ones would
			// make Telegram forget every update that came in meanwhile.
			offset = 0
			for _, it := range items {
				offset = max(offset, it.ID)
			}
			poke(t.inWake)
		}
	}
}

// getUpdates asks Telegram for the updates from offset on (0: from the
// first it was not told of), waiting up to the poll timeout for one to
// come when wait is set.
func (t *Transport) getUpdates(ctx context.Context, client *http.Client, offset int64, wait bool) ([]state.InboxItem, error) {
	timeout := 0
	if wait {
		timeout = max(1, int(t.cfg.PollTimeout/time.Second))
	}
	params, err := json.Marshal(struct {
		Offset         int64    `json:"offset,omitempty"` // none: from the first Telegram was not told of
		Timeout        int      `json:"timeout"`
		AllowedUpdates []string `json:"allowed_updates"`
	}{offset, timeout, allowedUpdates})
	if err != nil {
		return nil, fmt.Errorf("getUpdates: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.apiURL+"/bot"+t.cfg.Token+"/getUpdates", bytes.NewReader(params))
	if err != nil {
		return nil, fmt.Errorf("getUpdates: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		// The error would name the URL, and with it the token.
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		return nil, fmt.Errorf("getUpdates: %w", err)
	}
	defer resp.Body.Close()
	answer, err := readUpdatesAnswer(resp.Body)
	switch {
	case errors.Is(err, errNotAnswer):
		return nil, fmt.Errorf("getUpdates: HTTP %d and not the Bot API's answer: %w", resp.StatusCode, err)
	case err != nil:
		return nil, fmt.Errorf("getUpdates: read the answer: %w", err)
	}
	switch {
	case answer.ErrorCode == http.StatusTooManyRequests:
		return nil, &bot.TooManyRequestsError{Message: "getUpdates: " + answer.Description, RetryAfter: answer.Parameters.RetryAfter}
	case !answer.OK:
		return nil, fmt.Errorf("getUpdates: %d %s", answer.ErrorCode, answer.Description)
	}
	return answer.items, nil
}

// inboxLoop handles the stored updates in order, each once, until ctx is
// done. An update stays stored until it was handled; one that could not
// reach core stays, and is tried again once core is back.
func (t *Transport) inboxLoop(ctx context.Context) {
	for ctx.Err() == nil {
		// Past the ones passed to core and not yet confirmed, which stay
		// stored but are not handed over again on this connection.
		t.passed.reading()
		items, err := t.store.Unhandled(ctx, TransportName, inboxBatch+t.passed.count())
		if err != nil {
			if ctx.Err() == nil {
				t.log.Error("telegram: reading the inbox", "err", err)
			}
			wait(ctx, t.clock, t.inWake, t.backoff.Max)
			continue
		}
		handledAny := false
	items:
		for _, it := range items {
			if t.passed.has(it.ID) {
				continue
			}
			handledAny = true
			switch t.handleUpdate(ctx, it) {
			case updateDone:
				t.handled(ctx, it.ID)
			case updatePassed:
				// Core confirms it kept (fromCore), and then it goes.
			case updateNotPassed:
				wait(ctx, t.clock, t.coreBack, t.backoff.Max)
				break items
			}
		}
		if !handledAny {
			wait(ctx, t.clock, t.inWake, 0)
		}
	}
}

// inboxBatch is how many updates the inbox reads at a time.
const inboxBatch = 32

// updateFate is what became of an update the inbox handled.
type updateFate int

const (
	updateDone      updateFate = iota // it needed nothing more of core
	updatePassed                      // core has it, and confirms it once kept
	updateNotPassed                   // core could not be told; try again
)

// passed are the owner's messages handed to core that core has not yet
// confirmed kept. They stay stored, and are not handed over again while
// the bus connection they went by lasts; a new connection (core
// restarted, say) gets them all again, and core recognises those it kept
// already by their update id.
//
// settled are those core confirmed since the inbox last read the store:
// that read may still list one (it came before the confirmation marked it
// handled), and it must not be handed over a second time.
type passed struct {
	mu sync.Mutex
	// ids are the passed updates, with the owner's message each holds
	// (for the reaction once core kept it).
	ids     map[int64]ownerMessage
	settled map[int64]bool
}

// ownerMessage names one message of the owner's in Telegram.
type ownerMessage struct {
	chat int64
	id   int
}

func (p *passed) add(id int64, msg ownerMessage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ids == nil {
		p.ids = map[int64]ownerMessage{}
	}
	p.ids[id] = msg
}

// drop forgets id, which could not be handed over after all.
func (p *passed) drop(id int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.ids, id)
}

// settle moves id from the passed to the settled, once the store has it
// handled, and says which message of the owner's it held; ok is false
// for an update not passed on this connection.
func (p *passed) settle(id int64) (msg ownerMessage, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if msg, ok = p.ids[id]; !ok {
		return ownerMessage{}, false
	}
	delete(p.ids, id)
	if p.settled == nil {
		p.settled = map[int64]bool{}
	}
	p.settled[id] = true
	return msg, true
}

// has reports whether id must not be handed over: passed, or settled
// since the last read.
func (p *passed) has(id int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, passed := p.ids[id]
	return passed || p.settled[id]
}

func (p *passed) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ids)
}

// reading is called just before the inbox reads the store: what was
// settled before now is marked handled there, and will not be listed.
func (p *passed) reading() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.settled)
}

// reset forgets them all, for a new connection to hand them over again.
func (p *passed) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.ids)
	clear(p.settled)
}

// confirmed takes core's word that it kept the message of update ref:
// the inbox may forget it.
func (t *Transport) confirmed(ctx context.Context, ref string) {
	id, err := strconv.ParseInt(ref, 10, 64)
	if err != nil {
		t.log.Warn("telegram: core confirmed a message that is not an update of ours", "ref", ref)
		return
	}
	t.handled(ctx, id)
	if msg, ok := t.passed.settle(id); ok {
		t.reactions.seen(msg)
	}
}

// handled lets the inbox forget an update, so that it is never handled
// again. It is the one place that decides when an update may go: once
// it needed nothing of core, or core confirmed it kept the message in its
// own state (so a core that dies just after it was written to the bus
// gets it again from here).
func (t *Transport) handled(ctx context.Context, id int64) {
	// Recorded even when the pet is stopping: the update has been
	// handled, and must not be handled again after the restart.
	if err := t.store.Handled(context.WithoutCancel(ctx), TransportName, id); err != nil {
		t.log.Error("telegram: an update may be handled again after a restart", "update", id, "err", err)
	}
}

// handleUpdate handles one update.
func (t *Transport) handleUpdate(ctx context.Context, it state.InboxItem) updateFate {
	if bytes.Contains(it.Body, []byte(oversizedKey)) {
		var stand struct {
			Oversized *oversized `json:"shelldon_oversized"`
		}
		if json.Unmarshal(it.Body, &stand) == nil && stand.Oversized != nil {
			t.refuseOversized(ctx, it.ID, *stand.Oversized)
			return updateDone
		}
	}
	upd, err := readUpdate(it.Body)
	if err != nil {
		t.log.Error("telegram: an unreadable update; skipped", "update", it.ID, "err", err)
		return updateDone
	}
	switch {
	case upd.Message != nil:
		return t.handleMessage(ctx, it.ID, upd.Message)
	case upd.CallbackQuery != nil:
		t.handleTap(ctx, upd.CallbackQuery)
	}
	return updateDone
}

func (t *Transport) allowed(id int64) bool { return t.owners.allowed(id) }

// ignore counts and logs an update from someone who may not talk to the pet.
func (t *Transport) ignore(ctx context.Context, what string, from *user) {
	var id int64
	var name string
	if from != nil {
		id, name = from.ID, from.Username
	}
	t.log.Warn("telegram: ignored a stranger", "what", what, "user_id", id, "username", name)
	if err := t.store.CountStranger(ctx, TransportName, strconv.FormatInt(id, 10), t.clock.Now()); err != nil {
		t.log.Error("telegram: counting a stranger", "err", err)
	}
}

// handleMessage passes the owner's message of update id to core, which
// confirms it by the update's id once kept.
func (t *Transport) handleMessage(ctx context.Context, id int64, msg *message) updateFate {
	if msg.From == nil || !t.allowed(msg.From.ID) {
		paired, reply := t.pairer.take(ctx, msg.From, msg.Text)
		if reply != "" {
			t.reply(ctx, msg.Chat.ID, reply)
		}
		if !paired {
			t.ignore(ctx, "message", msg.From)
		}
		return updateDone
	}
	switch {
	case msg.Voice != nil || msg.Audio != nil:
		return t.hear(ctx, id, msg)
	case len(msg.Photo) > 0:
		return t.see(ctx, id, msg)
	case msg.Text == "":
		t.reply(ctx, msg.Chat.ID, textOnlyReply)
		return updateDone
	}
	return t.pass(ctx, id, msg, contracts.Inbound{Chat: strconv.FormatInt(msg.Chat.ID, 10), Text: msg.Text})
}

// pass hands the owner's message msg, of update id, to core as in; core
// confirms it by the update's id once kept.
func (t *Transport) pass(ctx context.Context, id int64, msg *message, in contracts.Inbound) updateFate {
	in.Ref = strconv.FormatInt(id, 10)
	// Counted as passed before it is sent: core's confirmation may come
	// back before the send returns.
	t.passed.add(id, ownerMessage{chat: msg.Chat.ID, id: msg.ID})
	err := t.toCore(contracts.KindInbound, in)
	switch {
	case errors.Is(err, bus.ErrFrameTooLarge):
		// It would never pass: refused, not tried again.
		t.passed.drop(id)
		t.log.Warn("telegram: a message too long for a bus frame; refused", "update", id, "err", err)
		t.reply(ctx, msg.Chat.ID, fmt.Sprintf(tooLongReply, len(in.Text)>>10))
		return updateDone
	case err != nil:
		t.passed.drop(id)
		t.log.Warn("telegram: core is out of reach; the message waits", "err", err)
		return updateNotPassed
	}
	return updatePassed
}

// refuseOversized tells the owner of an update refused for its size, if
// it says whose it was; a stranger's is counted as a stranger's.
func (t *Transport) refuseOversized(ctx context.Context, id int64, o oversized) {
	t.log.Warn("telegram: an update past the bound of one; refused unread", "update", id, "bytes", o.Bytes, "bound", maxUpdateBytes,
		"from", o.From, "chat", o.Chat)
	switch {
	case o.From == 0 || o.Chat == 0:
	case !t.allowed(o.From):
		t.ignore(ctx, "oversized update", &user{ID: o.From})
	default:
		t.reply(ctx, o.Chat, fmt.Sprintf(oversizedReply, float64(o.Bytes)/(1<<20), maxUpdateBytes>>10))
	}
}

// handleTap takes a tap on an approval button. The tap is answered before
// anything else happens, so the owner's spinner stops at once, with what
// the approval authority says of the request: only a tap on a request it
// still waits on becomes a decision for core. The authority takes a
// decision once, so a second tap, or a tap on an expired or unknown
// request, never executes; the taps in flight only spare the owner a
// second "on it" for the same request.
func (t *Transport) handleTap(ctx context.Context, cq *callbackQuery) {
	if !t.allowed(cq.From.ID) {
		t.ignore(ctx, "button tap", &cq.From)
		return
	}
	var chat int64
	var messageID int
	if m := cq.Message; m != nil {
		chat, messageID = m.Chat.ID, m.ID
	}
	turn, approve, always, ok := parseCallback(cq.Data)
	if !ok {
		t.answerTap(ctx, cq.ID, tapNotOurs)
		return
	}
	status, err := t.cfg.Statuses.Status(ctx, turn)
	switch {
	case err != nil:
		t.answerTap(ctx, cq.ID, tapTrouble)
		t.log.Error("telegram: reading where a tapped request stands", "turn", turn, "err", err)
		return
	case status.State == authority.Unknown:
		t.answerTap(ctx, cq.ID, tapUnknown)
		if messageID != 0 {
			t.out.enqueue(ctx, outUnbutton, outItem{Chat: chat, MessageID: messageID})
		}
		return
	case status.State == authority.Settled:
		t.answerTap(ctx, cq.ID, fmt.Sprintf(tapSettledFmt, status.Outcome))
		t.out.settle(ctx, turn, status.Outcome, status.At)
		return
	case !t.taps.begin(turn, t.clock.Now()):
		t.answerTap(ctx, cq.ID, tapAnswered)
		return
	}
	answer := tapDenying
	if approve {
		answer = tapApproving
	}
	t.answerTap(ctx, cq.ID, answer)
	if err := t.toCore(contracts.KindDecision, contracts.Decision{Turn: turn, Approve: approve, Always: always, Chat: strconv.FormatInt(chat, 10)}); err != nil {
		t.log.Warn("telegram: decision not delivered to core", "turn", turn, "err", err)
		// So that the same buttons work on the next tap.
		t.taps.done(turn)
		t.reply(ctx, chat, notPassedReply)
	}
}

// Bounds of the taps in flight: a decision core holds for a running turn
// stays in flight until the turn ends, minutes at most.
const (
	maxTapsInFlight = 64
	tapInFlight     = 15 * time.Minute
)

// taps are the requests whose decision went to core and that core has
// not yet settled: a second tap meanwhile is answered "already answered"
// instead of sending a second decision, which the authority would refuse
// anyway. It lives in memory, bounded: after a restart, or past its
// bounds, a tap asks the authority again.
type taps struct {
	mu   sync.Mutex
	sent map[string]time.Time // request key → when its decision went
}

// begin notes a decision on key going to core at now; false when one is
// in flight already.
func (tp *taps) begin(key string, now time.Time) bool {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	for k, at := range tp.sent {
		if now.Sub(at) >= tapInFlight {
			delete(tp.sent, k)
		}
	}
	if _, ok := tp.sent[key]; ok {
		return false
	}
	if len(tp.sent) >= maxTapsInFlight {
		oldest := ""
		for k, at := range tp.sent {
			if oldest == "" || at.Before(tp.sent[oldest]) {
				oldest = k
			}
		}
		delete(tp.sent, oldest)
	}
	if tp.sent == nil {
		tp.sent = map[string]time.Time{}
	}
	tp.sent[key] = now
	return true
}

// done forgets the decision on key in flight: core settled the request,
// or never heard of the decision.
func (tp *taps) done(key string) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	delete(tp.sent, key)
}

// tapTimeout bounds the answer to a tap: Telegram stops waiting for it
// after about 15 s anyway.
const tapTimeout = 10 * time.Second

// answerTap stops the spinner of a tap, with a short notice. It is not
// queued: a late answer is worthless.
func (t *Transport) answerTap(ctx context.Context, id, text string) {
	ctx, cancel := context.WithTimeout(ctx, tapTimeout)
	defer cancel()
	if _, err := t.bot.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: id, Text: text}); err != nil {
		t.log.Warn("telegram: answering a tap", "err", err)
	}
}
