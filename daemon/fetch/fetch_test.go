package fetch

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"shelldon/policy"
)

// The made-up internet the tests fetch from. Names resolve through a real
// DNS server on loopback; dials for made-up addresses are rerouted to
// loopback test servers after the policy has judged the made-up address.
var (
	publicAddr      = netip.MustParseAddr("93.184.216.34")
	otherPublicAddr = netip.MustParseAddr("93.184.216.35")
	deadPublicAddr  = netip.MustParseAddr("93.184.216.99")
	securePublic    = netip.MustParseAddr("93.184.216.40")
	nat64Public     = netip.MustParseAddr("64:ff9b::5db8:d822") // 93.184.216.34
	lanAddr         = netip.MustParseAddr("10.0.0.1")
	loopbackAddr    = netip.MustParseAddr("127.0.0.1")
	metadataAddr    = netip.MustParseAddr("169.254.169.254")
	mappedLoopback  = netip.MustParseAddr("::ffff:127.0.0.1")
	nat64Loopback   = netip.MustParseAddr("64:ff9b::7f00:1")
	cgnatMetadata   = netip.MustParseAddr("100.100.100.200")
	proxyAddr       = netip.MustParseAddr("93.184.216.50")
)

// proxyChildEnv marks the process TestGetIgnoresProxyFromEnvironment starts.
const proxyChildEnv = "SHELLDON_FETCH_PROXY_CHILD"

var names = map[string][]netip.Addr{
	"public.test":       {publicAddr},
	"other.test":        {otherPublicAddr},
	"nat64-public.test": {nat64Public},
	"example.com":       {securePublic}, // the name in httptest's certificate
	"lan.test":          {lanAddr},
	"loopback.test":     {loopbackAddr},
	"metadata.test":     {metadataAddr},
	"mapped.test":       {mappedLoopback},
	"nat64.test":        {nat64Loopback},
	"cgnat.test":        {cgnatMetadata},
	"rebind.test":       {publicAddr, loopbackAddr},
	"rebind-dead.test":  {deadPublicAddr, loopbackAddr},
	"proxy.test":        {proxyAddr},
}

// server is a loopback test server that counts the requests it answers.
type server struct {
	*httptest.Server
	hits atomic.Int64
}

func newServer(t *testing.T, tls bool, handler http.Handler) *server {
	t.Helper()
	s := &server{}
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		handler.ServeHTTP(w, r)
	})
	if tls {
		s.Server = httptest.NewTLSServer(counted)
	} else {
		s.Server = httptest.NewServer(counted)
	}
	t.Cleanup(s.Close)
	return s
}

func (s *server) addrPort(t *testing.T) netip.AddrPort {
	t.Helper()
	return netip.MustParseAddrPort(s.Listener.Addr().String())
}

type testNet struct {
	resolver *net.Resolver
	routes   map[netip.Addr]netip.AddrPort
	// closed is a loopback port nothing listens on: where a made-up
	// address with no server goes, to be refused by the kernel.
	closed  netip.AddrPort
	rootCAs *x509.CertPool

	public, secure, lan, trap *server
	dnsQueries                atomic.Int64
}

// newTestNet starts the servers and the DNS server, and checks when the
// test ends that nothing reached the trap, the server behind every
// address the policy must refuse.
func newTestNet(t *testing.T) *testNet {
	t.Helper()
	n := &testNet{}
	n.public = newServer(t, false, publicHandler())
	n.secure = newServer(t, true, secureHandler())
	n.lan = newServer(t, false, lanHandler())
	n.trap = newServer(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "secrets")
	}))
	n.routes = map[netip.Addr]netip.AddrPort{
		publicAddr:      n.public.addrPort(t),
		otherPublicAddr: n.public.addrPort(t),
		nat64Public:     n.public.addrPort(t),
		securePublic:    n.secure.addrPort(t),
		lanAddr:         n.lan.addrPort(t),
		loopbackAddr:    n.trap.addrPort(t),
		metadataAddr:    n.trap.addrPort(t),
		nat64Loopback:   n.trap.addrPort(t),
		cgnatMetadata:   n.trap.addrPort(t),
	}
	n.closed = closedPort(t)
	n.rootCAs = x509.NewCertPool()
	n.rootCAs.AddCert(n.secure.Certificate())
	n.resolver = n.serveDNS(t)
	t.Cleanup(func() {
		if hits := n.trap.hits.Load(); hits != 0 {
			t.Errorf("a forbidden address was reached: the trap server answered %d requests", hits)
		}
	})
	return n
}

func (n *testNet) getter() Getter {
	return Getter{Resolver: n.resolver, reroute: n.reroute, rootCAs: n.rootCAs}
}

func (n *testNet) reroute(addr netip.AddrPort) netip.AddrPort {
	if real, ok := n.routes[addr.Addr().Unmap()]; ok {
		return real
	}
	if real, ok := n.routes[addr.Addr()]; ok {
		return real
	}
	return n.closed
}

func closedPort(t *testing.T) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.MustParseAddrPort(ln.Addr().String())
	ln.Close()
	return addr
}

func publicHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "hello from public")
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", r.URL.Query().Get("to"))
		w.WriteHeader(http.StatusFound)
	})
	mux.HandleFunc("/chain", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://other.test/chain2", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/chain2", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://lan.test/", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/hops/{n}", func(w http.ResponseWriter, r *http.Request) {
		left, err := strconv.Atoi(r.PathValue("n"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if left == 0 {
			fmt.Fprint(w, "arrived")
			return
		}
		w.Header().Set("Location", strconv.Itoa(left-1)) // relative
		w.WriteHeader(http.StatusSeeOther)
	})
	mux.HandleFunc("/bytes/{n}", func(w http.ResponseWriter, r *http.Request) {
		size, err := strconv.Atoi(r.PathValue("n"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Write(bytes.Repeat([]byte("x"), size))
	})
	mux.HandleFunc("/no-location", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusFound)
		fmt.Fprint(w, "moved, somewhere")
	})
	return mux
}

func secureHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "secure hello")
	})
	mux.HandleFunc("/down", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://public.test/", http.StatusFound)
	})
	return mux
}

func lanHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello from the LAN")
	})
	mux.HandleFunc("/self", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/", http.StatusFound)
	})
	return mux
}

// serveDNS answers A and AAAA queries for names over UDP on loopback, and
// returns a resolver that asks it and nothing else.
func (n *testNet) serveDNS(t *testing.T) *net.Resolver {
	t.Helper()
	conn, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			size, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			n.dnsQueries.Add(1)
			if reply := dnsReply(buf[:size]); reply != nil {
				conn.WriteTo(reply, from)
			}
		}
	}()
	server := conn.LocalAddr().String()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp4", server)
		},
	}
}

// dnsReply answers one DNS query from names, or returns nil for a packet
// it cannot read (RFC 1035 section 4.1).
func dnsReply(query []byte) []byte {
	const (
		typeA    = 1
		typeAAAA = 28
	)
	if len(query) < 12 || binary.BigEndian.Uint16(query[4:6]) != 1 {
		return nil
	}
	var labels []string
	end := 12
	for {
		if end >= len(query) {
			return nil
		}
		size := int(query[end])
		end++
		if size == 0 {
			break
		}
		if size > 63 || end+size > len(query) {
			return nil
		}
		labels = append(labels, strings.ToLower(string(query[end:end+size])))
		end += size
	}
	if end+4 > len(query) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(query[end:])
	question := query[12 : end+4]

	addrs, known := names[strings.Join(labels, ".")]
	var answers [][]byte
	for _, a := range addrs {
		if (qtype == typeA && a.Is4()) || (qtype == typeAAAA && a.Is6()) {
			answers = append(answers, a.AsSlice())
		}
	}
	// Response, authoritative, recursion available, RD copied from the query.
	flags := uint16(0x8000|0x0400|0x0080) | binary.BigEndian.Uint16(query[2:4])&0x0100
	if !known {
		flags |= 3 // NXDOMAIN
	}
	reply := append([]byte{}, query[0:2]...)
	reply = binary.BigEndian.AppendUint16(reply, flags)
	reply = binary.BigEndian.AppendUint16(reply, 1)
	reply = binary.BigEndian.AppendUint16(reply, uint16(len(answers)))
	reply = binary.BigEndian.AppendUint16(reply, 0)
	reply = binary.BigEndian.AppendUint16(reply, 0)
	reply = append(reply, question...)
	for _, rdata := range answers {
		reply = append(reply, 0xc0, 12) // the name, by pointer to the question
		reply = binary.BigEndian.AppendUint16(reply, qtype)
		reply = binary.BigEndian.AppendUint16(reply, 1) // class IN
		reply = binary.BigEndian.AppendUint32(reply, 0) // TTL
		reply = binary.BigEndian.AppendUint16(reply, uint16(len(rdata)))
		reply = append(reply, rdata...)
	}
	return reply
}

func redirectTo(target string) string {
	return "http://public.test/redirect?to=" + target
}

func TestGetAllowed(t *testing.T) {
	n := newTestNet(t)
	tests := []struct {
		name, url, wantBody, wantURL string
		wantHops                     int
	}{
		{"approved public host", "http://public.test/", "hello from public", "http://public.test/", 1},
		{"public host through NAT64", "http://nat64-public.test/", "hello from public", "http://nat64-public.test/", 1},
		{"LAN host the owner approved", "http://lan.test/", "hello from the LAN", "http://lan.test/", 1},
		{"LAN host by address", "http://10.0.0.1/", "hello from the LAN", "http://10.0.0.1/", 1},
		{"https", "https://example.com/", "secure hello", "https://example.com/", 1},
		{"redirect to another public host", redirectTo("http://other.test/"), "hello from public", "http://other.test/", 2},
		{"redirect up from http to https", redirectTo("https://example.com/"), "secure hello", "https://example.com/", 2},
		{"five redirects, the limit", "http://public.test/hops/5", "arrived", "http://public.test/hops/0", 6},
		{"a name with a public and a loopback address", "http://rebind.test/", "hello from public", "http://rebind.test/", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := n.getter().Get(context.Background(), tt.url)
			if err != nil {
				t.Fatalf("Get(%q) error = %v, want none", tt.url, err)
			}
			if res.Status != http.StatusOK || string(res.Body) != tt.wantBody || res.URL != tt.wantURL || len(res.Hops) != tt.wantHops || res.Truncated {
				t.Errorf("Get(%q) = %d %q from %s after hops %q (truncated %v), want 200 %q from %s after %d hops",
					tt.url, res.Status, res.Body, res.URL, res.Hops, res.Truncated, tt.wantBody, tt.wantURL, tt.wantHops)
			}
			if res.Hops[0] != tt.url {
				t.Errorf("Get(%q) hop 0 = %s, want the approved URL", tt.url, res.Hops[0])
			}
		})
	}
	res, err := n.getter().Get(context.Background(), "http://public.test/")
	if err != nil || res.ContentType != "text/plain; charset=utf-8" {
		t.Errorf("Get(public) content type = %q, %v; want text/plain; charset=utf-8", res.ContentType, err)
	}
}

// TestGetRefusesForbiddenAddresses checks the addresses refused on every
// hop, for the approved host and for a redirect target, when they come
// from a DNS answer and are caught at dial time.
func TestGetRefusesForbiddenAddresses(t *testing.T) {
	n := newTestNet(t)
	tests := []struct{ host, reason string }{
		{"loopback.test", "127.0.0.1 is loopback"},
		{"metadata.test", "169.254.169.254 is link-local (cloud metadata)"},
		{"mapped.test", "loopback (IPv4-mapped, carrying 127.0.0.1)"},
		{"nat64.test", "loopback (NAT64, carrying 127.0.0.1)"},
		{"cgnat.test", "100.64.0.0/10"},
	}
	for _, tt := range tests {
		for _, via := range []struct{ name, url, hop string }{
			{"approved", "http://" + tt.host + "/", "hop 0"},
			{"redirected", redirectTo("http://" + tt.host + "/"), "hop 1"},
		} {
			t.Run(tt.host+" "+via.name, func(t *testing.T) {
				res, err := n.getter().Get(context.Background(), via.url)
				if !errors.Is(err, policy.ErrForbiddenAddress) || !strings.Contains(err.Error(), tt.reason) || !strings.Contains(err.Error(), via.hop) {
					t.Errorf("Get(%q) = %d, %v; want ErrForbiddenAddress at %s naming %q", via.url, res.Status, err, via.hop, tt.reason)
				}
			})
		}
	}
}

func TestGetRefusesPrivateOnRedirectHops(t *testing.T) {
	tests := []struct {
		name, url, want string
		wantLANHits     int64
	}{
		{"redirect to a LAN name", redirectTo("http://lan.test/"), "hop 1, GET http://lan.test/", 0},
		{"redirect to a LAN address", redirectTo("http://10.0.0.1/"), "hop 1: redirect to http://10.0.0.1/", 0},
		{"chain public, public, LAN", "http://public.test/chain", "hop 2, GET http://lan.test/", 0},
		// Decided: only hop 0 may be private, even back to the same host.
		{"LAN host redirecting to itself", "http://lan.test/self", "hop 1, GET http://lan.test/", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newTestNet(t)
			_, err := n.getter().Get(context.Background(), tt.url)
			if !errors.Is(err, policy.ErrForbiddenAddress) || !strings.Contains(err.Error(), tt.want) ||
				!strings.Contains(err.Error(), "private (allowed only for the approved host)") {
				t.Errorf("Get(%q) error = %v, want ErrForbiddenAddress naming %q and the private class", tt.url, err, tt.want)
			}
			if hits := n.lan.hits.Load(); hits != tt.wantLANHits {
				t.Errorf("Get(%q): the LAN server answered %d requests, want %d", tt.url, hits, tt.wantLANHits)
			}
		})
	}
}

func TestGetRedirectLimit(t *testing.T) {
	n := newTestNet(t)
	_, err := n.getter().Get(context.Background(), "http://public.test/hops/6")
	if !errors.Is(err, ErrTooManyRedirects) || !strings.Contains(err.Error(), "hop 5") {
		t.Errorf("Get(6 redirects) error = %v, want ErrTooManyRedirects at hop 5", err)
	}
	getter := n.getter()
	getter.MaxRedirects = 1
	if _, err := getter.Get(context.Background(), "http://public.test/hops/2"); !errors.Is(err, ErrTooManyRedirects) {
		t.Errorf("Get(2 redirects, MaxRedirects 1) error = %v, want ErrTooManyRedirects", err)
	}
}

// TestGetMultiAddress: a name that resolves to a public and a loopback
// address. Whichever the resolver lists first, the loopback address must
// never be connected to (the trap checks that), and when the public one
// is down the refusal names loopback.
func TestGetMultiAddress(t *testing.T) {
	n := newTestNet(t)
	_, err := n.getter().Get(context.Background(), "http://rebind-dead.test/")
	if !errors.Is(err, policy.ErrForbiddenAddress) || !strings.Contains(err.Error(), "127.0.0.1 is loopback") {
		t.Errorf("Get(rebind-dead) error = %v, want ErrForbiddenAddress naming loopback", err)
	}
}

func TestGetRefusesURLs(t *testing.T) {
	tests := []struct {
		name, url, want string
		// redirected is false when the approved URL itself is refused,
		// which must happen before any name is looked up.
		redirected bool
	}{
		{"user info", "http://user:secret@public.test/", "credentials", false},
		{"user name only", "http://user@public.test/", "credentials", false},
		{"ftp", "ftp://public.test/", "scheme", false},
		{"file", "file:///etc/passwd", "scheme", false},
		{"gopher", "gopher://public.test:70/_", "scheme", false},
		{"redirect to user info", redirectTo("http://u:p@other.test/"), "hop 1: redirect to http://u:xxxxx@other.test/", true},
		{"redirect to ftp", redirectTo("ftp://other.test/"), "hop 1", true},
		{"redirect to file", redirectTo("file:///etc/passwd"), "scheme", true},
		{"redirect down from https to http", "https://example.com/down", "https down to http", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newTestNet(t)
			_, err := n.getter().Get(context.Background(), tt.url)
			if !errors.Is(err, policy.ErrForbiddenURL) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Get(%q) error = %v, want ErrForbiddenURL naming %q", tt.url, err, tt.want)
			}
			if queries := n.dnsQueries.Load(); !tt.redirected && queries != 0 {
				t.Errorf("Get(%q) sent %d DNS queries before refusing the URL, want 0", tt.url, queries)
			}
			// Only the first hop may reach the public server.
			wantPublicHits := int64(0)
			if strings.HasPrefix(tt.url, "http://public.test/") {
				wantPublicHits = 1
			}
			if hits := n.public.hits.Load(); hits != wantPublicHits {
				t.Errorf("Get(%q): the public server answered %d requests, want %d", tt.url, hits, wantPublicHits)
			}
		})
	}
}

func TestGetBodyCap(t *testing.T) {
	n := newTestNet(t)
	getter := n.getter()
	getter.MaxBytes = 1000
	tests := []struct {
		size          int
		wantLen       int
		wantTruncated bool
	}{
		{0, 0, false},
		{999, 999, false},
		{1000, 1000, false},
		{1001, 1000, true},
		{5 << 20, 1000, true},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.size), func(t *testing.T) {
			url := fmt.Sprintf("http://public.test/bytes/%d", tt.size)
			res, err := getter.Get(context.Background(), url)
			if err != nil || len(res.Body) != tt.wantLen || res.Truncated != tt.wantTruncated {
				t.Errorf("Get(%d bytes, cap 1000) = %d bytes, truncated %v, %v; want %d, %v", tt.size, len(res.Body), res.Truncated, err, tt.wantLen, tt.wantTruncated)
			}
		})
	}
}

// TestGetIgnoresProxyFromEnvironment runs in a fresh test process, since
// net/http reads the proxy variables once per process and an earlier test
// would have fixed them.
func TestGetIgnoresProxyFromEnvironment(t *testing.T) {
	if os.Getenv(proxyChildEnv) == "" {
		child := exec.Command(os.Args[0], "-test.run=^TestGetIgnoresProxyFromEnvironment$", "-test.count=1")
		child.Env = append(os.Environ(), proxyChildEnv+"=1")
		if out, err := child.CombinedOutput(); err != nil {
			t.Fatalf("the test in a fresh process: %v\n%s", err, out)
		}
		return
	}
	n := newTestNet(t)
	proxy := newServer(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "from the proxy")
	}))
	n.routes[proxyAddr] = proxy.addrPort(t)
	for _, name := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"} {
		t.Setenv(name, "http://proxy.test/")
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	for _, tt := range []struct{ url, want string }{
		{"http://public.test/", "hello from public"},
		{"https://example.com/", "secure hello"},
	} {
		res, err := n.getter().Get(context.Background(), tt.url)
		if err != nil || string(res.Body) != tt.want {
			t.Errorf("Get(%q) with a proxy in the environment = %q, %v; want %q", tt.url, res.Body, err, tt.want)
		}
	}
	if hits := proxy.hits.Load(); hits != 0 {
		t.Errorf("the proxy from the environment answered %d requests, want 0", hits)
	}
}

func TestGetRedirectWithoutLocation(t *testing.T) {
	n := newTestNet(t)
	res, err := n.getter().Get(context.Background(), "http://public.test/no-location")
	if err != nil || res.Status != http.StatusFound || string(res.Body) != "moved, somewhere" {
		t.Errorf("Get(302 without Location) = %d %q, %v; want 302 and its body", res.Status, res.Body, err)
	}
}

func TestGetUnknownHostFailsClosed(t *testing.T) {
	n := newTestNet(t)
	_, err := n.getter().Get(context.Background(), "http://nowhere.test/")
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Errorf("Get(unknown host) error = %v, want a not-found DNS error", err)
	}
}

func TestGetHonoursCancel(t *testing.T) {
	n := newTestNet(t)
	reached := make(chan struct{})
	n.routes[publicAddr] = newServer(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(reached)
		<-r.Context().Done()
	})).addrPort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-reached:
			cancel()
		case <-ctx.Done():
		}
	}()
	if _, err := n.getter().Get(ctx, "http://public.test/"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get, cancelled while the server waits, error = %v, want context.Canceled", err)
	}
}

// TestGetKernelDial runs Get with no reroute, as production does: the
// policy runs as the Control of a real dial, and the loopback server
// behind the name must see nothing.
func TestGetKernelDial(t *testing.T) {
	n := newTestNet(t)
	port := strconv.Itoa(int(n.trap.addrPort(t).Port()))
	tests := []struct {
		name   string
		getter Getter
		url    string
	}{
		{"name resolving to loopback", Getter{Resolver: n.resolver}, "http://loopback.test:" + port + "/"},
		{"name resolving to IPv4-mapped loopback", Getter{Resolver: n.resolver}, "http://mapped.test:" + port + "/"},
		{"localhost through the system resolver", Getter{}, "http://localhost:" + port + "/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.getter.Get(context.Background(), tt.url)
			if !errors.Is(err, policy.ErrForbiddenAddress) || !strings.Contains(err.Error(), "loopback") {
				t.Errorf("Get(%q) error = %v, want ErrForbiddenAddress naming loopback", tt.url, err)
			}
		})
	}
}

func TestGetBadInput(t *testing.T) {
	n := newTestNet(t)
	for _, raw := range []string{"", " ", "::", "http://", "http://[::1", "http://%zz/", "\x00", "http://public.test:99999/",
		"http://" + strings.Repeat("a", 64) + ".test/", "http://[::ffff:127.0.0.1]:80/", "https://[fe80::1%25eth0]/"} {
		t.Run(fmt.Sprintf("%q", raw), func(t *testing.T) {
			if res, err := n.getter().Get(context.Background(), raw); err == nil {
				t.Errorf("Get(%q) = %d, nil; want an error", raw, res.Status)
			}
		})
	}
}
