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
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/plantstore/plantstore/internal/testkit/pgtest"
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
	t.Parallel()
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
	waitNothingPending(t, db) // then no stray extra delivery can still come
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

// TestWebhookSSRF: without --webhook-allow-private, POST and PATCH
// /webhooks refuse a URL whose host is an address deliveries may not reach
// (loopback, private, link-local, an IPv4 shorthand of one) or localhost,
// with 400 40002 naming the flag: nothing is stored, and no connection is
// made (the literal addresses are judged, never dialled). With the flag the
// loopback ones are accepted. (An attempt whose host name resolves to such
// an address fails at once, recorded and not retried:
// TestWebhookForbiddenAtDelivery in http/, with a resolver that maps a test
// name to 127.0.0.1.)
func TestWebhookSSRF(t *testing.T) {
	t.Parallel()
	db := tempDBPath(t)
	s := startServer(t, db, "--no-bootstrap-admin", "--rate-limit", "0")
	tok := webhookToken(t, db, "alice")
	r := newReceiver(t)
	port := r.Listener.Addr().(*net.TCPAddr).Port
	local := fmt.Sprintf("http://localhost:%d/hook", port)
	refused := []string{
		r.URL + "/hook", // 127.0.0.1: the quick start's receiver
		local,
		"http://[::1]:1/hook",
		"http://10.0.0.1/hook",
		"http://169.254.169.254/latest/meta-data/",
		"http://2130706433/hook", // 127.0.0.1 as one number
		"https://app.localhost/hook",
	}
	check := func(t *testing.T, method, path, body string) {
		t.Helper()
		status, _, answer := do(t, testClient, method, s.url+path, tok, body)
		var e struct {
			Error   int32
			Message string
		}
		if err := json.Unmarshal(answer, &e); err != nil || status != http.StatusBadRequest || e.Error != 40002 {
			t.Fatalf("%s %s %s: %d %s, want 400 with error 40002", method, path, body, status, answer)
		}
		if !strings.Contains(e.Message, "url: ") || !strings.Contains(e.Message, "--webhook-allow-private") {
			t.Errorf("%s %s %s: message %q does not name the url and --webhook-allow-private", method, path, body, e.Message)
		}
	}
	for _, u := range refused {
		check(t, "POST", "/webhooks", `{"url":"`+u+`"}`)
	}
	// A subscription to a name is accepted (the name is resolved, and its
	// addresses checked, at delivery time; nothing is delivered here: no
	// plant is created). A PATCH to a refused URL leaves it as it was.
	id, _ := subscribe(t, s, tok, "https://receiver.invalid/hook")
	for _, u := range refused {
		check(t, "PATCH", "/webhooks/"+id, `{"url":"`+u+`"}`)
	}
	status, _, body := do(t, testClient, "GET", s.url+"/webhooks", tok, "")
	if status != http.StatusOK || strings.Count(string(body), `"id"`) != 1 || !strings.Contains(string(body), "https://receiver.invalid/hook") {
		t.Fatalf("GET /webhooks: %d %s, want the one subscription, unchanged", status, body)
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}

	// --webhook-allow-private: the same loopback URLs are accepted.
	s = startServer(t, db, "--no-bootstrap-admin", "--rate-limit", "0", "--webhook-allow-private")
	if status, _, body := do(t, testClient, "POST", s.url+"/webhooks", tok, `{"url":"`+r.URL+`/hook"}`); status != http.StatusCreated {
		t.Fatalf("POST /webhooks with --webhook-allow-private: %d %s, want 201", status, body)
	}
	if status, _, body := do(t, testClient, "PATCH", s.url+"/webhooks/"+id, tok, `{"url":"`+local+`"}`); status != http.StatusOK {
		t.Fatalf("PATCH /webhooks/%s with --webhook-allow-private: %d %s, want 200", id, status, body)
	}
	if n := len(r.got()); n != 0 {
		t.Fatalf("the loopback receiver got %d requests; want none", n)
	}
}

// TestWebhookCrash: creates acknowledged while the receivers are down, then
// kill -9, restart, receivers up: every acknowledged plant reaches every
// subscriber (at least once).
func TestWebhookCrash(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"SQLite", "PostgreSQL"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
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
	t.Parallel()
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
	waitNothingPending(t, db) // then no duplicate can still come
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

// webhookJSON is a Webhook as GET /webhooks shows it.
type webhookJSON struct {
	ID             string     `json:"id"`
	URL            string     `json:"url"`
	Enabled        bool       `json:"enabled"`
	DisabledAt     *time.Time `json:"disabled_at"`
	DisabledReason string     `json:"disabled_reason"`
}

// getWebhook returns GET /webhooks/{id}.
func getWebhook(t *testing.T, s *server, token, id string) webhookJSON {
	t.Helper()
	status, _, body := do(t, testClient, "GET", s.url+"/webhooks/"+id, token, "")
	if status != http.StatusOK {
		t.Fatalf("GET /webhooks/%s: %d %s", id, status, body)
	}
	var w webhookJSON
	if err := json.Unmarshal(body, &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestWebhookLimits: an owner's subscriptions are capped
// (--webhook-max-subscriptions): past it 409 40902, another owner is not
// counted, a delete makes room; GET /webhooks pages by id (creation order)
// with a Link to the next page, and refuses a bad limit or after with 400
// 40003.
func TestWebhookLimits(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"SQLite", "PostgreSQL"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			db := tempDBPath(t)
			if backend == "PostgreSQL" {
				db = pgtest.NewDatabase(t)
			}
			s := startServer(t, db, "--no-bootstrap-admin", "--rate-limit", "0", "--webhook-max-subscriptions", "3",
				"--webhook-allow-private") // the subscriptions are to loopback
			alice, bob := webhookToken(t, db, "alice"), webhookToken(t, db, "bob")
			var ids []string
			for i := range 3 {
				id, _ := subscribe(t, s, alice, fmt.Sprintf("http://127.0.0.1:9/%d", i))
				ids = append(ids, id)
			}
			status, _, body := do(t, testClient, "POST", s.url+"/webhooks", alice, `{"url":"http://127.0.0.1:9/4"}`)
			if status != http.StatusConflict || errorCode(body) != 40902 {
				t.Fatalf("a 4th subscription with a cap of 3: %d %s, want 409 40902", status, body)
			}
			if !strings.Contains(string(body), "the owner has 3 webhook subscriptions") {
				t.Fatalf("409 body %s does not say the cap", body)
			}
			subscribe(t, s, bob, "http://127.0.0.1:9/bob")

			// Pages of 2, by id: the creation order.
			var got []string
			next := s.url + "/webhooks?limit=2"
			for pages := 0; next != ""; pages++ {
				if pages == 3 {
					t.Fatal("more than 2 pages of 3 subscriptions by 2")
				}
				status, h, body := do(t, testClient, "GET", next, alice, "")
				if status != http.StatusOK {
					t.Fatalf("GET %s: %d %s", next, status, body)
				}
				var page []webhookJSON
				if err := json.Unmarshal(body, &page); err != nil {
					t.Fatal(err)
				}
				for _, w := range page {
					got = append(got, w.ID)
				}
				next = nextLink(t, s.url, h)
				if pages == 0 && h.Get("Link") != fmt.Sprintf(`</webhooks?after=%s&limit=2>; rel="next"`, ids[1]) {
					t.Fatalf("Link of the first page: %q", h.Get("Link"))
				}
			}
			if diff := cmp.Diff(ids, got); diff != "" {
				t.Fatalf("subscriptions by pages of 2 (-want +got):\n%s", diff)
			}
			for _, q := range []string{"limit=0", "limit=1001", "after=whk_123", "after=" + strings.ToUpper(ids[0])} {
				status, _, body := do(t, testClient, "GET", s.url+"/webhooks?"+q, alice, "")
				if status != http.StatusBadRequest || errorCode(body) != 40003 {
					t.Errorf("GET /webhooks?%s: %d %s, want 400 40003", q, status, body)
				}
			}

			if status, _, body := do(t, testClient, "DELETE", s.url+"/webhooks/"+ids[0], alice, ""); status != http.StatusNoContent {
				t.Fatalf("DELETE: %d %s", status, body)
			}
			subscribe(t, s, alice, "http://127.0.0.1:9/again")
		})
	}
}

// TestWebhookDisabled: a subscription whose attempts all fail for longer
// than --webhook-disable-after is disabled at its next failed attempt
// (reason failing), one whose receiver answers 410 at once (reason gone);
// GET shows both.
func TestWebhookDisabled(t *testing.T) {
	t.Parallel()
	db := tempDBPath(t)
	s := startServer(t, db, "--no-bootstrap-admin", "--webhook-allow-private", "--rate-limit", "0",
		"--webhook-first-retry", "100ms", "--webhook-disable-after", "1s")
	tok := webhookToken(t, db, "alice")
	failing, gone := newReceiver(t), newReceiver(t)
	failing.status = func(int) int { return http.StatusInternalServerError }
	gone.status = func(int) int { return http.StatusGone }
	failingID, _ := subscribe(t, s, tok, failing.URL+"/hook")
	goneID, _ := subscribe(t, s, tok, gone.URL+"/hook")
	if w := getWebhook(t, s, tok, failingID); !w.Enabled || w.DisabledAt != nil || w.DisabledReason != "" {
		t.Fatalf("a new subscription: %+v", w)
	}
	if status, _, body := do(t, testClient, "POST", s.url+"/plants", tok, `{"id":1,"name":"Fern"}`); status != 200 {
		t.Fatalf("create: %d %s", status, body)
	}
	// Attempts at about 0, 0.1, 0.7 and 3.1 s: the last one is past 1 s of
	// failing.
	waitFor(t, 20*time.Second, "the failing subscription to be disabled", func() bool { return !getWebhook(t, s, tok, failingID).Enabled })
	w := getWebhook(t, s, tok, failingID)
	if w.DisabledReason != "failing" || w.DisabledAt == nil {
		t.Fatalf("failing subscription: %+v, want disabled_reason failing with disabled_at", w)
	}
	if n := len(failing.got()); n < 2 {
		t.Fatalf("disabled after %d attempts, want at least 2 (failing for over 1s)", n)
	}
	w = getWebhook(t, s, tok, goneID)
	if w.Enabled || w.DisabledReason != "gone" || w.DisabledAt == nil || len(gone.got()) != 1 {
		t.Fatalf("subscription answered 410: %+v after %d attempts, want disabled_reason gone after 1", w, len(gone.got()))
	}
	// The list shows them the same way; a disabled subscription gets nothing.
	_, _, body := do(t, testClient, "GET", s.url+"/webhooks", tok, "")
	if !strings.Contains(string(body), `"disabled_reason":"failing"`) || !strings.Contains(string(body), `"disabled_reason":"gone"`) {
		t.Fatalf("GET /webhooks: %s", body)
	}
	before := len(failing.got())
	do(t, testClient, "POST", s.url+"/plants", tok, `{"id":2,"name":"Ivy"}`)
	waitNothingPending(t, db)
	if n := len(failing.got()); n != before {
		t.Fatalf("a disabled subscription got %d more deliveries", n-before)
	}
}

// TestWebhookRetention: delivery history older than --webhook-retention
// is deleted off the request path.
func TestWebhookRetention(t *testing.T) {
	t.Parallel()
	db := tempDBPath(t)
	s := startServer(t, db, "--no-bootstrap-admin", "--webhook-allow-private", "--rate-limit", "0", "--webhook-retention", "2s")
	tok := webhookToken(t, db, "alice")
	r := newReceiver(t)
	id, _ := subscribe(t, s, tok, r.URL+"/hook")
	if status, _, body := do(t, testClient, "POST", s.url+"/plants", tok, `{"id":1,"name":"Fern"}`); status != 200 {
		t.Fatalf("create: %d %s", status, body)
	}
	attempts := func() string {
		_, _, body := do(t, testClient, "GET", s.url+"/webhooks/"+id+"/deliveries", tok, "")
		return strings.TrimSpace(string(body))
	}
	waitFor(t, 20*time.Second, "the delivery", func() bool { return strings.Contains(attempts(), `"succeeded"`) })
	waitFor(t, 20*time.Second, "the attempt to be pruned", func() bool { return attempts() == "[]" })
}

// hangingReceiver listens on 127.0.0.1, accepts connections and never
// answers; it counts the connections accepted.
func hangingReceiver(t *testing.T, accepted *atomic.Int32) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/hook"
}

// TestWebhookFairness: owner A has 16 subscriptions whose receivers accept
// and never answer, and a backlog for them; owner B's delivery, created
// after, still arrives within 3 s, while A holds no more than its share of
// the dispatcher's workers (a quarter of 32).
func TestWebhookFairness(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"SQLite", "PostgreSQL"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			db := tempDBPath(t)
			if backend == "PostgreSQL" {
				db = pgtest.NewDatabase(t)
			}
			s := startServer(t, db, "--no-bootstrap-admin", "--webhook-allow-private", "--rate-limit", "0")
			a, b := webhookToken(t, db, "owner-a"), webhookToken(t, db, "owner-b")
			var accepted atomic.Int32
			for range 16 {
				subscribe(t, s, a, hangingReceiver(t, &accepted))
			}
			for id := 1; id <= 5; id++ { // 80 deliveries
				if status, _, body := do(t, testClient, "POST", s.url+"/plants", a, fmt.Sprintf(`{"id":%d,"name":"A%d"}`, id, id)); status != 200 {
					t.Fatalf("A's create: %d %s", status, body)
				}
			}
			waitFor(t, 10*time.Second, "A's share of attempts in flight", func() bool { return accepted.Load() >= 8 })
			r := newReceiver(t)
			subscribe(t, s, b, r.URL+"/hook")
			start := time.Now()
			if status, _, body := do(t, testClient, "POST", s.url+"/plants", b, `{"id":1,"name":"B"}`); status != 200 {
				t.Fatalf("B's create: %d %s", status, body)
			}
			waitFor(t, 10*time.Second, "B's delivery", func() bool { return len(r.got()) == 1 })
			took := time.Since(start)
			t.Logf("B's delivery arrived %v after its create, with A's 16 receivers hanging", took)
			if took > 3*time.Second {
				t.Fatalf("B's delivery took %v, want at most 3s", took)
			}
			time.Sleep(time.Second) // A's attempts hang for 15s: its share must hold meanwhile
			if n := accepted.Load(); n != 8 {
				t.Fatalf("A's receivers accepted %d connections, want 8 (a quarter of 32 workers)", n)
			}
		})
	}
}

// waitNothingPending waits (at most 30 s) until the database behind db (a
// SQLite file or a postgres:// URL, shared with the running servers) holds
// no pending webhook delivery. A delivery stays pending while an attempt is
// on its way and until its result is recorded, so once none is, no further
// attempt can reach a receiver: what the receivers got by then is all they
// will get.
func waitNothingPending(t *testing.T, db string) {
	t.Helper()
	f := dbFlags{DB: db, DBMaxConns: 1, DBStatementTimeout: 5 * time.Second, DBTimeout: 10 * time.Second}
	store, err := f.backend()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Open(t.Context()); err != nil {
		t.Fatalf("open %s: %v", db, err)
	}
	defer store.Close()
	var pending int
	waitFor(t, 30*time.Second, "no pending webhook delivery", func() bool {
		pending, _, err = store.OutboxStats(t.Context())
		if err != nil {
			t.Fatalf("pending deliveries: %v", err)
		}
		return pending == 0
	})
}
