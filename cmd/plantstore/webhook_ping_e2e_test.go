package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit/pgtest"
)

// holdingReceiver is a webhook receiver on 127.0.0.1 that holds every
// request until release (then answers 200), and counts those it holds.
type holdingReceiver struct {
	url  string
	held atomic.Int32

	mu   sync.Mutex
	gate chan struct{}
}

func newHoldingReceiver(t *testing.T) *holdingReceiver {
	t.Helper()
	r := &holdingReceiver{gate: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		gate := r.gate
		r.mu.Unlock()
		r.held.Add(1)
		defer r.held.Add(-1)
		select {
		case <-gate:
		case <-req.Context().Done():
		}
	}))
	r.url = srv.URL
	t.Cleanup(srv.Close)
	t.Cleanup(r.release) // first: the held requests end
	return r
}

// release answers every request held, and holds the next ones again.
func (r *holdingReceiver) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	close(r.gate)
	r.gate = make(chan struct{})
}

// TestWebhookPingBounds, on the binary on both backends: pings are bounded
// (without a bound, 100 concurrent pings at a receiver that never answers
// would hold 100 connections) and never sent to a disabled subscription. A
// ping counts against
// --webhook-max-in-flight and the owner's share of --webhook-concurrency
// like a delivery: past either, 429 42903 with Retry-After (the attempt
// timeout) at once and nothing sent; the deliveries leased in the database
// count; a disabled subscription's ping is 409 40903.
func TestWebhookPingBounds(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"SQLite", "PostgreSQL"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			db := tempDBPath(t)
			if backend == "PostgreSQL" {
				db = pgtest.NewDatabase(t)
			}
			// 12 workers: an owner's share is 3; 2 per subscription (the default).
			s := startServer(t, db, "--no-bootstrap-admin", "--webhook-allow-private", "--rate-limit", "0",
				"--webhook-concurrency", "12", "--webhook-timeout", "10s")
			alice, bob := webhookToken(t, db, "alice"), webhookToken(t, db, "bob")
			rcv := newHoldingReceiver(t)
			a, _ := subscribe(t, s, alice, rcv.url+"/a")
			b, _ := subscribe(t, s, alice, rcv.url+"/b")
			c, _ := subscribe(t, s, bob, rcv.url+"/c")
			client := &http.Client{Timeout: 30 * time.Second}
			ping := func(token, id string) <-chan response {
				ch := make(chan response, 1)
				go func() { ch <- send(client, "POST", s.url+"/webhooks/"+id+"/ping", token, "") }()
				return ch
			}
			// wantBusy waits (at most 5 s: a refusal is at once) for a 429 42903.
			wantBusy := func(what string, ch <-chan response, msg string) {
				t.Helper()
				select {
				case r := <-ch:
					if r.err != nil || r.status != http.StatusTooManyRequests || errorCode(r.body) != 42903 ||
						r.header.Get("Retry-After") != "10" || !strings.Contains(string(r.body), msg) {
						t.Fatalf("%s: %v, want 429 42903 with Retry-After 10 and %q", what, r, msg)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("%s: no answer within 5 s (the receiver holds %d requests), want 429 at once", what, rcv.held.Load())
				}
			}
			wantPinged := func(what string, ch <-chan response) {
				t.Helper()
				select {
				case r := <-ch:
					if r.err != nil || r.status != http.StatusOK || !strings.Contains(string(r.body), `"succeeded":true`) {
						t.Fatalf("%s: %v, want 200 succeeded", what, r)
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("%s: no answer within 20 s of the release", what)
				}
			}

			// Six concurrent pings of one subscription: two are held, four
			// refused at once.
			var pings []<-chan response
			for range 6 {
				pings = append(pings, ping(alice, a))
			}
			waitFor(t, 10*time.Second, "two pings held by the receiver", func() bool { return rcv.held.Load() == 2 })
			refused := 0
			deadline := time.Now().Add(5 * time.Second) // a refusal is at once
			for refused < 4 && time.Now().Before(deadline) {
				waiting := pings[:0]
				for _, ch := range pings {
					select {
					case r := <-ch:
						if r.err != nil || r.status != http.StatusTooManyRequests || errorCode(r.body) != 42903 || r.header.Get("Retry-After") != "10" {
							t.Fatalf("a concurrent ping: %v, want 429 42903 with Retry-After 10", r)
						}
						refused++
					default:
						waiting = append(waiting, ch)
					}
				}
				pings = waiting
				time.Sleep(10 * time.Millisecond)
			}
			held := pings
			if refused != 4 || rcv.held.Load() != 2 {
				t.Fatalf("%d of 6 concurrent pings refused, %d held by the receiver; want 4 and 2", refused, rcv.held.Load())
			}
			// The owner's share (3): one more ping of alice's other
			// subscription is held, the next refused.
			held = append(held, ping(alice, b))
			waitFor(t, 10*time.Second, "alice's third ping held", func() bool { return rcv.held.Load() == 3 })
			wantBusy("alice's fourth ping", ping(alice, b), "as many as one owner may have")
			// Another owner is not counted.
			held = append(held, ping(bob, c))
			waitFor(t, 10*time.Second, "bob's ping held", func() bool { return rcv.held.Load() == 4 })
			rcv.release()
			for i, ch := range held {
				wantPinged(fmt.Sprintf("held ping %d", i+1), ch)
			}

			// Leased deliveries count: a create sends one delivery to each
			// of alice's subscriptions (held); one ping of a fits, no more.
			if status, _, body := do(t, testClient, "POST", s.url+"/plants", alice, `{"id":1,"name":"Fern"}`); status != http.StatusOK {
				t.Fatalf("create: %d %s", status, body)
			}
			waitFor(t, 10*time.Second, "the two deliveries held", func() bool { return rcv.held.Load() == 2 })
			fits := ping(alice, a)
			waitFor(t, 10*time.Second, "the ping beside a delivery held", func() bool { return rcv.held.Load() == 3 })
			wantBusy("a ping of a with a delivery and a ping in flight", ping(alice, a), "webhook "+a)
			wantBusy("a ping of b with alice's share in flight", ping(alice, b), "as many as one owner may have")
			rcv.release()
			wantPinged("the ping beside a delivery", fits)

			// A disabled subscription is not pinged.
			if status, _, body := do(t, testClient, "PATCH", s.url+"/webhooks/"+a, alice, `{"enabled":false}`); status != http.StatusOK {
				t.Fatalf("disable: %d %s", status, body)
			}
			r := <-ping(alice, a)
			if r.err != nil || r.status != http.StatusConflict || errorCode(r.body) != 40903 {
				t.Fatalf("ping of a disabled subscription: %v, want 409 40903", r)
			}
		})
	}
}
