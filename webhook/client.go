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
	dialer := &net.Dialer{Timeout: min(timeout, ConnectTimeout), KeepAlive: 30 * time.Second}
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
