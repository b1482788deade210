package webhook

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// ErrForbiddenAddress is wrapped by the error of a request whose target
// resolved to an internal address (loopback, private, link-local, ...) with
// ClientOptions.AllowPrivate unset. No connection was made.
var ErrForbiddenAddress = errors.New("webhook: forbidden address")

// Client defaults.
const (
	DefaultAttemptTimeout = 15 * time.Second
	// MaxResponseBytes bounds how much of a receiver's response body is read.
	MaxResponseBytes = 64 << 10
)

// ClientOptions configures NewClient.
type ClientOptions struct {
	// AllowPrivate allows loopback, private and other internal targets
	// (tests, on-premise receivers: --webhook-allow-private).
	AllowPrivate bool
	// Timeout bounds one request, response body included; 0 means
	// DefaultAttemptTimeout.
	Timeout time.Duration
}

// NewClient returns the HTTP client deliveries are sent with. Unless
// opts.AllowPrivate, its dialer refuses, before connecting, every address
// that is not public unicast (see forbiddenReason): the check runs on the IP
// actually dialled, after DNS resolution, so a name that resolves (or
// rebinds) to an internal address is refused too, with an error wrapping
// ErrForbiddenAddress. The client follows no redirects (the 3xx response is
// returned as is), ignores proxy environment variables, reads at most
// MaxResponseBytes of a response body and gives up after opts.Timeout.
func NewClient(opts ClientOptions) *http.Client {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultAttemptTimeout
	}
	dialer := &net.Dialer{Timeout: min(timeout, 10*time.Second), KeepAlive: 30 * time.Second}
	if !opts.AllowPrivate {
		dialer.Control = control
	}
	transport := &http.Transport{
		Proxy:                  nil, // never HTTP(S)_PROXY: a proxy would dial for us, past the check
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  timeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: MaxResponseBytes,
	}
	return &http.Client{
		Transport: &limitTransport{next: transport, limit: MaxResponseBytes},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
		Timeout: timeout,
	}
}

// control is the dialer's Control: it runs after resolution, before
// connect(2), once per address tried.
func control(network, address string, _ syscall.RawConn) error {
	return checkAddress(address)
}

func checkAddress(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %q is not an IP address and port", ErrForbiddenAddress, address)
	}
	if why := forbiddenReason(ap.Addr()); why != "" {
		return fmt.Errorf("%w: %s is %s", ErrForbiddenAddress, ap.Addr(), why)
	}
	return nil
}

var (
	cgnat        = netip.MustParsePrefix("100.64.0.0/10")
	thisNetwork  = netip.MustParsePrefix("0.0.0.0/8")
	ietfProtocol = netip.MustParsePrefix("192.0.0.0/24")
	benchmarking = netip.MustParsePrefix("198.18.0.0/15")
	reserved4    = netip.MustParsePrefix("240.0.0.0/4") // includes 255.255.255.255
	ipv4Compat   = netip.MustParsePrefix("::/96")       // deprecated IPv4-compatible, and :: and ::1
	siteLocal    = netip.MustParsePrefix("fec0::/10")
	nat64        = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour    = netip.MustParsePrefix("2002::/16")
)

// forbiddenReason says why a is not a public unicast address, or returns "".
// IPv4-mapped IPv6 addresses are judged as the IPv4 address they carry, and
// so are NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses.
func forbiddenReason(a netip.Addr) string {
	a = a.Unmap()
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			return forbiddenReason(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFour.Contains(a):
			return forbiddenReason(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	switch {
	case !a.IsValid():
		return "invalid"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast():
		return "multicast"
	case a.Is4() && cgnat.Contains(a):
		return "shared address space (CGNAT)"
	case a.Is4() && thisNetwork.Contains(a):
		return `in "this network" (0.0.0.0/8)`
	case a.Is4() && reserved4.Contains(a):
		return "reserved or broadcast"
	case a.Is4() && (ietfProtocol.Contains(a) || benchmarking.Contains(a)):
		return "special-purpose"
	case a.Is6() && (ipv4Compat.Contains(a) || siteLocal.Contains(a)):
		return "special-purpose"
	}
	return ""
}

// limitTransport cuts every response body at limit bytes.
type limitTransport struct {
	next  http.RoundTripper
	limit int64
}

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{Reader: io.LimitReader(resp.Body, t.limit), Closer: resp.Body}
	return resp, nil
}

type limitedBody struct {
	io.Reader
	io.Closer
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// transport.
func (t *limitTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
