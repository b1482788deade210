package sender

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// TestControl calls the dialer's Control directly: it never connects.
func TestControl(t *testing.T) {
	tests := []struct {
		address string
		allowed bool
	}{
		{"127.0.0.1:80", false},
		{"127.255.255.254:443", false},
		{"10.0.0.1:80", false},
		{"172.16.0.1:80", false},
		{"172.31.255.255:80", false},
		{"192.168.1.1:80", false},
		{"169.254.1.1:80", false},
		{"169.254.169.254:80", false}, // cloud metadata
		{"100.64.0.1:80", false},
		{"100.127.255.255:80", false},
		{"0.0.0.0:80", false},
		{"0.1.2.3:80", false},
		{"255.255.255.255:80", false},
		{"224.0.0.1:80", false},
		{"240.0.0.1:80", false},
		{"192.0.0.1:80", false},
		{"198.18.0.1:80", false},
		{"[::1]:80", false},
		{"[::]:80", false},
		{"[fc00::1]:80", false},
		{"[fd12:3456::1]:80", false},
		{"[fe80::1]:80", false},
		{"[fe80::1%eth0]:80", false},
		{"[fec0::1]:80", false},
		{"[ff02::1]:80", false},
		{"[::ffff:127.0.0.1]:80", false},
		{"[::ffff:10.0.0.1]:80", false},
		{"[::ffff:169.254.169.254]:80", false},
		{"[::127.0.0.1]:80", false},          // IPv4-compatible
		{"[64:ff9b::7f00:1]:80", false},      // NAT64 of 127.0.0.1
		{"[2002:a00:1::1]:80", false},        // 6to4 of 10.0.0.1
		{"192.0.2.1:80", false},              // documentation (TEST-NET-1)
		{"198.51.100.1:80", false},           // documentation (TEST-NET-2)
		{"203.0.113.1:80", false},            // documentation (TEST-NET-3)
		{"[2001:db8::1]:80", false},          // documentation
		{"[64:ff9b:1::5db8:d822]:80", false}, // NAT64 local-use, even of a global address
		{"[2001::5db8:d822]:80", false},      // Teredo
		{"not-an-address:80", false},
		{"93.184.216.34:80", true},
		{"8.8.8.8:443", true},
		{"100.63.255.255:80", true},
		{"172.32.0.1:80", true},
		{"[2606:2800:220:1:248:1893:25c8:1946]:443", true},
		{"[::ffff:93.184.216.34]:80", true},
		{"[64:ff9b::5db8:d822]:80", true}, // NAT64 of 93.184.216.34
	}
	for _, tt := range tests {
		err := control("tcp", tt.address, nil)
		if tt.allowed && err != nil {
			t.Errorf("control(%q) = %v, want nil", tt.address, err)
		}
		if !tt.allowed && !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("control(%q) = %v, want ErrForbiddenAddress", tt.address, err)
		}
	}
}

func TestForbiddenReasonMessage(t *testing.T) {
	err := checkAddress("[::ffff:127.0.0.1]:80")
	if got, want := err.Error(), "webhook: forbidden address: ::ffff:127.0.0.1 is not globally reachable: Loopback (127.0.0.0/8, RFC 1122, Section 3.2.1.3)"; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
	if got, want := forbiddenReason(netip.MustParseAddr("10.1.2.3")), "not globally reachable: Private-Use (10.0.0.0/8, RFC 1918)"; got != want {
		t.Errorf("reason = %q, want %q", got, want)
	}
	if got, want := forbiddenReason(netip.MustParseAddr("2002:c000:201::1")), "6to4 (2002::/16) of 192.0.2.1, which is not globally reachable: Documentation (TEST-NET-1) (192.0.2.0/24, RFC 5737)"; got != want {
		t.Errorf("reason = %q, want %q", got, want)
	}
}

// countingServer is a 127.0.0.1 receiver that counts connections and requests.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	var conns, reqs atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqs.Add(1)
		h(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns, &reqs
}

func TestClientRefusesLoopback(t *testing.T) {
	srv, conns, reqs := countingServer(t, func(w http.ResponseWriter, r *http.Request) {})
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	c := NewClient(ClientOptions{})
	for _, u := range []string{
		srv.URL,
		"http://localhost:" + strconv.Itoa(port), // a name that resolves to loopback
		"http://[::1]:" + strconv.Itoa(port),
	} {
		resp, err := c.Post(u, "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
			t.Errorf("POST %s: no error", u)
			continue
		}
		if !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("POST %s: %v, want ErrForbiddenAddress", u, err)
		}
	}
	if n, m := conns.Load(), reqs.Load(); n != 0 || m != 0 {
		t.Errorf("server saw %d connections, %d requests; want none", n, m)
	}
}

func TestClientAllowPrivate(t *testing.T) {
	srv, _, reqs := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	})
	c := NewClient(ClientOptions{AllowPrivate: true})
	resp, err := c.Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || reqs.Load() != 1 {
		t.Errorf("status %d, %d requests; want 202, 1", resp.StatusCode, reqs.Load())
	}
}

func TestClientDoesNotFollowRedirects(t *testing.T) {
	var target atomic.Int64
	srv, _, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/target" {
			target.Add(1)
			return
		}
		http.Redirect(w, r, "/target", http.StatusTemporaryRedirect)
	})
	c := NewClient(ClientOptions{AllowPrivate: true})
	resp, err := c.Post(srv.URL+"/hook", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || target.Load() != 0 {
		t.Errorf("status %d, target hit %d times; want 307, 0", resp.StatusCode, target.Load())
	}
}

func TestClientLimitsResponseBody(t *testing.T) {
	srv, _, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat("x", 1<<20)))
	})
	c := NewClient(ClientOptions{AllowPrivate: true})
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != MaxResponseBytes {
		t.Errorf("read %d bytes, want %d", len(b), MaxResponseBytes)
	}
}

func TestClientIgnoresProxyEnvironment(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	c := NewClient(ClientOptions{})
	tr := c.Transport.(*limitTransport).next.(*http.Transport)
	if tr.Proxy != nil {
		t.Error("transport has a Proxy func")
	}
	if c.Timeout != DefaultAttemptTimeout {
		t.Errorf("timeout %v, want %v", c.Timeout, DefaultAttemptTimeout)
	}
}
