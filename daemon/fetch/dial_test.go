package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"shelldon/policy"
)

func TestDialControl(t *testing.T) {
	tests := []struct {
		network, address string
		firstHop         bool
		want             string // part of the refusal, or "" for allowed
	}{
		{"tcp4", "93.184.216.34:443", false, ""},
		{"tcp6", "[2606:4700:4700::1111]:443", false, ""},
		{"tcp", "93.184.216.34:80", false, ""},
		{"tcp4", "10.0.0.1:80", true, ""},
		{"tcp4", "10.0.0.1:80", false, "private"},
		{"tcp4", "127.0.0.1:80", true, "loopback"},
		{"tcp6", "[::ffff:127.0.0.1]:80", true, "loopback"},
		{"tcp6", "[fe80::1%eth0]:80", true, "link-local"},
		{"tcp4", "169.254.169.254:80", true, "cloud metadata"},
		{"udp4", "93.184.216.34:53", true, "not TCP"},
		{"unix", "/run/shelldon.sock", true, "not TCP"},
		{"tcp", "example.com:80", true, "not an IP address and port"},
		{"tcp", "127.0.0.1", true, "not an IP address and port"},
		{"tcp", "", true, "not an IP address and port"},
	}
	for _, tt := range tests {
		t.Run(tt.network+" "+tt.address, func(t *testing.T) {
			err := DialControl(tt.firstHop)(tt.network, tt.address, nil)
			if tt.want == "" {
				if err != nil {
					t.Errorf("DialControl(%v)(%s, %s) = %v, want nil", tt.firstHop, tt.network, tt.address, err)
				}
				return
			}
			if !errors.Is(err, policy.ErrForbiddenAddress) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("DialControl(%v)(%s, %s) = %v, want policy.ErrForbiddenAddress naming %q", tt.firstHop, tt.network, tt.address, err, tt.want)
			}
		})
	}
}

// TestDialControlKernelDial runs the check where production runs it: as
// the Control of a real net.Dialer, against a real loopback listener, and
// checks that the refused dials never reached the listener.
func TestDialControlKernelDial(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)

	tests := []struct{ address, want string }{
		{"127.0.0.1:" + port, "loopback"},
		// The kernel sees 127.0.0.1; Control is handed the IPv4 form.
		{"[::ffff:127.0.0.1]:" + port, "loopback"},
		// On Linux a dial to 0.0.0.0 lands on the local listener.
		{"0.0.0.0:" + port, "unspecified"},
		// A name goes through the system resolver first.
		{"localhost:" + port, "loopback"},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			dialer := net.Dialer{Control: DialControl(true)}
			conn, err := dialer.Dial("tcp", tt.address)
			if err == nil {
				conn.Close()
				t.Fatalf("Dial(%s) with DialControl succeeded, want refusal", tt.address)
			}
			if !errors.Is(err, policy.ErrForbiddenAddress) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Dial(%s) = %v, want policy.ErrForbiddenAddress naming %q", tt.address, err, tt.want)
			}
			assertNextAcceptIsProbe(t, ln)
		})
	}
}

// assertNextAcceptIsProbe dials ln without the policy and checks that the
// first connection ln accepts is that probe, so no refused dial got
// through before it.
func assertNextAcceptIsProbe(t *testing.T, ln net.Listener) {
	t.Helper()
	probe, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	accepted, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer accepted.Close()
	if got, want := accepted.RemoteAddr().String(), probe.LocalAddr().String(); got != want {
		t.Errorf("listener accepted a connection from %s before the probe from %s: a refused dial connected", got, want)
	}
}

// TestDialer dials through the resolver and the rules as http_get and the
// sandbox's way out do: a refused address is never connected, whatever
// the rule for the first hop, and Route leads a judged address elsewhere
// without changing what is judged.
func TestDialer(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	server := netip.MustParseAddrPort(ln.Addr().String())
	toServer := func(netip.AddrPort) netip.AddrPort { return server }
	ctx := context.Background()

	tests := []struct {
		dialer  Dialer
		address string
		want    string // part of the refusal, or "" for a connection
	}{
		{Dialer{}, server.String(), "loopback"},
		{Dialer{FirstHop: true}, server.String(), "loopback"},
		{Dialer{}, "localhost:" + strconv.Itoa(int(server.Port())), "loopback"},
		{Dialer{Route: toServer}, "10.0.0.1:80", "private"},
		{Dialer{Route: toServer}, "[::ffff:169.254.169.254]:80", "link-local"},
		{Dialer{Route: toServer}, "93.184.216.34:80", ""},
		{Dialer{FirstHop: true, Route: toServer}, "10.0.0.1:80", ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s first hop %v", tt.address, tt.dialer.FirstHop), func(t *testing.T) {
			conn, err := tt.dialer.DialContext(ctx, "tcp", tt.address)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("DialContext(%s) = %v, want a connection", tt.address, err)
				}
				conn.Close()
				accepted, err := ln.Accept()
				if err != nil {
					t.Fatal(err)
				}
				accepted.Close()
				return
			}
			if err == nil {
				conn.Close()
				t.Fatalf("DialContext(%s) connected, want a refusal", tt.address)
			}
			if !errors.Is(err, policy.ErrForbiddenAddress) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("DialContext(%s) = %v, want policy.ErrForbiddenAddress naming %q", tt.address, err, tt.want)
			}
			assertNextAcceptIsProbe(t, ln)
		})
	}
}
