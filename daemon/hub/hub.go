package hub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"shelldon/bus"
	"shelldon/clock"
	"shelldon/contracts"
)

// ErrNoRoute is returned by [Hub.Route] when no connection can take an
// envelope (no broker joined, the turn's worker has gone).
var ErrNoRoute = errors.New("no connection to route to")

// Cred is what the kernel says about a peer, read with SO_PEERCRED when it
// connects; it cannot be forged by the peer.
type Cred struct {
	PID, UID, GID int
}

// Peer is one joined connection, as the hub's callbacks see it.
type Peer struct {
	Hello contracts.Hello
	Cred  Cred

	id  uint64
	nc  net.Conn
	out chan contracts.Envelope
	// taken counts the envelopes the writer took from out: a sender
	// waiting on a full queue sees whether the peer still reads.
	taken    atomic.Uint64
	gone     chan struct{}
	goneOnce sync.Once
	// deaf is closed when writing to the peer failed: nothing more is
	// sent, but what it wrote before is still read to the end.
	deaf     chan struct{}
	deafOnce sync.Once
	// draining asks the writer, as the hub stops, to write what is
	// queued and end; flushed is closed when the writer has ended.
	draining chan struct{}
	flushed  chan struct{}
}

// Config sets up a hub.
type Config struct {
	// QueueLength bounds each connection's send queue. A full queue makes
	// its sender wait while the peer reads (back-pressure), for as long
	// as the peer's writer takes something every StallFor.
	QueueLength int
	// StallFor is how long a peer whose queue is full may take nothing
	// from it before it is dropped as one that stopped reading (10 s when
	// zero, on Clock): a slow reader loses nothing, a stopped one holds
	// its senders no longer than this.
	StallFor time.Duration
	// MaxFrame bounds one frame of a joined peer that may send something
	// (bus.DefaultMaxFrame when zero). Before its hello, and for a role
	// that may send nothing (the panel), a frame is at most
	// contracts.MaxHelloFrame.
	MaxFrame int
	// FrameBudget bounds the bytes of the frames joined peers are sending
	// at once, over every connection (twice MaxFrame when zero, never less
	// than MaxFrame): a frame that would go over it waits to be read until
	// others have been.
	FrameBudget int
	// MaxConns bounds the connections open at once, joined or still to
	// say hello (64 when zero), and MaxConnsPerUser those of one user
	// other than root and core's own (8 when zero); a connection past
	// either is refused at once.
	MaxConns, MaxConnsPerUser int
	// HelloTimeout is how long a caller has to say hello, on Clock (5 s
	// when zero); then its connection is closed.
	HelloTimeout time.Duration
	// Access says which users may join, in which roles. Listen fills in
	// its Self and Group.
	Access Access
	// VerifyWorker checks what only core knows of a worker that Access let
	// in: that its process is the one core started for the turn it names,
	// now. Its error is sent back to the worker as the reason; nil admits
	// every worker.
	VerifyWorker func(hello contracts.Hello, cred Cred) error
	// Core receives the envelopes routed to core; a full inbox makes the
	// sending connection wait, never the hub.
	Core chan<- contracts.Envelope
	// OnJoin runs after a peer is welcomed (core sends a new panel the
	// current face). It must not block.
	OnJoin func(*Peer)
	// OnLeave runs after a peer's connection is gone.
	OnLeave func(*Peer)
	Logf    func(format string, args ...any)
	// HoldFor keeps an envelope for one peer of a role (a worker's job
	// for the broker) that finds none connected, and delivers it when one
	// joins within that long: a broker that starts just after core, or
	// rejoins after a restart, still gets the turn that started first.
	// Zero drops such an envelope at once, as an error of the route.
	HoldFor time.Duration
	// Clock tells the time for HoldFor and HelloTimeout; nil is the
	// system clock.
	Clock clock.Clock
}

// maxHeld bounds the envelopes waiting for a peer; the oldest goes first.
const maxHeld = 64

// heldEnvelope waits for a peer of its route's role.
type heldEnvelope struct {
	env   contracts.Envelope
	route contracts.Route
	until time.Time
}

// Hub accepts connections and routes envelopes among them.
type Hub struct {
	cfg Config
	ln  *net.UnixListener

	mu     sync.Mutex
	closed bool // set once Serve is ending; late joiners are turned away
	// conns holds every accepted connection, joined or still saying
	// hello, so shutdown can end a handshake instead of waiting it out.
	conns map[net.Conn]struct{}
	// open counts the connections admitted under MaxConns, and openBy
	// those of each user under MaxConnsPerUser.
	open   int
	openBy map[int]int
	peers  map[uint64]*Peer
	nextID uint64
	held   []heldEnvelope
	// jobs are the turns whose JOB a broker took and has not answered,
	// by the broker's peer id: when the broker leaves, they are failed at
	// once instead of waiting out the worker's budget.
	jobs map[uint64]map[string]bool
	wg   sync.WaitGroup
	// reading holds the bytes of the frames being read, under FrameBudget.
	reading *budget
}

// acceptRetry is the pause after a failed accept that may pass.
const acceptRetry = 100 * time.Millisecond

// isTemporary reports whether an accept error may pass by itself
// (descriptor or buffer exhaustion, an aborted connection).
func isTemporary(err error) bool {
	return errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) || errors.Is(err, unix.ENOBUFS) ||
		errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.ECONNABORTED)
}

// The bounds a Config leaves zero.
const (
	defaultMaxConns        = 64
	defaultMaxConnsPerUser = 8
	defaultHelloTimeout    = 5 * time.Second
	defaultStallFor        = 10 * time.Second
)

// handshakeWrite bounds the writing of core's welcome, or its refusal,
// to a caller that does not read it.
const handshakeWrite = 5 * time.Second

// Listen creates the bus socket at path with mode 0660. A stale socket
// left by a crashed core is removed; a live one (another core answers) is
// an error.
func Listen(path string, cfg Config) (*Hub, error) {
	if cfg.QueueLength <= 0 {
		cfg.QueueLength = 256
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = bus.DefaultMaxFrame
	}
	if cfg.FrameBudget <= 0 {
		cfg.FrameBudget = 2 * cfg.MaxFrame
	}
	cfg.FrameBudget = max(cfg.FrameBudget, cfg.MaxFrame)
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = defaultMaxConns
	}
	if cfg.MaxConnsPerUser <= 0 {
		cfg.MaxConnsPerUser = defaultMaxConnsPerUser
	}
	if cfg.HelloTimeout <= 0 {
		cfg.HelloTimeout = defaultHelloTimeout
	}
	if cfg.StallFor <= 0 {
		cfg.StallFor = defaultStallFor
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("listen on bus %s: a non-socket file is in the way; remove it", path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("listen on bus %s: another core is already serving it", path)
		}
		// Only a refused connection proves nobody listens; a core whose
		// backlog is full, or a socket we may not open, may be alive.
		if !errors.Is(err, unix.ECONNREFUSED) {
			return nil, fmt.Errorf("listen on bus %s: cannot tell whether another core is serving it: %w", path, err)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale bus socket %s: %w", path, err)
		}
	}
	// Until the chmod below the socket has the umask's mode. The umask is
	// not narrowed around the bind, since it is process-wide and would
	// race with other goroutines' files; the state directory (0750) is
	// what keeps strangers away in that moment.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on bus %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o660); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod bus socket %s: %w", path, err)
	}
	gid, err := shareGroup(path)
	if err != nil {
		ln.Close()
		return nil, err
	}
	cfg.Access.Self, cfg.Access.Group = os.Getuid(), gid
	return &Hub{cfg: cfg, ln: ln, conns: map[net.Conn]struct{}{}, openBy: map[int]int{}, peers: map[uint64]*Peer{},
		reading: newBudget(cfg.FrameBudget)}, nil
}

// shareGroup gives the socket the group of the directory it is in, so
// that the actors' users in that group (the broker's, the panel's; set up
// by the sysusers and tmpfiles snippets) can connect, and returns that
// group.
func shareGroup(path string) (int, error) {
	var dir unix.Stat_t
	if err := unix.Stat(filepath.Dir(path), &dir); err != nil {
		return 0, fmt.Errorf("stat the bus socket's directory: %w", err)
	}
	if int(dir.Gid) != os.Getegid() {
		if err := os.Lchown(path, -1, int(dir.Gid)); err != nil {
			return 0, fmt.Errorf("give bus socket %s the group %d of its directory: %w", path, dir.Gid, err)
		}
	}
	return int(dir.Gid), nil
}

// Serve accepts connections until ctx is done, then closes the listener
// and every connection and waits for their goroutines.
func (h *Hub) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { h.ln.Close() })
	defer stop()
	for {
		nc, err := h.ln.AcceptUnix()
		if err != nil && ctx.Err() == nil && isTemporary(err) {
			// Out of file descriptors, say: wait and go on, as net/http
			// does, rather than take the whole bus down.
			h.cfg.Logf("bus: accept: %v; retrying in %v", err, acceptRetry)
			select {
			case <-time.After(acceptRetry):
			case <-ctx.Done():
			}
			continue
		}
		if err != nil {
			h.closeAll()
			h.wg.Wait()
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accept on bus: %w", err)
		}
		cred, err := peerCred(nc)
		if err != nil {
			h.cfg.Logf("bus: reading peer credentials: %v", err)
			nc.Close()
			continue
		}
		// Counted here, in the order callers connected, before anything
		// of theirs is read.
		counted := h.occupy(cred.UID)
		h.track(nc)
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			defer h.untrack(nc)
			if counted == nil {
				defer h.vacate(cred.UID)
			}
			h.serveConn(ctx, nc, cred, counted)
		}()
	}
}

// track records an accepted connection. Only Serve's loop calls it, and
// that loop has stopped accepting before closeAll runs.
func (h *Hub) track(nc net.Conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.conns[nc] = struct{}{}
}

func (h *Hub) untrack(nc net.Conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.conns, nc)
}

// flushFor bounds how long a stopping hub writes what it still holds for
// its peers: core's last words (the answer of a turn that finished as
// core stopped) reach the transport, and a peer that does not read holds
// the stop no longer than this.
const flushFor = time.Second

func (h *Hub) closeAll() {
	h.mu.Lock()
	h.closed = true // no peer joins from now on
	peers := make([]*Peer, 0, len(h.peers))
	for _, p := range h.peers {
		peers = append(peers, p)
	}
	h.mu.Unlock()
	deadline := time.Now().Add(flushFor)
	for _, p := range peers {
		p.nc.SetWriteDeadline(deadline)
		close(p.draining)
	}
	timeout := time.NewTimer(flushFor)
	defer timeout.Stop()
	for _, p := range peers {
		select {
		case <-p.flushed:
		case <-p.gone:
		case <-timeout.C:
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.peers {
		p.close()
	}
	for nc := range h.conns {
		nc.Close()
	}
}

func (p *Peer) close() {
	p.goneOnce.Do(func() {
		close(p.gone)
		p.nc.Close()
	})
}

// isDeaf reports whether writing to the peer has failed.
func (p *Peer) isDeaf() bool {
	select {
	case <-p.deaf:
		return true
	default:
		return false
	}
}

// Gone is closed when the peer's connection ends.
func (p *Peer) Gone() <-chan struct{} { return p.gone }

func peerCred(nc *net.UnixConn) (Cred, error) {
	raw, err := nc.SyscallConn()
	if err != nil {
		return Cred{}, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Cred{}, err
	}
	if credErr != nil {
		return Cred{}, credErr
	}
	return Cred{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid)}, nil
}

// serveConn serves the connection of cred, refusing it at once when it
// is past a bound of connections (counted says which).
func (h *Hub) serveConn(ctx context.Context, nc *net.UnixConn, cred Cred, counted error) {
	defer nc.Close()
	nc.SetWriteDeadline(time.Now().Add(handshakeWrite))
	var hello contracts.Hello
	claims := "before its hello"
	refuse := func(reason string) {
		h.cfg.Logf("bus: refused pid %d uid %d %s: %s", cred.PID, cred.UID, claims, reason)
		env, _ := contracts.NewEnvelope(contracts.KindWelcome, "", contracts.Welcome{Reason: reason})
		bus.WriteFrame(nc, env, h.cfg.MaxFrame)
	}
	if counted != nil {
		refuse(counted.Error())
		return
	}
	// Until it has said who it is, a caller is read no further than a
	// hello, and for no longer than HelloTimeout.
	said := h.awaitHello(nc)
	first, err := bus.ReadFrame(nc, contracts.MaxHelloFrame)
	said()
	if err != nil {
		h.cfg.Logf("bus: pid %d uid %d sent no hello: %v", cred.PID, cred.UID, err)
		return
	}
	isHello := first.Kind == contracts.KindHello && first.Decode(&hello) == nil
	if isHello {
		claims = fmt.Sprintf("(%s %q)", hello.Role, hello.Name)
	}
	switch {
	case !isHello:
		refuse(fmt.Sprintf("the first frame must be a %s, got %s", contracts.KindHello, first.Kind))
		return
	case !hello.Role.Valid() || hello.Role == contracts.RoleCore:
		refuse(fmt.Sprintf("unknown role %q", hello.Role))
		return
	case hello.Role == contracts.RoleWorker && hello.Turn == "":
		refuse("a worker must name its turn")
		return
	}
	if err := h.admit(hello, cred); err != nil {
		refuse(err.Error())
		return
	}
	p := &Peer{Hello: hello, Cred: cred, nc: nc, out: make(chan contracts.Envelope, h.cfg.QueueLength),
		gone: make(chan struct{}), deaf: make(chan struct{}), draining: make(chan struct{}), flushed: make(chan struct{})}
	// Registered before the welcome, so that two brokers saying hello at
	// once cannot both be welcomed; what is routed to p meanwhile waits
	// in its queue.
	if err := h.register(ctx, p); errors.Is(err, errClosing) {
		return // no refusal: a client dials a restarted core again
	} else if err != nil {
		refuse(err.Error())
		return
	}
	welcome, _ := contracts.NewEnvelope(contracts.KindWelcome, "", contracts.Welcome{OK: true})
	if err := bus.WriteFrame(nc, welcome, h.cfg.MaxFrame); err != nil {
		h.unregister(p)
		return
	}
	nc.SetDeadline(time.Time{})
	h.cfg.Logf("bus: %s %q joined (pid %d uid %d) %s", hello.Role, hello.Name, cred.PID, cred.UID, hello.Note)
	defer func() {
		h.unregister(p)
		h.failJobs(p)
		if h.cfg.OnLeave != nil {
			h.cfg.OnLeave(p)
		}
	}()

	// Counted with the connection, so Serve returns only once nothing of
	// it can still write or log.
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.writeLoop(p)
	}()
	if h.cfg.OnJoin != nil {
		h.cfg.OnJoin(p)
	}
	h.release(p)
	limit := h.frameLimit(hello.Role)
	for {
		env, err := h.readFrame(ctx, p, limit)
		if err != nil {
			select {
			case <-p.gone:
			default:
				h.cfg.Logf("bus: %s %q left: %v", hello.Role, hello.Name, err)
			}
			return
		}
		// The hub, not the sender, says who sent a frame, and a worker
		// can only speak for the turn it proved.
		env.From = hello.Role
		env.Sender = hello.Name
		if hello.Role == contracts.RoleWorker {
			env.Turn = hello.Turn
		}
		if !contracts.MaySend(hello.Role, env.Kind) {
			h.cfg.Logf("bus: dropped %s from %s %q: that role may not send it", env.Kind, hello.Role, hello.Name)
			continue
		}
		if env.Kind == contracts.KindCompletion {
			h.answeredJob(p, env.Turn)
		}
		if err := h.route(ctx, env); err != nil {
			h.cfg.Logf("bus: %s from %s %q: %v", env.Kind, hello.Role, hello.Name, err)
		}
	}
}

// occupy counts a new connection of uid against MaxConns and
// MaxConnsPerUser, or says which bound it would pass. Root and core's own
// user count only against MaxConns.
func (h *Hub) occupy(uid int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.open >= h.cfg.MaxConns {
		return fmt.Errorf("the bus already holds %d connections, its bound; try again once some have closed", h.open)
	}
	if uid != 0 && uid != h.cfg.Access.Self && h.openBy[uid] >= h.cfg.MaxConnsPerUser {
		return fmt.Errorf("uid %d already holds %d connections to the bus, its bound for one user; close some first", uid, h.openBy[uid])
	}
	h.open++
	h.openBy[uid]++
	return nil
}

// vacate uncounts a connection of uid that occupy counted.
func (h *Hub) vacate(uid int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.open--
	if h.openBy[uid]--; h.openBy[uid] == 0 {
		delete(h.openBy, uid)
	}
}

// awaitHello ends the read of nc's hello once HelloTimeout has passed on
// the hub's clock; the function it returns, called once the read is
// over, lifts that end for the reads that follow.
func (h *Hub) awaitHello(nc net.Conn) (said func()) {
	var mu sync.Mutex
	over := false
	timer := h.cfg.Clock.AfterFunc(h.cfg.HelloTimeout, func() {
		mu.Lock()
		defer mu.Unlock()
		if !over {
			nc.SetReadDeadline(time.Unix(1, 0)) // a past deadline ends the read at once
		}
	})
	return func() {
		timer.Stop()
		mu.Lock()
		defer mu.Unlock()
		over = true
		nc.SetReadDeadline(time.Time{})
	}
}

// frameLimit bounds one frame of a joined peer of role: MaxFrame, but a
// hello's for a role that may send nothing (the panel), since whatever
// it sends is dropped.
func (h *Hub) frameLimit(role contracts.Role) int {
	for _, senders := range contracts.Senders {
		if slices.Contains(senders, role) {
			return h.cfg.MaxFrame
		}
	}
	return contracts.MaxHelloFrame
}

// readFrame reads p's next frame of at most max bytes, its length taken
// from FrameBudget before its body is read and given back once the body
// is decoded.
func (h *Hub) readFrame(ctx context.Context, p *Peer, max int) (contracts.Envelope, error) {
	n, err := bus.ReadLength(p.nc, max)
	if err != nil {
		return contracts.Envelope{}, err
	}
	if err := h.reading.take(ctx, p.gone, n); err != nil {
		return contracts.Envelope{}, fmt.Errorf("wait to read a frame of %d bytes: %w", n, err)
	}
	defer h.reading.give(n)
	return bus.ReadBody(p.nc, n)
}

// admit decides, by Access and for a worker VerifyWorker, whether the
// caller of cred may join as hello says.
func (h *Hub) admit(hello contracts.Hello, cred Cred) error {
	caller, err := callerOf(cred)
	if err != nil {
		h.cfg.Logf("bus: pid %d counted with its primary group only: %v", cred.PID, err)
	}
	if err := h.cfg.Access.Allow(caller, hello.Role); err != nil {
		return err
	}
	if hello.Role == contracts.RoleWorker && h.cfg.VerifyWorker != nil {
		return h.cfg.VerifyWorker(hello, cred)
	}
	return nil
}

// errClosing is register's answer once Serve is ending.
var errClosing = errors.New("the bus is closing")

// brokerGrace is how long a broker's hello waits for the joined broker to
// leave before it is refused. A broker that restarts says hello as soon as
// its old process is gone, which may be before the hub has read the end
// of the old connection; a real second broker is refused a moment later.
const brokerGrace = time.Second

// register adds p to the joined peers. There is one broker at a time,
// since the hub routes every job, with the owner's whole prompt, to a
// broker: a broker's hello while another broker is joined waits up to
// brokerGrace for it to leave, then is refused. A broker that has gone
// deaf (writing to it failed: it stopped reading, most often because it
// is exiting) takes no more jobs and is not waited for: it is closed, and
// the new one takes its place.
func (h *Hub) register(ctx context.Context, p *Peer) error {
	var grace <-chan time.Time
	for {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return errClosing
		}
		old := h.joinedBroker()
		if p.Hello.Role != contracts.RoleBroker || old == nil {
			h.nextID++
			p.id = h.nextID
			h.peers[p.id] = p
			h.mu.Unlock()
			return nil
		}
		h.mu.Unlock()
		if grace == nil {
			timer := time.NewTimer(brokerGrace)
			defer timer.Stop()
			grace = timer.C
		}
		select {
		case <-old.gone:
		case <-old.deaf:
			h.cfg.Logf("bus: closing the deaf broker %q (pid %d uid %d) for the broker of pid %d", old.Hello.Name, old.Cred.PID, old.Cred.UID, p.Cred.PID)
			old.close()
		case <-grace:
			return fmt.Errorf("a broker is already joined (pid %d, uid %d)", old.Cred.PID, old.Cred.UID)
		case <-ctx.Done():
			return errClosing
		}
	}
}

// joinedBroker is the broker whose connection has not ended, if any. The
// caller holds h.mu.
func (h *Hub) joinedBroker() *Peer {
	for _, p := range h.peers {
		select {
		case <-p.gone:
			continue // closed; its goroutine is about to remove it
		default:
		}
		if p.Hello.Role == contracts.RoleBroker {
			return p
		}
	}
	return nil
}

// unregister removes p from the joined peers and closes its connection.
func (h *Hub) unregister(p *Peer) {
	h.mu.Lock()
	delete(h.peers, p.id)
	h.mu.Unlock()
	p.close()
}

func (h *Hub) writeLoop(p *Peer) {
	defer close(p.flushed)
	for {
		select {
		case <-p.gone:
			return
		case <-p.draining:
			for {
				select {
				case env := <-p.out:
					p.taken.Add(1)
					if !h.write(p, env) {
						return
					}
				default:
					return
				}
			}
		case env := <-p.out:
			p.taken.Add(1)
			if !h.write(p, env) {
				return
			}
		}
	}
}

// write writes one envelope to p; false means p is deaf now.
func (h *Hub) write(p *Peer, env contracts.Envelope) bool {
	if err := bus.WriteFrame(p.nc, env, h.cfg.MaxFrame); err != nil {
		// The peer closed its end, most often a worker that sent its
		// result and exited: the result may still be unread in the
		// socket, so reading goes on to the end.
		h.cfg.Logf("bus: writing %s to %s %q: %v", env.Kind, p.Hello.Role, p.Hello.Name, err)
		p.deafOnce.Do(func() { close(p.deaf) })
		if uc, ok := p.nc.(*net.UnixConn); ok {
			uc.CloseWrite()
		}
		return false
	}
	return true
}

// Send queues env for p. A full queue is waited on for as long as p's
// writer takes from it: a peer that reads slowly (a transport storing a
// burst) slows its senders down and loses nothing. One that took nothing
// for StallFor has stopped reading, and is dropped rather than allowed to
// hold its senders longer.
func (h *Hub) Send(p *Peer, env contracts.Envelope) error {
	select {
	case <-p.gone:
		return fmt.Errorf("send %s to %s %q: %w", env.Kind, p.Hello.Role, p.Hello.Name, ErrNoRoute)
	case <-p.deaf:
		return fmt.Errorf("send %s to %s %q: it stopped reading: %w", env.Kind, p.Hello.Role, p.Hello.Name, ErrNoRoute)
	default:
	}
	select {
	case p.out <- env:
		return nil
	default:
	}
	for taken := p.taken.Load(); ; {
		stalled := make(chan struct{})
		timer := h.cfg.Clock.AfterFunc(h.cfg.StallFor, func() { close(stalled) })
		select {
		case p.out <- env:
			timer.Stop()
			return nil
		case <-p.gone:
			timer.Stop()
			return fmt.Errorf("send %s to %s %q: %w", env.Kind, p.Hello.Role, p.Hello.Name, ErrNoRoute)
		case <-p.deaf:
			timer.Stop()
			return fmt.Errorf("send %s to %s %q: it stopped reading: %w", env.Kind, p.Hello.Role, p.Hello.Name, ErrNoRoute)
		case <-stalled:
		}
		if now := p.taken.Load(); now != taken {
			taken = now // it reads, if slowly: another sender got the room
			continue
		}
		h.cfg.Logf("bus: dropped slow reader %s %q (pid %d): its queue of %d stayed full for %v", p.Hello.Role, p.Hello.Name, p.Cred.PID, cap(p.out), h.cfg.StallFor)
		p.close()
		return fmt.Errorf("send %s to %s %q: it stopped reading, dropped", env.Kind, p.Hello.Role, p.Hello.Name)
	}
}

// Route delivers an envelope from core by the routing table.
func (h *Hub) Route(env contracts.Envelope) error {
	env.From, env.Sender = contracts.RoleCore, ""
	return h.route(context.Background(), env)
}

func (h *Hub) route(ctx context.Context, env contracts.Envelope) error {
	r, ok := contracts.Routes[env.Kind]
	if !ok {
		return fmt.Errorf("route %s: kind not in the routing table", env.Kind)
	}
	if r.To == contracts.RoleCore {
		if h.cfg.Core == nil {
			return fmt.Errorf("route %s to core: %w", env.Kind, ErrNoRoute)
		}
		select {
		case h.cfg.Core <- env:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	targets := h.targets(r, env)
	if len(targets) == 0 && r.Delivery == contracts.ToOne && h.cfg.HoldFor > 0 {
		h.hold(env, r)
		return nil
	}
	if len(targets) == 0 {
		return fmt.Errorf("route %s (turn %q) to %s: %w", env.Kind, env.Turn, r.To, ErrNoRoute)
	}
	var errs []error
	for _, p := range targets {
		if err := h.Send(p, env); err != nil {
			errs = append(errs, err)
		} else if env.Kind == contracts.KindJob {
			h.tookJob(p, env.Turn)
		}
	}
	if len(errs) == len(targets) {
		return errors.Join(errs...)
	}
	return nil
}

// tookJob records that broker p took the job of turn.
func (h *Hub) tookJob(p *Peer, turn string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.jobs == nil {
		h.jobs = map[uint64]map[string]bool{}
	}
	if h.jobs[p.id] == nil {
		h.jobs[p.id] = map[string]bool{}
	}
	h.jobs[p.id][turn] = true
}

// answeredJob records that broker p answered the job of turn.
func (h *Hub) answeredJob(p *Peer, turn string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.jobs[p.id], turn)
}

// brokerLeft is the answer to a job whose broker left the bus before it
// answered.
const brokerLeft = "the broker left the bus before it answered (it stopped or restarted); the model's answer was lost"

// failJobs answers, for a broker that has left, every job it had not
// answered: the turn's worker hears at once that no completion is coming,
// rather than waiting out its budget for one.
func (h *Hub) failJobs(p *Peer) {
	h.mu.Lock()
	turns := h.jobs[p.id]
	delete(h.jobs, p.id)
	h.mu.Unlock()
	for turn := range turns {
		env, err := contracts.NewEnvelope(contracts.KindCompletion, turn, contracts.Completion{OK: false, Error: brokerLeft})
		if err != nil {
			continue
		}
		env.From, env.Sender = contracts.RoleBroker, p.Hello.Name
		h.cfg.Logf("bus: broker %q left holding the job of turn %q; told its worker", p.Hello.Name, turn)
		if err := h.route(context.Background(), env); err != nil {
			h.cfg.Logf("bus: telling the worker of turn %q that its broker left: %v", turn, err)
		}
	}
}

// hold keeps env until a peer of its role joins or HoldFor passes.
func (h *Hub) hold(env contracts.Envelope, r contracts.Route) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.held) == maxHeld {
		h.cfg.Logf("bus: dropped a held %s (turn %q): too many wait for a %s", h.held[0].env.Kind, h.held[0].env.Turn, h.held[0].route.To)
		h.held = h.held[1:]
	}
	h.held = append(h.held, heldEnvelope{env: env, route: r, until: h.now().Add(h.cfg.HoldFor)})
	h.cfg.Logf("bus: holding %s (turn %q) until a %s joins, for up to %v", env.Kind, env.Turn, r.To, h.cfg.HoldFor)
}

// release delivers to a peer that just joined the held envelopes it can
// take, and drops the ones whose time ran out.
func (h *Hub) release(p *Peer) {
	h.mu.Lock()
	var deliver []contracts.Envelope
	kept := h.held[:0]
	now := h.now()
	for _, e := range h.held {
		switch {
		case now.After(e.until):
			h.cfg.Logf("bus: dropped a held %s (turn %q): no %s joined within %v", e.env.Kind, e.env.Turn, e.route.To, h.cfg.HoldFor)
		case e.route.To == p.Hello.Role && (e.env.To == "" || e.env.To == p.Hello.Name):
			deliver = append(deliver, e.env)
		default:
			kept = append(kept, e)
		}
	}
	h.held = kept
	h.mu.Unlock()
	for _, env := range deliver {
		if err := h.Send(p, env); err != nil {
			h.cfg.Logf("bus: delivering a held %s (turn %q): %v", env.Kind, env.Turn, err)
		} else if env.Kind == contracts.KindJob {
			h.tookJob(p, env.Turn)
		}
	}
}

func (h *Hub) now() time.Time { return h.cfg.Clock.Now() }

func (h *Hub) targets(r contracts.Route, env contracts.Envelope) []*Peer {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*Peer
	var newest *Peer
	for _, p := range h.peers {
		if p.Hello.Role != r.To || (env.To != "" && p.Hello.Name != env.To) {
			continue
		}
		if p.isDeaf() {
			continue
		}
		switch r.Delivery {
		case contracts.ToAll:
			out = append(out, p)
		case contracts.ToTurn:
			if env.Turn != "" && p.Hello.Turn == env.Turn {
				out = append(out, p)
			}
		case contracts.ToOne:
			if newest == nil || p.id > newest.id {
				newest = p
			}
		}
	}
	if newest != nil {
		out = append(out, newest)
	}
	return out
}

// Peers returns the joined connections of role, for status reports.
func (h *Hub) Peers(role contracts.Role) []*Peer {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*Peer
	for _, p := range h.peers {
		if p.Hello.Role == role {
			out = append(out, p)
		}
	}
	return out
}
