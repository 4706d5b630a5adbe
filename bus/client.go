package bus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
)

// ErrRefused is returned by [Dial] when core refuses the hello; the error
// carries core's reason.
var ErrRefused = errors.New("refused by core")

// ErrNotConnected is returned by [Client.Send] while the client is between
// connections.
var ErrNotConnected = errors.New("not connected to core")

// Conn is one accepted connection to core's bus. Send is safe for
// concurrent use; Recv must be called from one goroutine.
type Conn struct {
	nc        net.Conn
	maxFrame  int
	wmu       sync.Mutex
	done      chan struct{}
	closeOnce sync.Once
}

// Dial connects to the bus at socket, says hello and waits for core's
// welcome. A refusal returns an error wrapping [ErrRefused].
func Dial(ctx context.Context, socket string, hello contracts.Hello, maxFrame int) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, fmt.Errorf("dial bus %s: %w", socket, err)
	}
	c := &Conn{nc: nc, maxFrame: maxFrame, done: make(chan struct{})}
	// The deadline below only bounds a silent core; a cancel must also
	// end the handshake at once.
	abandon := context.AfterFunc(ctx, func() { nc.Close() })
	defer abandon()
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	} else {
		nc.SetDeadline(time.Now().Add(10 * time.Second))
	}
	env, err := contracts.NewEnvelope(contracts.KindHello, hello.Turn, hello)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("hello to bus %s: %w", socket, err)
	}
	env.From = hello.Role
	// Core refuses a caller past its bounds of connections before it
	// reads a hello, and may have closed before this one was written: a
	// failed write still reads the refusal that may be waiting.
	helloErr := WriteFrame(nc, env, contracts.MaxHelloFrame)
	if errors.Is(helloErr, ErrFrameTooLarge) {
		nc.Close()
		return nil, fmt.Errorf("hello to bus %s: %w", socket, helloErr)
	}
	reply, err := c.Recv()
	var w contracts.Welcome
	switch {
	case err == nil && reply.Kind == contracts.KindWelcome && reply.Decode(&w) == nil && !w.OK:
		nc.Close()
		return nil, fmt.Errorf("join bus as %s: %w: %s", hello.Role, ErrRefused, w.Reason)
	case helloErr != nil:
		nc.Close()
		return nil, fmt.Errorf("hello to bus %s: %w", socket, helloErr)
	case err != nil:
		nc.Close()
		return nil, fmt.Errorf("welcome from bus %s: %w", socket, err)
	case reply.Kind != contracts.KindWelcome || !w.OK:
		nc.Close()
		return nil, fmt.Errorf("welcome from bus %s: got %s frame", socket, reply.Kind)
	}
	if !abandon() {
		// ctx ended just as the welcome arrived; nc is already closed.
		return nil, fmt.Errorf("join bus %s: %w", socket, ctx.Err())
	}
	nc.SetDeadline(time.Time{})
	return c, nil
}

// Send writes one envelope.
func (c *Conn) Send(env contracts.Envelope) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return WriteFrame(c.nc, env, c.maxFrame)
}

// Recv reads the next envelope.
func (c *Conn) Recv() (contracts.Envelope, error) {
	return ReadFrame(c.nc, c.maxFrame)
}

// Close closes the connection; a blocked Recv returns.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() { close(c.done) })
	return c.nc.Close()
}

// Done is closed once the connection is closed: whatever was being done
// for it (a broker's job for a core that is gone) can stop, since its
// answer has nowhere to go.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Client keeps a long-lived actor joined to the bus: it redials with
// backoff whenever the connection drops, so the actor survives a core
// restart without being restarted itself.
type Client struct {
	Socket   string
	Hello    contracts.Hello
	MaxFrame int
	// Logf reports the changes of state: joined, the connection lost,
	// core not answering (once, however many redials follow); nil
	// discards them.
	Logf func(format string, args ...any)
	// OnConnect runs after each successful join, before frames are read
	// (a panel asks for the current face here, a chat client greets).
	OnConnect func(*Conn)
	// OnDisconnect runs when a joined connection is lost, before the
	// client dials again (a panel shows that core is away).
	OnDisconnect func()
	// OnDialError runs after each dial that failed for a reason worth
	// retrying, with that reason, before the client waits to dial again
	// (a terminal says why core is not there: no socket, no permission).
	OnDialError func(error)
	// MaxRedial caps the wait between redials while core is away; zero
	// is 2 s. A client that can wait (the panel) takes longer, to cost
	// little through a long outage.
	MaxRedial time.Duration
	// Clock times the redials; nil is the system clock.
	Clock clock.Clock

	mu   sync.Mutex
	conn *Conn
}

// Backoff between redials: starts small so a core restart is barely
// noticed, doubling up to Client.MaxRedial so a long outage costs little.
const (
	minRedial        = 50 * time.Millisecond
	defaultMaxRedial = 2 * time.Second
	// steadyAfter is how long a connection lasts to count as a success
	// that starts the backoff afresh.
	steadyAfter = 2 * time.Second
)

// Run joins the bus and calls handle for every envelope received, until
// ctx is done. A refused hello is final (it will be refused again) and is
// returned; any other failure is retried.
func (c *Client) Run(ctx context.Context, handle func(*Conn, contracts.Envelope)) error {
	clk, maxWait := c.Clock, c.MaxRedial
	if clk == nil {
		clk = clock.Real{}
	}
	if maxWait <= 0 {
		maxWait = defaultMaxRedial
	}
	wait := minRedial
	// away says whether the loss of core was logged: the redials that
	// follow are not, until one joins.
	away := false
	for {
		conn, err := Dial(ctx, c.Socket, c.Hello, c.MaxFrame)
		switch {
		case ctx.Err() != nil:
			if conn != nil {
				conn.Close()
			}
			return nil
		case errors.Is(err, ErrRefused):
			return err
		case err != nil:
			if c.OnDialError != nil {
				c.OnDialError(err)
			}
			if !away {
				c.logf("bus: core does not answer: %v; redialling, at most %v apart, quietly until it does", err, maxWait)
				away = true
			}
			if !sleep(ctx, clk, wait) {
				return nil
			}
			wait = min(2*wait, maxWait)
			continue
		}
		joined := clk.Now()
		c.logf("bus: joined %s as %s", c.Socket, c.Hello.Role)
		away = false
		c.setConn(conn)
		if c.OnConnect != nil {
			c.OnConnect(conn)
		}
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		var lost error
		for {
			env, err := conn.Recv()
			if err != nil {
				lost = err
				break
			}
			handle(conn, env)
		}
		stop()
		c.setConn(nil)
		conn.Close()
		if ctx.Err() != nil {
			return nil
		}
		// Logged once the connection is let go: from here Send reports
		// the gap.
		c.logf("bus: connection lost: %v; redialling", lost)
		away = true
		if c.OnDisconnect != nil {
			c.OnDisconnect()
		}
		// A connection that lasted keeps the backoff short; one dropped
		// at once (a core that welcomes, then fails) grows it, so a
		// flapping core is not hammered.
		if clk.Now().Sub(joined) > steadyAfter {
			wait = minRedial
		} else {
			wait = min(2*wait, maxWait)
		}
		if !sleep(ctx, clk, wait) {
			return nil
		}
	}
}

// sleep waits d on clk, and says false if ctx ended first.
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	woke := make(chan struct{})
	t := clk.AfterFunc(d, func() { close(woke) })
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-woke:
		return true
	}
}

// Send writes env on the current connection, or fails with
// [ErrNotConnected] while there is none.
func (c *Client) Send(env contracts.Envelope) error {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn == nil {
		return ErrNotConnected
	}
	return conn.Send(env)
}

func (c *Client) setConn(conn *Conn) {
	c.mu.Lock()
	c.conn = conn
	c.mu.Unlock()
}

func (c *Client) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
	}
}
