package sandbox

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"shelldon/contracts"
	"shelldon/policy"
)

// Bounds of a networked run's way out.
const (
	// egressConns is how many connections a run may have open at once:
	// git opens one or two.
	egressConns = 16
	// egressHandshake bounds the proxy's handshake and each dial.
	egressHandshake = 15 * time.Second
)

// egress is a networked run's only way out. nspawn starts in a network
// namespace of the sandbox's own that holds nothing but loopback, and the
// container shares it; on it listens a SOCKS5 proxy (RFC 1928, CONNECT
// only) served from core, whose goroutines run on threads of the host's
// namespace (the runtime never makes a thread from a locked one), and which
// dials each connection itself, from the host, through the address rules
// of http_get for a redirect (fetch.Dialer, no first hop): public
// addresses only, never loopback, link-local, cloud metadata or a private
// network, the name resolved by core at the moment of the dial. The
// command is pointed at it with ALL_PROXY=socks5h://…, which git (curl)
// follows for http and https, names and all; anything that ignores it
// has no route at all. ssh and git's own protocol have none either, and
// the image has no ssh.
type egress struct {
	ns   *os.File     // the namespace, open for nspawn to join
	ln   net.Listener // the proxy, on 127.0.0.1 inside the namespace
	dial func(ctx context.Context, network, address string) (net.Conn, error)
	log  *slog.Logger

	ctx    context.Context // ends when the run does, and every connection with it
	cancel context.CancelFunc
	slots  chan struct{}
	wg     sync.WaitGroup
}

// startEgress makes the namespace and starts the proxy in it.
func startEgress(dial func(ctx context.Context, network, address string) (net.Conn, error), log *slog.Logger) (*egress, error) {
	type made struct {
		ns  *os.File
		ln  net.Listener
		err error
	}
	done := make(chan made, 1)
	go func() {
		// The thread's network namespace is changed for good, so it is
		// never unlocked: the runtime ends a thread still locked when its
		// goroutine returns, and no other goroutine ever runs on it.
		runtime.LockOSThread()
		ns, ln, err := namespaceWithProxy()
		done <- made{ns, ln, err}
	}()
	m := <-done
	if m.err != nil {
		return nil, fmt.Errorf("network namespace for the run: %w", m.err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &egress{ns: m.ns, ln: m.ln, dial: dial, log: log, ctx: ctx, cancel: cancel, slots: make(chan struct{}, egressConns)}
	e.wg.Go(e.serve)
	return e, nil
}

// namespaceWithProxy moves the calling thread, which must be locked to
// its goroutine, into a new network namespace, brings its loopback up and
// listens there: the socket stays in the namespace wherever it is used
// from.
func namespaceWithProxy() (*os.File, net.Listener, error) {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return nil, nil, fmt.Errorf("unshare: %w", err)
	}
	ns, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, nil, err
	}
	if err := loopbackUp(); err != nil {
		ns.Close()
		return nil, nil, err
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		ns.Close()
		return nil, nil, err
	}
	return ns, ln, nil
}

// loopbackUp brings up the loopback interface of the calling thread's
// network namespace, which a new namespace has down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring loopback up: %w", err)
	}
	return nil
}

// env points the command at the proxy.
func (e *egress) env() []string {
	proxy := "socks5h://" + e.ln.Addr().String()
	return []string{"ALL_PROXY=" + proxy, "all_proxy=" + proxy}
}

// namespacePath is where systemd, which starts a unit in it, finds the
// network namespace ns: core's own descriptor of it.
func namespacePath(ns *os.File) string {
	return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), ns.Fd())
}

// startIn runs start, which starts a process, on a thread that has joined
// the network namespace ns, so that the process starts in it; the thread
// is never used again. A namespace that cannot be joined fails the start:
// the process would have the host's network.
func startIn(ns *os.File, start func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the runtime ends the thread
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("join the run's network namespace: %w", err)
			return
		}
		done <- start()
	}()
	return <-done
}

// close ends every connection and the proxy, and lets the namespace go.
func (e *egress) close() {
	e.cancel()
	e.ln.Close()
	e.wg.Wait()
	e.ns.Close()
}

func (e *egress) serve() {
	for {
		conn, err := e.ln.Accept()
		if err != nil {
			return // closed with the run
		}
		select {
		case e.slots <- struct{}{}:
		default:
			e.log.Warn("sandbox egress: too many connections at once", "limit", egressConns)
			conn.Close()
			continue
		}
		e.wg.Go(func() {
			defer func() { <-e.slots }()
			e.handle(conn)
		})
	}
}

// SOCKS5 replies (RFC 1928, section 6).
const (
	socksSucceeded      = 0x00
	socksFailure        = 0x01
	socksNotAllowed     = 0x02
	socksHostUnreach    = 0x04
	socksRefused        = 0x05
	socksCmdUnsupported = 0x07
	socksAddrUnsupport  = 0x08
)

// handle serves one connection from the container: the handshake, the
// checked dial, then the bytes both ways until either side ends or the
// run does.
func (e *egress) handle(conn net.Conn) {
	defer conn.Close()
	stop := context.AfterFunc(e.ctx, func() { conn.Close() })
	defer stop()
	conn.SetDeadline(time.Now().Add(egressHandshake))
	target, err := socksRequest(conn)
	if err != nil {
		var code socksError
		if errors.As(err, &code) {
			socksReply(conn, byte(code))
		}
		e.log.Info("sandbox egress refused", contracts.AuditEvent, contracts.EventSandboxEgress, "decision", "refused", "why", err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(e.ctx, egressHandshake)
	out, err := e.dial(ctx, "tcp", target)
	cancel()
	if err != nil {
		socksReply(conn, dialReply(err))
		e.log.Info("sandbox egress refused", contracts.AuditEvent, contracts.EventSandboxEgress, "to", target, "decision", "refused", "why", err.Error())
		return
	}
	defer out.Close()
	stopOut := context.AfterFunc(e.ctx, func() { out.Close() })
	defer stopOut()
	e.log.Info("sandbox egress", contracts.AuditEvent, contracts.EventSandboxEgress, "to", target, "via", out.RemoteAddr().String(), "decision", "allowed")
	if err := socksReply(conn, socksSucceeded); err != nil {
		return
	}
	conn.SetDeadline(time.Time{})
	copied := make(chan struct{}, 1)
	go func() {
		io.Copy(out, conn)
		closeWrite(out)
		copied <- struct{}{}
	}()
	io.Copy(conn, out)
	closeWrite(conn)
	<-copied
}

// closeWrite says the end of one direction to the other side, leaving the
// other direction open.
func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}

// socksError is a refusal of the handshake, as the reply that says it.
type socksError byte

func (e socksError) Error() string {
	switch byte(e) {
	case socksCmdUnsupported:
		return "SOCKS command other than CONNECT"
	case socksAddrUnsupport:
		return "SOCKS address of an unknown type"
	}
	return "SOCKS handshake refused"
}

// socksRequest reads the client's greeting and CONNECT request, and
// returns the host and port asked for. Only "no authentication" is
// offered: the namespace's loopback reaches only the run's own processes.
func socksRequest(conn net.Conn) (string, error) {
	var head [2]byte
	if _, err := io.ReadFull(conn, head[:]); err != nil {
		return "", fmt.Errorf("SOCKS greeting: %w", err)
	}
	if head[0] != 5 {
		return "", fmt.Errorf("not SOCKS5 (version byte %#x): the way out is socks5h://, as ALL_PROXY says", head[0])
	}
	methods := make([]byte, head[1])
	if _, err := io.ReadFull(conn, methods); err != nil {
		return "", fmt.Errorf("SOCKS greeting: %w", err)
	}
	if !slices.Contains(methods, 0x00) {
		conn.Write([]byte{5, 0xff})
		return "", errors.New("SOCKS client offers no method without authentication")
	}
	if _, err := conn.Write([]byte{5, 0x00}); err != nil {
		return "", fmt.Errorf("SOCKS greeting: %w", err)
	}
	var req [4]byte
	if _, err := io.ReadFull(conn, req[:]); err != nil {
		return "", fmt.Errorf("SOCKS request: %w", err)
	}
	if req[0] != 5 {
		return "", socksError(socksFailure)
	}
	if req[1] != 1 {
		return "", socksError(socksCmdUnsupported)
	}
	var host string
	switch req[3] {
	case 1, 4:
		b := make([]byte, 4)
		if req[3] == 4 {
			b = make([]byte, 16)
		}
		if _, err := io.ReadFull(conn, b); err != nil {
			return "", fmt.Errorf("SOCKS request: %w", err)
		}
		addr, _ := netip.AddrFromSlice(b)
		host = addr.Unmap().String()
	case 3:
		var n [1]byte
		if _, err := io.ReadFull(conn, n[:]); err != nil {
			return "", fmt.Errorf("SOCKS request: %w", err)
		}
		name := make([]byte, n[0])
		if _, err := io.ReadFull(conn, name); err != nil {
			return "", fmt.Errorf("SOCKS request: %w", err)
		}
		host = string(name)
	default:
		return "", socksError(socksAddrUnsupport)
	}
	var port [2]byte
	if _, err := io.ReadFull(conn, port[:]); err != nil {
		return "", fmt.Errorf("SOCKS request: %w", err)
	}
	return net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(port[:])))), nil
}

// socksReply answers a CONNECT request. The bound address is left zero:
// the host's addresses are none of the container's business.
func socksReply(conn net.Conn, code byte) error {
	_, err := conn.Write([]byte{5, code, 0, 1, 0, 0, 0, 0, 0, 0})
	return err
}

// dialReply is the SOCKS reply that says why a dial failed.
func dialReply(err error) byte {
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, policy.ErrForbiddenAddress):
		return socksNotAllowed
	case errors.As(err, &dnsErr):
		return socksHostUnreach
	case errors.Is(err, unix.ECONNREFUSED):
		return socksRefused
	case errors.Is(err, unix.EHOSTUNREACH), errors.Is(err, unix.ENETUNREACH), errors.Is(err, context.DeadlineExceeded):
		return socksHostUnreach
	}
	return socksFailure
}
