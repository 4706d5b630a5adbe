package transporttest

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/hub"
	"shelldon/daemon/hub/hubtest"
)

// waitLimit bounds every wait, so that a broken transport fails its test
// instead of hanging it.
const waitLimit = 20 * time.Second

// Core plays core for a transport under test: a real hub on a real
// socket, whose core inbox the suite reads. It keeps every envelope the
// transport sent core, in order, across its restarts; confirms the
// owner's messages kept, as core does, unless told not to; and knows
// where each request it asked stands, as the approval authority does.
type Core struct {
	socket string

	mu      sync.Mutex
	hub     *hub.Hub
	stop    func()
	got     []contracts.Envelope
	changed chan struct{} // closed and replaced when got grows or a transport joins
	joins   int           // transport connections welcomed so far
	// requests are where the requests asked stand, by key.
	requests map[string]Request

	// unconfirmed, when set, leaves the owner's messages unconfirmed, as
	// a core that stops before keeping them.
	unconfirmed atomic.Bool
}

// Request is where a request core asked stands: open until Expires, or
// settled with Outcome at At. A transport that shows the approval
// authority's word for a request (not a copy of its own) reads it here.
type Request struct {
	Open             bool
	Created, Expires time.Time
	Outcome          string
	At               time.Time
}

// newCore serves a hub on a fresh socket until the test's end.
func newCore(t *testing.T) *Core {
	c := &Core{socket: hubtest.SocketPath(t), changed: make(chan struct{}), requests: map[string]Request{}}
	c.start(t)
	return c
}

// Socket is the bus socket a transport joins.
func (c *Core) Socket() string { return c.socket }

// Request says where the request of key stands; ok is false for a key
// core never asked about.
func (c *Core) Request(key string) (r Request, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok = c.requests[key]
	return r, ok
}

// start serves the hub on the core's socket, and reads its inbox until it
// stops.
func (c *Core) start(t *testing.T) {
	t.Helper()
	inbox := make(chan contracts.Envelope, 64)
	h, _, stop := hubtest.Serve(t, c.socket, hub.Config{
		Core: inbox,
		OnJoin: func(p *hub.Peer) {
			if p.Hello.Role == contracts.RoleTransport {
				c.record(func() { c.joins++ })
			}
		},
	})
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case env := <-inbox:
				c.take(t, h, env)
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	c.mu.Lock()
	c.hub = h
	c.stop = func() {
		once.Do(func() {
			stop()
			close(done)
			<-stopped
		})
	}
	c.mu.Unlock()
	t.Cleanup(c.stop)
}

// take keeps what the transport sent, and confirms an owner's message as
// core does once it has made it durable.
func (c *Core) take(t *testing.T, h *hub.Hub, env contracts.Envelope) {
	var in contracts.Inbound
	if env.Kind == contracts.KindInbound && env.Decode(&in) == nil && in.Ref != "" && !c.unconfirmed.Load() {
		ack, err := contracts.NewEnvelope(contracts.KindInboundAck, "", contracts.InboundAck{Ref: in.Ref, Chat: in.Chat})
		if err == nil {
			err = h.Route(ack)
		}
		if err != nil {
			// Stopping: the message goes again to the next core.
			t.Logf("core could not confirm message %s: %v", in.Ref, err)
		}
	}
	c.record(func() { c.got = append(c.got, env) })
}

// record changes what the core knows, and wakes its waits.
func (c *Core) record(change func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	change()
	close(c.changed)
	c.changed = make(chan struct{})
}

// Stop stops the core, as core going away for a restart.
func (c *Core) Stop() {
	c.mu.Lock()
	stop := c.stop
	c.mu.Unlock()
	stop()
}

// Start serves the core again on its socket, after Stop, and waits for
// the transport to join it.
func (c *Core) Start(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	joins := c.joins
	c.mu.Unlock()
	c.start(t)
	c.waitJoins(t, joins+1)
}

// Restart stops the core and starts it again.
func (c *Core) Restart(t *testing.T) {
	t.Helper()
	c.Stop()
	c.Start(t)
}

// waitJoins waits until transports have joined n times in all.
func (c *Core) waitJoins(t *testing.T, n int) {
	t.Helper()
	c.wait(t, fmt.Sprintf("a transport to join core (join %d)", n), func() bool { return c.joins >= n })
}

// wait waits until ok, called with c.mu held, holds.
func (c *Core) wait(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		c.mu.Lock()
		done, changed := ok(), c.changed
		c.mu.Unlock()
		if done {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("waited %v for %s; core got:\n%s", waitLimit, what, c.describe())
		}
	}
}

// describe lists what core got, for a failing test's message.
func (c *Core) describe() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.got) == 0 {
		return "\t(nothing)"
	}
	var b strings.Builder
	for i, env := range c.got {
		fmt.Fprintf(&b, "\t%d %s %s\n", i, env.Kind, shorten(string(env.Body)))
	}
	return b.String()
}

// route sends core's envelope of kind to the transports.
func (c *Core) route(t *testing.T, kind contracts.Kind, body any) {
	t.Helper()
	env, err := contracts.NewEnvelope(kind, "", body)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	h := c.hub
	c.mu.Unlock()
	if err := h.Route(env); err != nil {
		t.Fatalf("core could not route %s: %v", kind, err)
	}
}

// ask shows the owner a request, as core does once it has parked it.
func (c *Core) ask(t *testing.T, req contracts.ApprovalRequest) {
	t.Helper()
	c.record(func() { c.requests[req.Turn] = Request{Open: true, Created: time.Now(), Expires: req.Expires} })
	c.route(t, contracts.KindApprovalRequest, req)
}

// settle settles the request of key with outcome, and tells the
// transports, as core does.
func (c *Core) settle(t *testing.T, key, outcome string) {
	t.Helper()
	at := time.Now()
	c.record(func() { c.requests[key] = Request{Outcome: outcome, At: at} })
	c.route(t, contracts.KindApprovalClosed, contracts.ApprovalClosed{Turn: key, Outcome: outcome, At: at})
}

// received is one envelope core got, at its place among them all.
type received struct {
	at  int
	env contracts.Envelope
}

// next waits for the first envelope at or after from that match accepts.
func (c *Core) next(t *testing.T, what string, from int, match func(contracts.Envelope) bool) received {
	t.Helper()
	var found received
	c.wait(t, what, func() bool {
		for i := from; i < len(c.got); i++ {
			if match(c.got[i]) {
				found = received{at: i, env: c.got[i]}
				return true
			}
		}
		return false
	})
	return found
}

// all returns what core got from from on that match accepts.
func (c *Core) all(from int, match func(contracts.Envelope) bool) []received {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []received
	for i := from; i < len(c.got); i++ {
		if match(c.got[i]) {
			out = append(out, received{at: i, env: c.got[i]})
		}
	}
	return out
}

// count is how many envelopes core has got so far: the from of a wait
// for what comes next.
func (c *Core) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

// message matches an owner's message of exactly text.
func message(text string) func(contracts.Envelope) bool {
	return func(env contracts.Envelope) bool {
		var in contracts.Inbound
		return env.Kind == contracts.KindInbound && env.Decode(&in) == nil && in.Text == text
	}
}

// decisionOn matches a decision on the request of key.
func decisionOn(key string) func(contracts.Envelope) bool {
	return func(env contracts.Envelope) bool {
		var d contracts.Decision
		return env.Kind == contracts.KindDecision && env.Decode(&d) == nil && d.Turn == key
	}
}

// replyHeld matches a transport's word that it holds the reply key.
func replyHeld(key string) func(contracts.Envelope) bool {
	return func(env contracts.Envelope) bool {
		var a contracts.OutboundAck
		return env.Kind == contracts.KindOutboundAck && env.Decode(&a) == nil && a.Key == key
	}
}

// shorten cuts a long text for a test's message.
func shorten(s string) string {
	if len(s) <= 120 {
		return s
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:120], len(s))
}
