package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"shelldon/policy"
)

// Defaults for the zero Getter.
const (
	DefaultMaxBytes     = 64 << 10
	DefaultMaxRedirects = 5
	// DefaultTimeout bounds the whole fetch, every hop and the body, well
	// inside the worker's 25 s turn budget.
	DefaultTimeout = 15 * time.Second
)

// ErrTooManyRedirects is returned (wrapped) when the chain of redirects is
// longer than the Getter allows.
var ErrTooManyRedirects = errors.New("too many redirects")

const (
	userAgent      = "shelldon http_get"
	maxHeaderBytes = 64 << 10
)

// Getter fetches one URL the owner approved. The zero Getter is ready to
// use; a field left zero (or negative) takes its default. Refusals wrap
// policy.ErrForbiddenURL, policy.ErrForbiddenAddress or
// ErrTooManyRedirects.
type Getter struct {
	// Resolver looks up host names; nil means net.DefaultResolver.
	Resolver *net.Resolver
	// MaxBytes caps the body kept; DefaultMaxBytes if zero.
	MaxBytes int64
	// MaxRedirects caps the redirects followed; DefaultMaxRedirects if zero.
	MaxRedirects int
	// Timeout bounds the whole fetch; DefaultTimeout if zero.
	Timeout time.Duration

	// reroute, set only by tests, sends the dial for a made-up address to
	// a local server, while the policy still judges the made-up address:
	// the test servers all live on loopback, which the policy refuses.
	reroute func(netip.AddrPort) netip.AddrPort
	// rootCAs, set only by tests, replaces the system roots for https.
	rootCAs *x509.CertPool
}

// Response is what the last hop answered.
type Response struct {
	// URL is the URL of the last hop.
	URL         string
	Status      int
	ContentType string
	// Body is at most MaxBytes of the body, decompressed.
	Body []byte
	// Truncated says the body was longer than MaxBytes.
	Truncated bool
	// Hops are the URLs requested, in order: hop 0 is the approved URL,
	// hop n the target of the nth redirect.
	Hops []string
}

// Get fetches rawURL with GET, following redirects by hand. Every hop's URL
// goes through the policy (policy.CheckURL for hop 0, policy.CheckRedirect
// for the others), and every address dialled through Dialer, which
// allows private addresses on hop 0 only. A 3xx answer without a
// Location is returned as it is.
func (g Getter) Get(ctx context.Context, rawURL string) (Response, error) {
	ctx, cancel := context.WithTimeout(ctx, positiveOr(g.Timeout, DefaultTimeout))
	defer cancel()

	target, err := policy.CheckURL(rawURL)
	if err != nil {
		// Not echoed: a refused URL may carry credentials.
		return Response{}, fmt.Errorf("approved URL: %w", err)
	}
	maxRedirects := positiveOr(g.MaxRedirects, DefaultMaxRedirects)
	var hops []string
	for hop := 0; ; hop++ {
		hops = append(hops, target.String())
		res, err := g.roundTrip(ctx, target, hop == 0)
		if err != nil {
			return Response{}, fmt.Errorf("hop %d, GET %s: %w", hop, target, err)
		}
		location := res.Header.Get("Location")
		if !isRedirect(res.StatusCode) || location == "" {
			return g.read(res, target, hops)
		}
		res.Body.Close()
		if hop == maxRedirects {
			return Response{}, fmt.Errorf("hop %d, GET %s: %w (the limit is %d)", hop, target, ErrTooManyRedirects, maxRedirects)
		}
		next, err := policy.CheckRedirect(target, location)
		if err != nil {
			return Response{}, fmt.Errorf("hop %d: %w", hop+1, err)
		}
		target = next
	}
}

// roundTrip sends one GET on a transport of its own, whose dialler carries
// this hop's address rule. The transport uses no proxy (the environment's
// would route around the address checks) and keeps no connection alive,
// so no later hop can reuse a connection judged under hop 0's rule.
func (g Getter) roundTrip(ctx context.Context, target *url.URL, firstHop bool) (*http.Response, error) {
	transport := &http.Transport{
		Proxy:                  nil,
		DialContext:            Dialer{Resolver: g.Resolver, FirstHop: firstHop, Route: g.reroute}.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: g.rootCAs},
		DisableKeepAlives:      true,
		MaxResponseHeaderBytes: maxHeaderBytes,
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("User-Agent", userAgent)
	return transport.RoundTrip(req)
}

// read keeps at most MaxBytes of the body, reading one byte more to learn
// whether there was more, so a large answer is never held whole.
func (g Getter) read(res *http.Response, target *url.URL, hops []string) (Response, error) {
	defer res.Body.Close()
	limit := positiveOr(g.MaxBytes, DefaultMaxBytes)
	body, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		return Response{}, fmt.Errorf("read body of %s: %w", target, err)
	}
	truncated := int64(len(body)) > limit
	if truncated {
		body = body[:limit]
	}
	return Response{
		URL:         target.String(),
		Status:      res.StatusCode,
		ContentType: res.Header.Get("Content-Type"),
		Body:        body,
		Truncated:   truncated,
		Hops:        hops,
	}, nil
}

func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

func positiveOr[N int | int64 | time.Duration](n, fallback N) N {
	if n > 0 {
		return n
	}
	return fallback
}
