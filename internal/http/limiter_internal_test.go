package http

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/plantstore/plantstore"
)

// TestLimiterTable_ForgetsRefilled: once the table has doubled since it last
// looked, the buckets that have refilled are forgotten, and a bucket still
// spent is kept with what it spent.
func TestLimiterTable_ForgetsRefilled(t *testing.T) {
	t.Parallel()
	var tab limiterTable
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	limit := rate.Limit(10) // refills a burst of 5 in 0.5 s
	spend := func(key string, at time.Time) bool { return tab.get(key, limit, 5, at).AllowN(at, 5) }
	spend("busy", now)
	for i := range minLimiterSweep - 1 {
		spend(fmt.Sprint("idle", i), now)
	}
	if got, want := tab.size(), minLimiterSweep; got != want {
		t.Fatalf("%d keys before any sweep, want %d", got, want)
	}
	later := now.Add(time.Second)
	spend("busy", later.Add(-time.Millisecond)) // spent again just now
	spend("new", later)                         // the table is at minLimiterSweep: it looks
	if got, want := tab.size(), 2; got != want {
		t.Fatalf("%d keys after the sweep, want %d (busy and new)", got, want)
	}
	if spend("busy", later) {
		t.Fatal("the busy key was forgotten: it got a full bucket again")
	}
}

// TestLimiterTable_Bounded: a flood of keys that each spend some never grows
// the table past maxLimiterKeys.
func TestLimiterTable_Bounded(t *testing.T) {
	t.Parallel()
	var tab limiterTable
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 * maxLimiterKeys {
		tab.get(fmt.Sprint("k", i), rate.Limit(1.0/3600), 2, now).Allow()
		if n := tab.size(); n > maxLimiterKeys {
			t.Fatalf("%d keys after %d inserts, want at most %d", n, i+1, maxLimiterKeys)
		}
	}
}

// TestAllow_TokenLimitersBounded: the per-owner request limiter forgets the
// owners that stopped sending (their bucket refilled), keeps an owner that
// is at its limit limited, and never remembers more than maxLimiterKeys
// owners (here each token is of an owner of its own).
func TestAllow_TokenLimitersBounded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &Server{RateLimit: 1, RateBurst: 2, Now: func() time.Time { return now }, metrics: newMetrics(prometheus.NewRegistry(), contractOperations)}
	tok := func(i int) *plantstore.Token {
		return &plantstore.Token{ID: fmt.Sprintf("tok_%016x", i), Owner: fmt.Sprintf("owner%d", i)}
	}
	allowN := func(tok *plantstore.Token, n int) error {
		for range n {
			if err := s.allow(context.Background(), tok); err != nil {
				return err
			}
		}
		return nil
	}
	// A table full of tokens that each sent one request.
	for i := range maxLimiterKeys {
		if err := allowN(tok(i), 1); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := s.limiters.size(), maxLimiterKeys; got != want {
		t.Fatalf("%d token limiters, want %d", got, want)
	}
	// Ten seconds later they have all refilled: the next new token makes
	// the table forget them.
	now = now.Add(10 * time.Second)
	hot := &plantstore.Token{ID: "tok_hot", Owner: "hot"}
	if err := allowN(hot, 2); err != nil {
		t.Fatal(err)
	}
	if got, want := s.limiters.size(), 1; got != want {
		t.Fatalf("%d token limiters after the others went idle, want %d", got, want)
	}
	// Many new tokens at once: the hot one stays limited while the table
	// is not flooded, and the table stays bounded when it is.
	for i := range 3 * maxLimiterKeys {
		if err := allowN(tok(maxLimiterKeys+i), 1); err != nil {
			t.Fatal(err)
		}
		if i == maxLimiterKeys/2 {
			var he *HTTPError
			if err := s.allow(context.Background(), hot); !errors.As(err, &he) || he.Code != plantstore.CodeRateLimited {
				t.Fatalf("the hot token at its limit: %v, want a 429", err)
			}
		}
		if n := s.limiters.size(); n > maxLimiterKeys {
			t.Fatalf("%d token limiters, want at most %d", n, maxLimiterKeys)
		}
	}
}
