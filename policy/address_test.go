package policy

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestCheckAddress(t *testing.T) {
	const (
		public   = "public"
		approved = "approved only"
		never    = "never"
	)
	tests := []struct {
		addr   string
		class  string
		reason string // part of the refusal message
	}{
		{"93.184.216.34", public, ""},
		{"1.1.1.1", public, ""},
		{"2606:4700:4700::1111", public, ""},
		{"::ffff:93.184.216.34", public, ""},
		{"64:ff9b::5db8:d822", public, ""}, // NAT64 of 93.184.216.34

		{"127.0.0.1", never, "loopback"},
		{"127.255.255.254", never, "loopback"},
		{"::1", never, "loopback"},
		{"169.254.169.254", never, "link-local (cloud metadata)"},
		{"169.254.0.1", never, "link-local"},
		{"fe80::1", never, "link-local"},
		{"fe80::1%eth0", never, "link-local"},
		{"0.0.0.0", never, "unspecified"},
		{"0.1.2.3", never, "unspecified"},
		{"::", never, "unspecified"},
		{"224.0.0.1", never, "multicast"},
		{"239.255.255.250", never, "multicast"},
		{"ff02::1", never, "multicast"},
		{"ff05::1:3", never, "multicast"},
		{"100.64.0.1", never, "100.64.0.0/10"},
		{"100.100.100.200", never, "100.64.0.0/10"},
		{"100.127.255.254", never, "100.64.0.0/10"},
		{"fd00:ec2::254", never, "cloud metadata"},
		{"::ffff:127.0.0.1", never, "loopback (IPv4-mapped, carrying 127.0.0.1)"},
		{"::ffff:169.254.169.254", never, "link-local (cloud metadata) (IPv4-mapped"},
		{"::ffff:100.100.100.200", never, "100.64.0.0/10"},
		{"64:ff9b::7f00:1", never, "loopback (NAT64, carrying 127.0.0.1)"},
		{"64:ff9b::a9fe:a9fe", never, "link-local (cloud metadata) (NAT64, carrying 169.254.169.254)"},
		{"64:ff9b::", never, "unspecified (this network, 0.0.0.0/8) (NAT64"},
		{"::7f00:1", never, "loopback (IPv4-compatible, carrying 127.0.0.1)"},
		{"2002:7f00:1::1", never, "loopback (6to4, carrying 127.0.0.1)"},
		{"2002:a9fe:a9fe::1", never, "link-local (cloud metadata) (6to4"},
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", never, "loopback (Teredo, carrying 127.0.0.1)"},

		{"10.0.0.1", approved, "private (allowed only for the approved host)"},
		{"172.16.5.4", approved, "private"},
		{"192.168.1.10", approved, "private"},
		{"fc00::1", approved, "private"},
		{"fd12:3456::1", approved, "private"},
		{"::ffff:10.0.0.1", approved, "private (allowed only for the approved host) (IPv4-mapped"},
		{"64:ff9b::a00:1", approved, "private (allowed only for the approved host) (NAT64"},
		{"198.18.0.1", approved, "reserved (allowed only for the approved host)"},
		{"192.0.2.1", approved, "reserved"},
		{"198.51.100.7", approved, "reserved"},
		{"203.0.113.9", approved, "reserved"},
		{"240.0.0.1", approved, "reserved"},
		{"255.255.255.255", approved, "reserved"},
		{"192.0.0.8", approved, "reserved"},
		{"2001:db8::1", approved, "reserved"},
		{"3fff::1", approved, "reserved"},
		{"fec0::1", approved, "reserved"},
		{"64:ff9b:1::a00:1", approved, "reserved"},
		{"::a00:1", approved, "reserved"},
		{"2002:5db8:d822::1", approved, "reserved"},
		{"2001:0:4136:e378:8000:63bf:a247:27cb", approved, "reserved"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			ip := netip.MustParseAddr(tt.addr)
			for _, firstHop := range []bool{true, false} {
				err := CheckAddress(ip, firstHop)
				refused := tt.class == never || (tt.class == approved && !firstHop)
				if !refused {
					if err != nil {
						t.Errorf("CheckAddress(%s, firstHop=%v) = %v, want nil", tt.addr, firstHop, err)
					}
					continue
				}
				if !errors.Is(err, ErrForbiddenAddress) || !strings.Contains(err.Error(), tt.reason) {
					t.Errorf("CheckAddress(%s, firstHop=%v) = %v, want ErrForbiddenAddress naming %q", tt.addr, firstHop, err, tt.reason)
				}
			}
		})
	}
}

func TestCheckAddressInvalid(t *testing.T) {
	for _, firstHop := range []bool{true, false} {
		if err := CheckAddress(netip.Addr{}, firstHop); !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("CheckAddress(zero Addr, %v) = %v, want ErrForbiddenAddress", firstHop, err)
		}
	}
}

func TestCheckURL(t *testing.T) {
	tests := []struct {
		raw     string
		want    error  // nil for allowed
		wantURL string // the parsed URL when allowed
	}{
		{"http://example.com/", nil, "http://example.com/"},
		{"https://example.com:8443/a?b=c#d", nil, "https://example.com:8443/a?b=c#d"},
		{"HTTP://Example.COM/", nil, "http://Example.COM/"},
		{"http://example.com:/", nil, "http://example.com:/"},
		{"http://10.0.0.1/", nil, "http://10.0.0.1/"},
		{"http://[fd00::1]:8080/", nil, "http://[fd00::1]:8080/"},
		{"http://93.184.216.34/", nil, "http://93.184.216.34/"},

		{"ftp://example.com/", ErrForbiddenURL, ""},
		{"file:///etc/passwd", ErrForbiddenURL, ""},
		{"gopher://example.com:70/_GET", ErrForbiddenURL, ""},
		{"javascript:alert(1)", ErrForbiddenURL, ""},
		{"example.com/x", ErrForbiddenURL, ""},
		{"//example.com/", ErrForbiddenURL, ""},
		{"http://user:pass@example.com/", ErrForbiddenURL, ""},
		{"http://user@example.com/", ErrForbiddenURL, ""},
		{"http://:@example.com/", ErrForbiddenURL, ""},
		{"https://token:x-oauth@example.com/", ErrForbiddenURL, ""},
		{"http:///path", ErrForbiddenURL, ""},
		{"http:example.com", ErrForbiddenURL, ""},
		{"http://example.com:0/", ErrForbiddenURL, ""},
		{"http://example.com:65536/", ErrForbiddenURL, ""},
		{"http://example.com:99999999999999999999/", ErrForbiddenURL, ""},
		{"", ErrForbiddenURL, ""},
		{"http://[::1", ErrForbiddenURL, ""},
		{"http://exa mple.com/", ErrForbiddenURL, ""},
		{"http://%31%32%37.0.0.1/", ErrForbiddenURL, ""},
		{"\x00", ErrForbiddenURL, ""},
		{"http://example.com/\n", ErrForbiddenURL, ""},

		{"http://127.0.0.1/", ErrForbiddenAddress, ""},
		{"http://[::1]:8080/", ErrForbiddenAddress, ""},
		{"http://169.254.169.254/latest/meta-data/", ErrForbiddenAddress, ""},
		{"http://[::ffff:127.0.0.1]/", ErrForbiddenAddress, ""},
		{"http://[64:ff9b::7f00:1]/", ErrForbiddenAddress, ""},
		{"http://[fe80::1%25eth0]/", ErrForbiddenAddress, ""},
		{"http://0.0.0.0:8080/", ErrForbiddenAddress, ""},
		{"http://100.100.100.200/", ErrForbiddenAddress, ""},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			u, err := CheckURL(tt.raw)
			if tt.want == nil {
				if err != nil || u.String() != tt.wantURL {
					t.Errorf("CheckURL(%q) = %v, %v; want %s, nil", tt.raw, u, err, tt.wantURL)
				}
				return
			}
			if !errors.Is(err, tt.want) || u != nil {
				t.Errorf("CheckURL(%q) = %v, %v; want nil, %v", tt.raw, u, err, tt.want)
			}
		})
	}
}

func TestCheckURLDoesNotRepeatCredentials(t *testing.T) {
	from, err := url.Parse("http://a.example/")
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{"http://u:s3cret@[::1", "http://u:s3cret@example.com/", "http://u:s3cret@example.com:0/", "ftp://u:s3cret@example.com/"} {
		if _, err := CheckURL(raw); err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("CheckURL(%q) = %v, want an error without the password", raw, err)
		}
		if _, err := CheckRedirect(from, raw); err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("CheckRedirect(%q) = %v, want an error without the password", raw, err)
		}
	}
}

func TestCheckRedirect(t *testing.T) {
	tests := []struct {
		from, location string
		want           string // the next URL, or "" when refused
		wantErr        error
		wantMsg        string
	}{
		{"https://a.example/x/y", "/z", "https://a.example/z", nil, ""},
		{"https://a.example/x/y", "z?q=1", "https://a.example/x/z?q=1", nil, ""},
		{"https://a.example/x/y", "//b.example/w", "https://b.example/w", nil, ""},
		{"https://a.example/x/y", "https://b.example:8443/", "https://b.example:8443/", nil, ""},
		{"http://a.example/", "https://a.example/", "https://a.example/", nil, ""},
		{"http://a.example/", "http://93.184.216.34/", "http://93.184.216.34/", nil, ""},

		{"https://a.example/", "http://a.example/", "", ErrForbiddenURL, "https down to http"},
		{"https://a.example/", "//b.example/", "https://b.example/", nil, ""},
		{"http://a.example/", "ftp://a.example/", "", ErrForbiddenURL, "scheme"},
		{"http://a.example/", "file:///etc/passwd", "", ErrForbiddenURL, "scheme"},
		{"http://a.example/", "http://u:p@b.example/", "", ErrForbiddenURL, "credentials"},
		{"http://a.example/", "http://[::1", "", ErrForbiddenURL, ""},
		{"http://a.example/", "http://b.example:0/", "", ErrForbiddenURL, "port"},
		{"http://a.example/", "http://10.0.0.1/", "", ErrForbiddenAddress, "private (allowed only for the approved host)"},
		{"http://10.0.0.1/", "http://10.0.0.2/", "", ErrForbiddenAddress, "private"},
		{"http://a.example/", "http://192.0.2.1/", "", ErrForbiddenAddress, "reserved"},
		{"http://a.example/", "http://169.254.169.254/", "", ErrForbiddenAddress, "link-local"},
		{"http://a.example/", "http://[::ffff:7f00:1]/", "", ErrForbiddenAddress, "loopback"},
	}
	for _, tt := range tests {
		t.Run(tt.from+" -> "+tt.location, func(t *testing.T) {
			from, err := url.Parse(tt.from)
			if err != nil {
				t.Fatal(err)
			}
			next, err := CheckRedirect(from, tt.location)
			if tt.wantErr == nil {
				if err != nil || next.String() != tt.want {
					t.Errorf("CheckRedirect(%s, %q) = %v, %v; want %s, nil", tt.from, tt.location, next, err, tt.want)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantMsg) || next != nil {
				t.Errorf("CheckRedirect(%s, %q) = %v, %v; want %v naming %q", tt.from, tt.location, next, err, tt.wantErr, tt.wantMsg)
			}
		})
	}
}
