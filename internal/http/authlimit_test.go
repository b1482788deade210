package http_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/service"
	"github.com/plantstore/plantstore/internal/sqlite"
)

// countingTokens counts the token lookups that reach the row store.
type countingTokens struct {
	*sqlite.DB
	lookups *atomic.Int64
}

func (c countingTokens) FindTokenByHash(ctx context.Context, hash []byte) (*plantstore.Token, error) {
	c.lookups.Add(1)
	return c.DB.FindTokenByHash(ctx, hash)
}

// clientFrom returns a client whose connections come from the local
// address ip (any 127/8 address reaches the server on Linux's loopback).
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 2 * time.Second}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: 5 * time.Second}
}

// TestAuthFailureLimit: past AuthFailureLimit failed authentications per
// minute (burst AuthFailureBurst) from one client IP, that IP's requests
// with a missing or bad token get 429 42901 with Retry-After, missing and
// malformed tokens without a token lookup; a valid token from that IP and
// bad tokens from another IP are unaffected; the bucket refills with time.
// Without the limiter every bad request gets 401 and the test fails.
func TestAuthFailureLimit(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	lookups := &atomic.Int64{}
	ts := MustOpenServer(t, func(s *TestServer) {
		s.AuthFailureLimit, s.AuthFailureBurst = 6, 3 // one per 10 s
		s.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		s.Wrap = func(db *sqlite.DB) service.Stores { return countingTokens{db, lookups} }
	})
	valid := ts.Token(t, "alice")
	_, unknown, err := plantstore.NewToken("nobody", nil, 0, time.Now()) // well-formed, never stored
	if err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name, header string // Authorization; "" sends none
		lookup       bool   // a lookup is needed to know it is bad
	}{
		{"Missing", "", false},
		{"Garbage", "Bearer not-a-token", false},
		{"BadChecksum", "Bearer " + valid[:len(valid)-1] + flip(valid[len(valid)-1]), false},
		{"Unknown", "Bearer " + unknown, true},
	}
	send := func(t *testing.T, header string) *Response {
		t.Helper()
		return ts.Do(t, Request{Method: "GET", Path: "/plants", Header: map[string]string{"Authorization": header}})
	}

	for i := range 3 {
		mustError(t, send(t, bad[i%len(bad)].header), 401, []int32{plantstore.CodeTokenMissing, plantstore.CodeTokenInvalid}[min(i, 1)])
	}
	t.Run("Limited", func(t *testing.T) {
		for _, b := range bad {
			before := lookups.Load()
			resp := send(t, b.header)
			mustError(t, resp, 429, plantstore.CodeRateLimited)
			if got := resp.Header.Get("Retry-After"); got != "10" {
				t.Fatalf("%s: Retry-After = %q, want 10", b.name, got)
			}
			if looked := lookups.Load() - before; looked != 0 && !b.lookup {
				t.Fatalf("%s: %d token lookups for a request refused without one", b.name, looked)
			}
		}
	})
	t.Run("ValidTokenStillWorks", func(t *testing.T) {
		for range 3 {
			if resp := ts.Get(t, valid, "/plants"); resp.Status != 200 {
				t.Fatalf("status = %d %s", resp.Status, resp.Body)
			}
		}
	})
	t.Run("OtherIPUnaffected", func(t *testing.T) {
		req, _ := http.NewRequest("GET", ts.URL+"/plants", nil)
		resp, err := clientFrom("127.0.0.2").Do(req)
		if err != nil {
			skipUnlessCI(t, fmt.Sprintf("cannot connect from 127.0.0.2: %v", err))
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("another address: status %d, want 401", resp.StatusCode)
		}
	})
	t.Run("Refills", func(t *testing.T) {
		clock(10 * time.Second)
		mustError(t, send(t, bad[1].header), 401, plantstore.CodeTokenInvalid)
		mustError(t, send(t, bad[1].header), 429, plantstore.CodeRateLimited)
	})
	t.Run("Metrics", func(t *testing.T) {
		body := string(ts.Metrics(t).Body)
		for metric, want := range map[string]int{
			`plantstore_auth_failures_total{answer="401"}`: 5, // 3 + 127.0.0.2 + after the refill
			`plantstore_auth_failures_total{answer="429"}`: 5, // 4 + after the refill
		} {
			m := regexp.MustCompile(regexp.QuoteMeta(metric) + ` (\d+)`).FindStringSubmatch(body)
			if m == nil {
				t.Fatalf("metrics lack %s", metric)
			}
			if got, _ := strconv.Atoi(m[1]); got != want {
				t.Errorf("%s = %d, want %d", metric, got, want)
			}
		}
	})
}

// TestAuthFailureLimit_Off: with AuthFailureLimit zero (the Server's
// default) failures are only counted.
func TestAuthFailureLimit_Off(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	for range 50 {
		mustError(t, ts.Get(t, "", "/plants"), 401, plantstore.CodeTokenMissing)
	}
	if body := string(ts.Metrics(t).Body); !strings.Contains(body, `plantstore_auth_failures_total{answer="401"} 50`) {
		t.Fatalf("metrics:\n%s", body)
	}
}
