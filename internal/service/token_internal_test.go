package service

import (
	"fmt"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
)

// TestTokenCache_Bounded: a full token cache makes room by forgetting the
// stale entries first and, only when too few are stale, arbitrary ones down
// to three quarters: a flood of new tokens never empties it, and never makes
// it grow past maxCachedTokens.
func TestTokenCache_Bounded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var c tokenCache
	key := func(i int) []byte { return []byte(fmt.Sprintf("hash-%d", i)) }
	tok := func(i int) *plantstore.Token { return &plantstore.Token{ID: fmt.Sprintf("tok_%016x", i), Owner: "eve"} }

	// A fresh entry among a full cache of stale ones: the stale go, it stays.
	c.put(key(0), tok(0), now, now.Add(time.Hour))
	for i := 1; i < maxCachedTokens; i++ {
		c.put(key(i), tok(i), now, now.Add(time.Second))
	}
	if got := c.size(); got != maxCachedTokens {
		t.Fatalf("%d cached, want %d", got, maxCachedTokens)
	}
	later := now.Add(2 * time.Second)
	c.put(key(maxCachedTokens), tok(maxCachedTokens), later, later.Add(time.Hour))
	if got := c.size(); got != 2 {
		t.Fatalf("%d cached after the stale ones went, want 2", got)
	}
	if c.get(key(0), later) == nil || c.get(key(maxCachedTokens), later) == nil {
		t.Fatal("a fresh entry was forgotten while stale ones made room")
	}

	// A flood of fresh entries: the cache stays between three quarters
	// full and full; it never empties.
	for i := range 3 * maxCachedTokens {
		c.put(key(10*maxCachedTokens+i), tok(10*maxCachedTokens+i), later, later.Add(time.Hour))
		if got := c.size(); got > maxCachedTokens || got < maxCachedTokens*3/4 && i >= maxCachedTokens {
			t.Fatalf("%d cached after %d new entries, want %d..%d", got, i+1, maxCachedTokens*3/4, maxCachedTokens)
		}
	}
}
