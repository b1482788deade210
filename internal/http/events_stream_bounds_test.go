package http_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	plantstorehttp "github.com/plantstore/plantstore/internal/http"
	"github.com/plantstore/plantstore/internal/service"
)

// keepCreating creates plants from id first on, one after the other, with
// the token until the test ends or stop is called; it counts the creates
// acknowledged. It never fails the test (it runs in its own goroutine).
func keepCreating(t *testing.T, ts *TestServer, token string, first int) (acked *atomic.Int64, stop func()) {
	t.Helper()
	acked = new(atomic.Int64)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for id := first; ctx.Err() == nil; id++ {
			req, err := http.NewRequestWithContext(ctx, "POST", ts.URL+"/plants", strings.NewReader(fmt.Sprintf(`{"id":%d,"name":"Plant %d"}`, id, id)))
			if err != nil {
				return
			}
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					acked.Add(1)
				}
			}
			time.Sleep(2 * time.Millisecond) // a steady trickle, not a load test
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return acked, stop
}

// streamEnd reads s until it ends or within passes; it returns how many
// events came meanwhile and the last frame before the end, or fails the
// test when the stream is still open after within.
func streamEnd(t *testing.T, s *sseStream, within time.Duration) (events int, last sseFrame) {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case f, ok := <-s.frames:
			if !ok || f.Err != nil {
				if ok && !errors.Is(f.Err, io.EOF) {
					t.Fatalf("stream failed: %v", f.Err)
				}
				return events, last
			}
			if f.Data != "" {
				events++
			}
			last = f
		case <-timeout:
			t.Fatalf("stream still open after %v (%d events received meanwhile)", within, events)
			return events, last
		}
	}
}

// TestEventStream_RevokedWhileBusy: while the owner's events keep coming
// (another token of the same owner creating plants), every event sent puts
// the heartbeat off, so the stream's token is checked on a timer of its
// own: the stream of a revoked token ends within the heartbeat plus the
// token cache's TTL of the revocation.
func TestEventStream_RevokedWhileBusy(t *testing.T) {
	t.Parallel()
	const heartbeat, cacheTTL = 300 * time.Millisecond, 200 * time.Millisecond
	ts := MustOpenServer(t, func(ts *TestServer) {
		ts.EventStreamHeartbeat = heartbeat
		ts.Service.TokenCacheTTL = cacheTTL
	})
	tok, secret, err := ts.Services.Tokens.CreateToken(context.Background(), plantstore.TokenRequest{Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	acked, _ := keepCreating(t, ts, ts.Token(t, "alice"), 1)
	_, s := openStream(t, ts, secret, "/events/stream", nil)
	for range 5 { // the events flow
		s.nextEvent(t)
	}
	if err := ts.Services.Tokens.RevokeToken(context.Background(), tok.ID); err != nil {
		t.Fatal(err)
	}
	revoked, before := time.Now(), acked.Load()
	bound := heartbeat + cacheTTL
	events, _ := streamEnd(t, s, bound+time.Second) // a second of slack for a busy machine
	took := time.Since(revoked)
	t.Logf("the stream ended %v after the revocation (bound %v); %d events came meanwhile, %d creates acknowledged",
		took, bound, events, acked.Load()-before)
	if acked.Load() == before {
		t.Fatal("no create was acknowledged after the revocation: the stream was not busy")
	}
}

// TestEventStream_ExpiredWhileBusy: a token that expires mid-stream ends the
// stream at its expiry, while events keep coming and long before the
// (default, 15 s) heartbeat.
func TestEventStream_ExpiredWhileBusy(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	const ttl = time.Second
	tok, secret, err := ts.Services.Tokens.CreateToken(context.Background(), plantstore.TokenRequest{Owner: "alice", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	keepCreating(t, ts, ts.Token(t, "alice"), 1)
	_, s := openStream(t, ts, secret, "/events/stream", nil)
	s.nextEvent(t)
	streamEnd(t, s, ttl+2*time.Second)
	// The expiry the token carries, not the time CreateToken returned: a
	// busy machine can take a while between the two.
	if ended := time.Now(); ended.Before(*tok.ExpiresAt) {
		t.Fatalf("the stream ended %v before the token's expiry", tok.ExpiresAt.Sub(ended))
	}
}

// scopeSwitch is the real token service, except that once reduced is set
// the tokens it authenticates lose every scope but plants:write (as a
// change of a token's scopes would).
type scopeSwitch struct {
	plantstore.TokenService                                      // nil: only Authenticate is called
	real                    atomic.Pointer[service.TokenService] // set once the server is open
	reduced                 atomic.Bool
}

func (s *scopeSwitch) Authenticate(ctx context.Context, secret string) (*plantstore.Token, error) {
	tok, err := s.real.Load().Authenticate(ctx, secret)
	if err != nil || !s.reduced.Load() {
		return tok, err
	}
	reduced := *tok
	reduced.Scopes = []string{plantstore.ScopePlantsWrite}
	return &reduced, nil
}

// TestEventStream_ScopeReduced: a token that no longer carries plants:read
// ends its stream at the next check, while events keep coming.
func TestEventStream_ScopeReduced(t *testing.T) {
	t.Parallel()
	const heartbeat = 300 * time.Millisecond
	sw := &scopeSwitch{}
	ts := MustOpenServer(t, func(ts *TestServer) {
		ts.EventStreamHeartbeat = heartbeat
		ts.TokenService = sw
	})
	sw.real.Store(ts.Services.Tokens)
	keepCreating(t, ts, ts.Token(t, "alice"), 1)
	_, s := openStream(t, ts, ts.Token(t, "alice"), "/events/stream", nil)
	s.nextEvent(t)
	sw.reduced.Store(true)
	streamEnd(t, s, heartbeat+time.Second)
}

// TestEventStream_MaxAge: a stream ends after EventStreamMaxAge (between
// 90% and 100% of it), even while events keep coming, with a comment and a
// retry: hint; the client resumes with Last-Event-ID and misses nothing.
func TestEventStream_MaxAge(t *testing.T) {
	t.Parallel()
	const maxAge = 600 * time.Millisecond
	ts := MustOpenServer(t, func(ts *TestServer) { ts.EventStreamMaxAge = maxAge })
	tok := ts.Token(t, "alice")
	acked, stop := keepCreating(t, ts, tok, 1)
	opened := time.Now()
	_, s := openStream(t, ts, tok, "/events/stream", nil)
	var lastSeq int64
	var last sseFrame
	for done := false; !done; {
		select {
		case f := <-s.frames:
			switch {
			case f.Err != nil && !errors.Is(f.Err, io.EOF):
				t.Fatalf("stream failed: %v", f.Err)
			case f.Err != nil:
				done = true
			case f.Data != "":
				if seq := mustSeq(t, f); seq != lastSeq+1 {
					t.Fatalf("event seq %d after %d", seq, lastSeq)
				} else {
					lastSeq = seq
				}
			}
			if !done {
				last = f
			}
		case <-time.After(maxAge + 2*time.Second):
			t.Fatalf("stream still open %v after it opened (max age %v)", time.Since(opened), maxAge)
		}
	}
	lived := time.Since(opened)
	if lived < maxAge*9/10 {
		t.Fatalf("the stream ended after %v, before 90%% of its max age %v", lived, maxAge)
	}
	if !strings.Contains(last.Comment, "maximum age") || last.Retry != "1000" || last.Data != "" {
		t.Fatalf("last frame %+v, want the max-age comment and retry: 1000", last)
	}
	if lastSeq == 0 {
		t.Fatal("no event came before the end: the stream was not busy")
	}
	stop()
	// Resuming from the last id gets the rest, in order, from the next seq.
	n := acked.Load()
	_, resumed := openStream(t, ts, tok, "/events/stream", map[string]string{"Last-Event-ID": fmt.Sprint(lastSeq)})
	for seq := lastSeq + 1; seq <= n; seq++ {
		if e := resumed.nextEvent(t); e.Seq != seq {
			t.Fatalf("resumed: seq %d, want %d", e.Seq, seq)
		}
	}
}

// mustSeq returns the seq of an event frame (its id).
func mustSeq(t *testing.T, f sseFrame) int64 {
	t.Helper()
	var seq int64
	if _, err := fmt.Sscan(f.ID, &seq); err != nil {
		t.Fatalf("frame id %q: %v", f.ID, err)
	}
	return seq
}

// TestEventStream_BufferShrinks: a stream does not keep the buffer of its
// largest page (a page of 100 events with long names is over 100 KB) for as
// long as it lives: it keeps at most MaxRetainedStreamBuffer while it
// waits, and reuses a small buffer.
func TestEventStream_BufferShrinks(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var waits []int
	ts := MustOpenServer(t, func(ts *TestServer) {
		plantstorehttp.OnStreamWait(ts.Server, func(retained int) {
			mu.Lock()
			defer mu.Unlock()
			waits = append(waits, retained)
		})
	})
	tok := ts.Token(t, "alice")
	long := strings.Repeat("🌿", plantstore.MaxNameLength) // 1 KiB of UTF-8
	for id := 1; id <= 100; id++ {
		if resp := ts.Post(t, tok, fmt.Sprintf(`{"id":%d,"name":%q}`, id, long)); resp.Status != 200 {
			t.Fatalf("create %d: %d %s", id, resp.Status, resp.Body)
		}
	}
	_, s := openStream(t, ts, tok, "/events/stream", nil)
	for range 100 {
		s.nextEvent(t)
	}
	// The stream waits once the page is sent: it keeps a small buffer.
	waited := func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), waits...)
	}
	deadline := time.Now().Add(sseWait)
	for len(waited()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the stream never waited")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := waited()[0]; got > plantstorehttp.MaxRetainedStreamBuffer {
		t.Fatalf("after a page of 100 KB the waiting stream keeps a buffer of %d bytes, want at most %d", got, plantstorehttp.MaxRetainedStreamBuffer)
	}
	// A small event is sent from a buffer the stream then keeps (the
	// waits before it, woken by the poll, keep none).
	n := len(waited())
	createPlants(t, ts, tok, 101)
	s.nextEvent(t)
	deadline = time.Now().Add(sseWait)
	for {
		w := waited()
		if slices.ContainsFunc(w[n:], func(c int) bool { return c > 0 }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a small event the stream kept no buffer: waits %v", w[n:])
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i, c := range waited() {
		if c > plantstorehttp.MaxRetainedStreamBuffer {
			t.Fatalf("wait %d kept a buffer of %d bytes, want at most %d", i, c, plantstorehttp.MaxRetainedStreamBuffer)
		}
	}
}
