package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"

	"code.dny.dev/ssrf"
)

// The rules under http_get. An address falls in one of three classes:
//
//   - never: loopback, link-local (cloud metadata at 169.254.169.254),
//     unspecified (0.0.0.0/8; a dial to 0.0.0.0 reaches this host on
//     Linux), multicast, 100.64.0.0/10, the AWS IPv6 metadata address,
//     and every IPv6 form that carries one of these IPv4 addresses
//     (IPv4-mapped, NAT64, IPv4-compatible, 6to4, Teredo). 100.64.0.0/10
//     is here, not with the private ranges, because it holds services of
//     the machine's own provider rather than the owner's LAN: Alibaba
//     Cloud's metadata at 100.100.100.200, Tailscale's per-node service
//     at 100.100.100.100. The price is that a Tailscale peer cannot be
//     fetched by its 100.x address.
//   - approved only: every other IANA special-purpose range — private
//     (RFC 1918, ULA fc00::/7) and reserved (documentation, benchmarking,
//     240.0.0.0/4, the IPv6 space outside 2000::/3 …). The owner may ask
//     for a LAN host by name or address, so these are allowed on the first
//     hop, the URL the owner approved; a redirect into them is the attack
//     and is refused. A redirect back to the approved host is refused too:
//     were it allowed, a name that rebinds to a LAN address would let the
//     remote server choose the path fetched from the LAN host.
//   - public: the rest, allowed on every hop.

// ErrForbiddenURL is returned (wrapped) for a URL http_get must not fetch:
// a scheme other than http and https, credentials in the URL, no host, a
// bad port, or a redirect from https down to http. (A URL whose host is a
// forbidden IP address gets ErrForbiddenAddress.)
var ErrForbiddenURL = errors.New("forbidden URL")

// ErrForbiddenAddress is returned (wrapped) for an address http_get must
// not connect to; the message names the class of the address.
var ErrForbiddenAddress = errors.New("forbidden address")

// addrClass orders the classes from allowed to refused.
type addrClass int

const (
	addrPublic addrClass = iota
	addrApprovedOnly
	addrNever
)

const (
	addrReasonPrivate  = "private (allowed only for the approved host)"
	addrReasonReserved = "reserved (allowed only for the approved host)"
)

// addrSpecialPurpose holds the IANA special-purpose registries, kept by the
// ssrf module from the registries themselves. Only its address lists are
// used: networks and ports are for the caller to judge.
var addrSpecialPurpose = lazy[*ssrf.Guardian]{build: func() *ssrf.Guardian { return ssrf.New(ssrf.WithAnyNetwork(), ssrf.WithAnyPort()) }}

// The ranges are parsed at start, unlike the package's tables (lazy.go):
// a parse allocates nothing and takes well under a microsecond.
var (
	addrThisNetwork  = netip.MustParsePrefix("0.0.0.0/8")
	addrSharedSpace  = netip.MustParsePrefix("100.64.0.0/10")
	addrAWSMetadata6 = netip.MustParseAddr("fd00:ec2::254")
	addrNAT64        = netip.MustParsePrefix("64:ff9b::/96")
	addrCompatible   = netip.MustParsePrefix("::/96")
	addr6to4         = netip.MustParsePrefix("2002::/16")
	addrTeredo       = netip.MustParsePrefix("2001::/32")
)

// CheckURL parses raw and checks it is a URL http_get may fetch: http or
// https, no user info, a host, a port in 1–65535 if one is given, and, if
// the host is an IP address, one allowed for the approved host — so the
// owner is never asked to approve a fetch that could only be refused.
// Errors wrap ErrForbiddenURL or ErrForbiddenAddress.
func CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrForbiddenURL, addrParseError(err))
	}
	if err := addrCheckURL(u, true); err != nil {
		return nil, err
	}
	return u, nil
}

// CheckRedirect resolves location against from, the URL that answered
// with it, and checks the result as a redirect hop: the rules of CheckURL,
// an IP host must be public, and no step down from https to http, which
// would carry the rest of the exchange in clear.
func CheckRedirect(from *url.URL, location string) (*url.URL, error) {
	next, err := from.Parse(location)
	if err != nil {
		return nil, fmt.Errorf("%w: redirect target: %w", ErrForbiddenURL, addrParseError(err))
	}
	if err := addrCheckURL(next, false); err != nil {
		return nil, fmt.Errorf("redirect to %s: %w", next.Redacted(), err)
	}
	if from.Scheme == "https" && next.Scheme == "http" {
		return nil, fmt.Errorf("%w: redirect from https down to http (%s)", ErrForbiddenURL, next.Redacted())
	}
	return next, nil
}

// addrParseError drops the URL that url.Parse repeats in its error: a
// refused URL may carry credentials, and errors end up in logs and
// prompts.
func addrParseError(err error) error {
	var parseErr *url.Error
	if errors.As(err, &parseErr) {
		return parseErr.Err
	}
	return err
}

func addrCheckURL(u *url.URL, firstHop bool) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: scheme %q is not http or https", ErrForbiddenURL, u.Scheme)
	}
	if u.User != nil {
		return fmt.Errorf("%w: credentials in the URL", ErrForbiddenURL)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%w: no host", ErrForbiddenURL)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%w: port %q is not in 1-65535", ErrForbiddenURL, p)
		}
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return CheckAddress(ip, firstHop)
	}
	return nil
}

// CheckAddress says whether http_get may connect to ip. firstHop is true
// for the URL the owner approved, where private and reserved addresses are
// allowed; loopback, link-local, unspecified, multicast and 100.64.0.0/10
// (and IPv6 forms carrying them) are refused on every hop.
func CheckAddress(ip netip.Addr, firstHop bool) error {
	if !ip.IsValid() {
		return fmt.Errorf("%w: not a valid IP address", ErrForbiddenAddress)
	}
	class, reason := addrClassify(ip.WithZone(""))
	if class == addrNever || (class == addrApprovedOnly && !firstHop) {
		return fmt.Errorf("%w: %s is %s", ErrForbiddenAddress, ip, reason)
	}
	return nil
}

// addrClassify returns ip's class and, unless public, a reason naming it.
// ip carries no zone.
func addrClassify(ip netip.Addr) (addrClass, string) {
	if ip.Is4In6() {
		// The kernel dials the IPv4 address itself.
		return addrClassifyEmbedded(ip.Unmap(), "IPv4-mapped")
	}
	if addrNAT64.Contains(ip) {
		// The translator dials the IPv4 address; treating NAT64 like it lets
		// an IPv6-only board with DNS64 still reach public sites.
		b := ip.As16()
		return addrClassifyEmbedded(netip.AddrFrom4([4]byte(b[12:16])), "NAT64")
	}
	var never string
	if ip.Is4() {
		never = addrNever4(ip)
	} else {
		never = addrNever6(ip)
	}
	if never != "" {
		return addrNever, never
	}
	if addrSpecialPurpose.get().SafeAddr(ip) == nil {
		return addrPublic, ""
	}
	if ip.IsPrivate() {
		return addrApprovedOnly, addrReasonPrivate
	}
	return addrApprovedOnly, addrReasonReserved
}

func addrClassifyEmbedded(v4 netip.Addr, form string) (addrClass, string) {
	class, reason := addrClassify(v4)
	if class == addrPublic {
		return class, ""
	}
	return class, addrEmbeddedReason(reason, form, v4)
}

// addrNever4 names the never-allowed class of an IPv4 address, or "".
func addrNever4(ip netip.Addr) string {
	switch {
	case addrThisNetwork.Contains(ip):
		return "unspecified (this network, 0.0.0.0/8)"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsLinkLocalUnicast():
		return "link-local (cloud metadata)"
	case ip.IsMulticast():
		return "multicast"
	case addrSharedSpace.Contains(ip):
		return "shared address space 100.64.0.0/10 (carrier-grade NAT, cloud metadata)"
	}
	return ""
}

// addrNever6 names the never-allowed class of a native IPv6 address, or
// "". A tunnel form that carries an IPv4 address (IPv4-compatible, 6to4,
// Teredo) is never allowed when the IPv4 address is not; otherwise it is
// reserved, like the rest of the special-purpose space.
func addrNever6(ip netip.Addr) string {
	switch {
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsLinkLocalUnicast():
		return "link-local (cloud metadata)"
	case ip.IsMulticast():
		return "multicast"
	case ip == addrAWSMetadata6:
		return "cloud metadata"
	}
	b := ip.As16()
	var v4 netip.Addr
	var form string
	switch {
	case addrCompatible.Contains(ip):
		v4, form = netip.AddrFrom4([4]byte(b[12:16])), "IPv4-compatible"
	case addr6to4.Contains(ip):
		v4, form = netip.AddrFrom4([4]byte(b[2:6])), "6to4"
	case addrTeredo.Contains(ip):
		// RFC 4380 stores the client's IPv4 address inverted.
		v4, form = netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), "Teredo"
	default:
		return ""
	}
	return addrEmbeddedReason(addrNever4(v4), form, v4)
}

func addrEmbeddedReason(reason, form string, v4 netip.Addr) string {
	if reason == "" {
		return ""
	}
	return fmt.Sprintf("%s (%s, carrying %s)", reason, form, v4)
}
