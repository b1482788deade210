package http

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

func TestClientIP(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ remote, want string }{
		{"127.0.0.7:5123", "127.0.0.7"},
		{"[::ffff:127.0.0.7]:5123", "127.0.0.7"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:80", "fe80::/64"},
		{"not-an-address", "not-an-address"},
	} {
		r := &http.Request{RemoteAddr: tt.remote, Header: http.Header{"X-Forwarded-For": {"203.0.113.9"}}}
		if got := clientIP(r); got != tt.want {
			t.Errorf("clientIP(%q) = %q, want %q", tt.remote, got, tt.want)
		}
	}
}

// TestAuthFailures_Bounded: a flood of failures from many addresses keeps
// the table at most maxAuthFailureIPs, forgetting refilled buckets first.
func TestAuthFailures_Bounded(t *testing.T) {
	t.Parallel()
	var a authFailures
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	limit := rate.Limit(1.0 / 60)
	spend := func(ip string, at time.Time) { a.limiter(ip, limit, 3, at).AllowN(at, 3) }
	// A blocked address, then many that failed long ago.
	spend("198.51.100.1", now.Add(time.Hour))
	for i := range maxAuthFailureIPs - 1 {
		spend(fmt.Sprintf("10.0.%d.%d", i/256, i%256), now)
	}
	later := now.Add(time.Hour)
	spend("203.0.113.1", later) // full: the refilled ones go, the blocked one stays
	if got := a.size(); got != 2 {
		t.Fatalf("after eviction %d addresses, want 2", got)
	}
	if l := a.limiter("198.51.100.1", limit, 3, later); l.TokensAt(later) >= 1 {
		t.Fatal("the blocked address was forgotten")
	}
	for i := range 5 * maxAuthFailureIPs {
		spend(fmt.Sprintf("fd00::%x", i), later)
		if a.size() > maxAuthFailureIPs {
			t.Fatalf("%d addresses remembered", a.size())
		}
	}
}
