package webhook

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrForbiddenAddress is wrapped by the error of a request whose target
// resolved to an address that is not globally reachable (loopback, private,
// link-local, documentation, ...: see forbiddenReason in address.go) with
// ClientOptions.AllowPrivate unset. No connection was made.
var ErrForbiddenAddress = errors.New("webhook: forbidden address")

// Client defaults.
const (
	DefaultAttemptTimeout = 15 * time.Second
	// ConnectTimeout bounds connecting to a receiver (per address tried):
	// one that does not accept within it is a failed attempt, not a worker
	// held for the whole attempt timeout.
	ConnectTimeout = 3 * time.Second
	// MaxResponseBytes bounds how much of a receiver's response body is read.
	MaxResponseBytes = 64 << 10
)

// ClientOptions configures NewClient.
type ClientOptions struct {
	// AllowPrivate turns the address check off: loopback, private and
	// every other address that is not globally reachable may be dialled
	// (tests, on-premise receivers: --webhook-allow-private).
	AllowPrivate bool
	// Timeout bounds one request, response body included; 0 means
	// DefaultAttemptTimeout.
	Timeout time.Duration
	// Resolver resolves receivers' host names; nil: net.DefaultResolver.
	// The address check runs on what it returns (tests map a name to
	// loopback with one, internal/dnstest).
	Resolver *net.Resolver
}

// NewClient returns the HTTP client deliveries are sent with. Unless
// opts.AllowPrivate, its dialer refuses, before connecting, every address
// that is not globally reachable unicast per the IANA special-purpose
// registries (see forbiddenReason in address.go): the check runs on the IP
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
	dialer := &net.Dialer{Timeout: min(timeout, ConnectTimeout), KeepAlive: 30 * time.Second, Resolver: opts.Resolver}
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

// AllowPrivateHint ends the message of an address or URL refused for
// not being globally reachable: the setting that allows it.
const AllowPrivateHint = "deliveries there are refused unless the server runs with --webhook-allow-private"

// CheckURL refuses, with an error wrapping ErrForbiddenAddress, a webhook
// URL that a client of NewClient without AllowPrivate could never deliver
// to, as far as the URL alone tells: a host that is a literal IP address the
// dialer refuses (forbiddenReason; an IPv4 address in a shorthand that
// resolvers and browsers read as one, such as 2130706433 or 127.1,
// included), and localhost or a name under .localhost (RFC 6761: loopback).
// Any other name is judged after its resolution, at connect time. It makes
// no connection and no DNS lookup; a URL it cannot parse is left to
// plantstore.ValidateWebhookURL (nil). The error's message says why, in a
// phrase that fits after "url: ", and ends with AllowPrivateHint.
func CheckURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil
	}
	host := u.Hostname()
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return &urlError{fmt.Sprintf("%s is a loopback name (RFC 6761): %s", host, AllowPrivateHint)}
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		var ok bool
		if a, ok = parseIPv4Shorthand(name); !ok {
			return nil // a name
		}
	}
	why := forbiddenReason(a)
	switch {
	case why == "":
		return nil
	case a.String() != host:
		return &urlError{fmt.Sprintf("%s is %s, which is %s: %s", host, a, why, AllowPrivateHint)}
	}
	return &urlError{fmt.Sprintf("%s is %s: %s", host, why, AllowPrivateHint)}
}

// urlError is CheckURL's error: its message, and ErrForbiddenAddress.
type urlError struct{ msg string }

func (e *urlError) Error() string { return e.msg }
func (e *urlError) Unwrap() error { return ErrForbiddenAddress }

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
