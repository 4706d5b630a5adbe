package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"

	"shelldon/policy"
)

// DialControl returns a net.Dialer Control function that applies
// [policy.CheckAddress] to the address the socket is about to connect to. Checking
// there, after name resolution, is what defeats DNS rebinding: a name that
// looked public when approved is judged by what it resolves to now. Only
// TCP is allowed.
func DialControl(firstHop bool) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		switch network {
		case "tcp", "tcp4", "tcp6":
		default:
			return fmt.Errorf("%w: network %q is not TCP", policy.ErrForbiddenAddress, network)
		}
		target, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %q is not an IP address and port: %w", policy.ErrForbiddenAddress, address, err)
		}
		return policy.CheckAddress(target.Addr(), firstHop)
	}
}

// Dialer connects to a host and port by http_get's address rules
// ([policy.CheckAddress]): it resolves the name itself and dials the
// addresses one by one, each through DialControl, so the address judged
// is always the address the socket connects to; an address refused is
// never connected, and the next one is tried. http_get dials through it, and so does the sandbox's way out
// for a networked command.
type Dialer struct {
	// Resolver looks up host names; nil means net.DefaultResolver.
	Resolver *net.Resolver
	// FirstHop allows private and reserved addresses: for the URL the
	// owner approved, never for a redirect or a sandboxed command.
	FirstHop bool
	// Route, which only tests set, gives the address to connect to in
	// place of the one judged: a made-up public address leads to a test
	// server, while the rules still judge the made-up address.
	Route func(netip.AddrPort) netip.AddrPort
}

// DialContext connects to hostport, a name or an IP address with a port,
// over network ("tcp", "tcp4" or "tcp6"), as net.Dialer.DialContext
// does. Refusals wrap policy.ErrForbiddenAddress.
func (d Dialer) DialContext(ctx context.Context, network, hostport string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("port of %s: %w", hostport, err)
	}
	resolver := d.Resolver
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("lookup %s: no addresses", host)
	}
	var errs []error
	for _, addr := range addrs {
		conn, err := d.dialAddr(ctx, network, netip.AddrPortFrom(addr, uint16(port)))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func (d Dialer) dialAddr(ctx context.Context, network string, addr netip.AddrPort) (net.Conn, error) {
	control := DialControl(d.FirstHop)
	dialer := net.Dialer{Control: control}
	dialed := addr
	if d.Route != nil {
		dialed = d.Route(addr)
		dialer.Control = func(network, _ string, c syscall.RawConn) error {
			return control(network, addr.String(), c)
		}
	}
	return dialer.DialContext(ctx, network, dialed.String())
}
