package sender

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
	"unicode/utf8"

	"golang.org/x/net/idna"
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
	// loopback with one, internal/testkit/dnstest).
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

// ErrInvalidHost is wrapped by CheckURL's and CheckHost's error for a URL
// whose host is neither an IP address nor a host name once normalised as
// the client does (normalizeHost).
var ErrInvalidHost = errors.New("webhook: invalid host")

// CheckURL refuses, with an error wrapping ErrForbiddenAddress, a webhook
// URL that a client of NewClient without AllowPrivate could never deliver
// to, as far as the URL alone tells: a host that is, once normalised as the
// client normalises it (normalizeHost: IDNA mapping, so full-width forms
// and ideographic full stops included), a literal IP address the dialer
// refuses (forbiddenReason; an IPv4 address in a shorthand that resolvers
// and browsers read as one, such as 2130706433, 127.1 or 0x7f.1, included),
// or localhost or a name under .localhost (RFC 6761: loopback). A host that
// does not normalise is refused as CheckHost refuses it. Any other name is
// judged after its resolution, at connect time. It makes no connection and
// no DNS lookup; a URL it cannot parse is left to
// plantstore.ValidateWebhookURL (nil). The error's message says why, in a
// phrase that fits after "url: ", and, for an address, ends with
// AllowPrivateHint.
func CheckURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil
	}
	host := u.Hostname()
	name, a, err := normalizeHost(u)
	if err != nil {
		return err
	}
	if !a.IsValid() {
		if n := strings.TrimSuffix(name, "."); n == "localhost" || strings.HasSuffix(n, ".localhost") {
			if !strings.EqualFold(name, host) {
				return &urlError{fmt.Sprintf("%s is %s, a loopback name (RFC 6761): %s", host, name, AllowPrivateHint)}
			}
			return &urlError{fmt.Sprintf("%s is a loopback name (RFC 6761): %s", host, AllowPrivateHint)}
		}
		return nil // a name, judged once resolved
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

// CheckHost refuses, with an error wrapping ErrInvalidHost, a webhook URL
// whose host does not normalise as the client normalises it
// (normalizeHost): a host no delivery could reach whatever the address
// checks. It is the URL check of a server that allows private addresses;
// CheckURL includes it. It makes no connection and no DNS lookup; a URL it
// cannot parse is left to plantstore.ValidateWebhookURL (nil).
func CheckHost(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil
	}
	_, _, err = normalizeHost(u)
	return err
}

// normalizeHost returns u's host as the client dials it: an IP address
// (valid a), or a lower-case ASCII host name (name, a the zero Addr). Like
// net/http, which looks up a host that is not ASCII by its IDNA form
// (idna.Lookup: full-width letters and digits become ASCII, U+3002 "。"
// and the other full stops become ".", soft hyphens go), it maps such a
// host first. Then an IPv4 address in dotted-decimal form or in a
// shorthand (parseIPv4Shorthand) is an address; so is a bracketed IPv6
// one. Like the WHATWG URL standard, a host whose last label is a number
// (decimal, or hexadecimal with 0x) must be an IPv4 address: 4294967296 or
// 1.2.3.4.5 is no address, and no name either (no top-level domain is
// numeric), though resolvers disagree on what they mean. A name must be
// labels of letters, digits, "-" and "_" (1 to 63 bytes each, 253 in all,
// one trailing dot allowed), what the Go resolver looks up. Anything else
// is an error wrapping ErrInvalidHost.
func normalizeHost(u *url.URL) (name string, a netip.Addr, err error) {
	host := u.Hostname()
	invalid := func(why string) error {
		return &hostError{fmt.Sprintf("invalid host %q: %s", host, why)}
	}
	if strings.HasPrefix(u.Host, "[") {
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() {
			return "", netip.Addr{}, invalid("not an IPv6 address")
		}
		return "", a, nil
	}
	name = host
	if !isASCII(name) {
		if name, err = idna.Lookup.ToASCII(host); err != nil {
			return "", netip.Addr{}, invalid("not an internationalised domain name (IDNA): " + strings.TrimPrefix(err.Error(), "idna: "))
		}
	}
	name = strings.ToLower(name)
	if a, err := netip.ParseAddr(name); err == nil && a.Is4() {
		return "", a, nil
	}
	if endsInNumber(name) {
		a, ok := parseIPv4Shorthand(name)
		if !ok {
			return "", netip.Addr{}, invalid("it ends in a number but is not an IPv4 address")
		}
		return "", a, nil
	}
	if !isHostName(name) {
		return "", netip.Addr{}, invalid("not an IP address or a host name (labels of letters, digits, - and _)")
	}
	return name, netip.Addr{}, nil
}

// endsInNumber reports whether the last label of host (after one trailing
// dot) is a number as the WHATWG URL standard's IPv4 parser reads one:
// decimal digits, or 0x followed by hexadecimal digits (none included).
func endsInNumber(host string) bool {
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	last := labels[len(labels)-1]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		return strings.Trim(last[2:], "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

// isHostName reports whether name (lower-case ASCII) is a host name the
// resolver looks up: labels of letters, digits, "-" and "_", 1 to 63 bytes
// each, at most 253 bytes without the one trailing dot allowed.
func isHostName(name string) bool {
	name = strings.TrimSuffix(name, ".")
	if name == "" || len(name) > 253 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 || strings.Trim(label, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// urlError is CheckURL's error for an address: its message, and
// ErrForbiddenAddress.
type urlError struct{ msg string }

func (e *urlError) Error() string { return e.msg }
func (e *urlError) Unwrap() error { return ErrForbiddenAddress }

// hostError is the error of a host that does not normalise: its message,
// and ErrInvalidHost.
type hostError struct{ msg string }

func (e *hostError) Error() string { return e.msg }
func (e *hostError) Unwrap() error { return ErrInvalidHost }

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
