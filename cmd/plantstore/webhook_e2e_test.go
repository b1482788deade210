package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/plantstore/plantstore/internal/pgtest"
)

// delivery is one request a receiver got.
type delivery struct {
	id      string
	body    string
	headers http.Header
}

// receiver is a webhook receiver on 127.0.0.1 that records deliveries and
// answers status() (200 by default).
type receiver struct {
	*httptest.Server
	mu         sync.Mutex
	deliveries []delivery
	status     func(n int) int // the answer to the n-th request (1-based)
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{status: func(int) int { return http.StatusOK }}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.deliveries = append(r.deliveries, delivery{req.Header.Get("webhook-id"), string(body), req.Header.Clone()})
		n := len(r.deliveries)
		r.mu.Unlock()
		w.WriteHeader(r.status(n))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) got() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.deliveries...)
}

// waitFor polls cond every 50 ms for at most d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// subscribe creates a subscription to url and returns its id and secret.
func subscribe(t *testing.T, s *server, token, url string) (string, string) {
	t.Helper()
	status, _, body := do(t, testClient, "POST", s.url+"/webhooks", token, `{"url":"`+url+`"}`)
	if status != http.StatusCreated {
		t.Fatalf("POST /webhooks: %d %s", status, body)
	}
	var w struct{ ID, Secret string }
	if err := json.Unmarshal(body, &w); err != nil {
		t.Fatal(err)
	}
	return w.ID, w.Secret
}

// webhookToken makes a token that may create plants and manage webhooks.
func webhookToken(t *testing.T, db, owner string) string {
	t.Helper()
	return strings.TrimSpace(runBinary(t, "token", "create", "--owner", owner, "--db", db,
		"--scope", "plants:read", "--scope", "plants:write", "--scope", "webhooks:manage"))
}

// TestWebhookDelivery: one create → exactly one signed delivery per
// subscription, verified by the standard-webhooks library; a replay sends
// nothing; another owner's subscription gets nothing.
func TestWebhookDelivery(t *testing.T) {
	db := tempDBPath(t)
	s := startServer(t, db, "--no-bootstrap-admin", "--webhook-allow-private", "--rate-limit", "0")
	alice, bob := webhookToken(t, db, "alice"), webhookToken(t, db, "bob")
	a, b, other := newReceiver(t), newReceiver(t), newReceiver(t)
	_, secretA := subscribe(t, s, alice, a.URL+"/hook")
	_, secretB := subscribe(t, s, alice, b.URL+"/hook")
	subscribe(t, s, bob, other.URL+"/hook")

	if status, _, body := do(t, testClient, "POST", s.url+"/plants", alice, `{"id":7,"name":"Fern","tag":"green"}`); status != 200 {
		t.Fatalf("create: %d %s", status, body)
	}
	waitFor(t, 20*time.Second, "both deliveries", func() bool { return len(a.got()) == 1 && len(b.got()) == 1 })
	for _, rc := range []struct {
		r      *receiver
		secret string
	}{{a, secretA}, {b, secretB}} {
		d := rc.r.got()[0]
		if d.body != `{"id":7,"name":"Fern","tag":"green"}` {
			t.Fatalf("payload = %s", d.body)
		}
		wh, err := standardwebhooks.NewWebhook(rc.secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify([]byte(d.body), d.headers); err != nil {
			t.Fatalf("standard-webhooks rejects the signature: %v (headers %v)", err, d.headers)
		}
	}
	if a.got()[0].id == "" || a.got()[0].id != b.got()[0].id {
		t.Fatalf("webhook-id %q and %q: want one message id for one event", a.got()[0].id, b.got()[0].id)
	}
	// A replay and a conflict create no event.
	do(t, testClient, "POST", s.url+"/plants", alice, `{"id":7,"name":"Fern","tag":"green"}`)
	do(t, testClient, "POST", s.url+"/plants", alice, `{"id":7,"name":"Moss"}`)
	// A later create is delivered after them; if the replay had made an
	// event it would have come first (same subscription, one message each).
	do(t, testClient, "POST", s.url+"/plants", alice, `{"id":8,"name":"Ivy"}`)
	waitFor(t, 20*time.Second, "the second plant", func() bool { return len(a.got()) >= 2 && len(b.got()) >= 2 })
	time.Sleep(1500 * time.Millisecond) // give a stray extra delivery time to show up
	for _, r := range []*receiver{a, b} {
		got := r.got()
		if len(got) != 2 || got[1].body != `{"id":8,"name":"Ivy"}` {
			t.Fatalf("deliveries = %+v, want plant 7 then plant 8 only", got)
		}
	}
	if n := len(other.got()); n != 0 {
		t.Fatalf("bob's receiver got %d deliveries of alice's plants", n)
	}
	// The attempts are visible.
	id, _ := subscribe(t, s, alice, a.URL+"/late")
	_, _, body := do(t, testClient, "GET", s.url+"/webhooks/"+id+"/deliveries", alice, "")
	if strings.TrimSpace(string(body)) != "[]" {
		t.Fatalf("a new subscription lists %s", body)
	}
}

// TestWebhookSSRF: without --webhook-allow-private, a subscription to a
// loopback address is accepted but never connected to; the attempt records
// why.
func TestWebhookSSRF(t *testing.T) {
	db := tempDBPath(t)
	s := startServer(t, db, "--no-bootstrap-admin", "--rate-limit", "0")
	tok := webhookToken(t, db, "alice")
	r := newReceiver(t)
	port := r.Listener.Addr().(*net.TCPAddr).Port
	var ids []string
	for _, u := range []string{
		r.URL + "/hook", // 127.0.0.1
		fmt.Sprintf("http://localhost:%d/hook", port), // a name that resolves to loopback
		"http://[::1]:1/hook",
		// Private and reserved ranges are refused by the same dialer check;
		// webhook's TestControl proves it without pointing anything at them.
	} {
		id, _ := subscribe(t, s, tok, u)
		ids = append(ids, id)
	}
	if status, _, body := do(t, testClient, "POST", s.url+"/plants", tok, `{"id":1,"name":"Fern"}`); status != 200 {
		t.Fatalf("create: %d %s", status, body)
	}
	for _, id := range ids {
		waitFor(t, 20*time.Second, "a recorded attempt for "+id, func() bool {
			_, _, body := do(t, testClient, "GET", s.url+"/webhooks/"+id+"/deliveries", tok, "")
			return strings.Contains(string(body), `"error"`)
		})
		_, _, body := do(t, testClient, "GET", s.url+"/webhooks/"+id+"/deliveries", tok, "")
		if !strings.Contains(string(body), "address") {
			t.Fatalf("attempt of %s does not say the address was refused: %s", id, body)
		}
	}
	if n := len(r.got()); n != 0 {
		t.Fatalf("the loopback receiver got %d requests; want none", n)
	}
}

// TestWebhookCrash: creates acknowledged while the receivers are down, then
// kill -9, restart, receivers up: every acknowledged plant reaches every
// subscriber (at least once).
func TestWebhookCrash(t *testing.T) {
	for _, backend := range []string{"SQLite", "PostgreSQL"} {
		t.Run(backend, func(t *testing.T) {
			db := tempDBPath(t)
			if backend == "PostgreSQL" {
				db = pgtest.NewDatabase(t)
			}
			args := []string{"--no-bootstrap-admin", "--webhook-allow-private", "--rate-limit", "0", "--webhook-first-retry", "200ms", "--webhook-timeout", "2s"}
			s := startServer(t, db, args...)
			tok := webhookToken(t, db, "alice")

			// Two receivers whose ports are reserved but closed for now.
			var addrs []string
			for range 2 {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				addrs = append(addrs, ln.Addr().String())
				ln.Close()
			}
			for _, a := range addrs {
				subscribe(t, s, tok, "http://"+a+"/hook")
			}
			var acked []int
			for id := 1; id <= 30; id++ {
				if status, _, _ := do(t, testClient, "POST", s.url+"/plants", tok, fmt.Sprintf(`{"id":%d,"name":"P%d"}`, id, id)); status == 200 {
					acked = append(acked, id)
				}
			}
			if err := s.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-s.done

			// Receivers come up on the same addresses; the server restarts.
			var receivers []*receiver
			for _, a := range addrs {
				r := &receiver{status: func(int) int { return http.StatusOK }}
				ln, err := net.Listen("tcp", a)
				if err != nil {
					t.Fatalf("re-listen on %s: %v", a, err)
				}
				r.Server = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
					body, _ := io.ReadAll(req.Body)
					r.mu.Lock()
					r.deliveries = append(r.deliveries, delivery{req.Header.Get("webhook-id"), string(body), req.Header.Clone()})
					r.mu.Unlock()
				})}}
				r.Start()
				t.Cleanup(r.Close)
				receivers = append(receivers, r)
			}
			startServer(t, db, args...) // the restart: it must deliver what the first one could not
			for i, r := range receivers {
				waitFor(t, 60*time.Second, fmt.Sprintf("receiver %d to get every acknowledged plant", i), func() bool {
					seen := map[string]bool{}
					for _, d := range r.got() {
						seen[d.body] = true
					}
					for _, id := range acked {
						if !seen[fmt.Sprintf(`{"id":%d,"name":"P%d"}`, id, id)] {
							return false
						}
					}
					return true
				})
			}
		})
	}
}

// TestWebhookTwoReplicas: two replicas on one PostgreSQL database deliver
// each event once, never the same delivery twice in parallel.
func TestWebhookTwoReplicas(t *testing.T) {
	db := pgtest.NewDatabase(t)
	args := []string{"--no-bootstrap-admin", "--webhook-allow-private", "--rate-limit", "0"}
	a := startServer(t, db, args...)
	b := startServer(t, db, args...)
	tok := webhookToken(t, db, "alice")
	r := newReceiver(t)
	subscribe(t, a, tok, r.URL+"/hook")
	const n = 40
	for id := 1; id <= n; id++ {
		s := a
		if id%2 == 0 {
			s = b
		}
		if status, _, body := do(t, testClient, "POST", s.url+"/plants", tok, fmt.Sprintf(`{"id":%d,"name":"P%d"}`, id, id)); status != 200 {
			t.Fatalf("create %d: %d %s", id, status, body)
		}
	}
	waitFor(t, 30*time.Second, "all deliveries", func() bool { return len(r.got()) >= n })
	time.Sleep(1500 * time.Millisecond) // let a duplicate show up, if any
	seen := map[string]int{}
	for _, d := range r.got() {
		seen[d.id]++
	}
	if len(seen) != n {
		t.Fatalf("%d distinct messages, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("message %s delivered %d times", id, c)
		}
	}
}
