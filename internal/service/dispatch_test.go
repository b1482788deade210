package service_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/plantstore/plantstore"
	plantstoreprometheus "github.com/plantstore/plantstore/internal/prometheus"
	"github.com/plantstore/plantstore/internal/sender"
	"github.com/plantstore/plantstore/internal/service"
	"github.com/plantstore/plantstore/internal/testkit/dnstest"
	"github.com/plantstore/plantstore/webhook"
)

// memOutbox is an in-memory service.Queue, a test double of the
// Dispatcher's outbox (service.OutboxService implements it over the row
// stores, which have their own conformance tests). Its tasks carry URL and
// Secrets as the service sets them.
type memOutbox struct {
	mu       sync.Mutex
	entries  []*memEntry
	disabled map[string]bool
	claims   int                 // ClaimDeliveries calls
	claimed  int                 // tasks they returned
	prunes   []time.Time         // the before of each PruneOutbox call
	prune    func(limit int) int // what PruneOutbox deletes; nil: nothing
}
type memEntry struct {
	task       plantstore.Task
	state      plantstore.DeliveryState
	nextAt     time.Time
	leaseUntil time.Time
	results    []plantstore.AttemptResult
}

func newMemOutbox() *memOutbox { return &memOutbox{disabled: map[string]bool{}} }

func (o *memOutbox) add(t plantstore.Task) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.entries = append(o.entries, &memEntry{task: t, state: plantstore.DeliveryPending})
}

// ClaimDeliveries leases due entries as the row stores do: chosen by
// service.Pick, timed by the real clock (the database's).
func (o *memOutbox) ClaimDeliveries(ctx context.Context, c plantstore.Claim) ([]*plantstore.Task, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.claims++
	now := time.Now()
	var due []plantstore.DueDelivery
	var inFlight []plantstore.InFlight
	entries := map[[2]string]*memEntry{}
	for _, e := range o.entries {
		switch {
		case e.state != plantstore.DeliveryPending:
		case e.leaseUntil.After(now):
			inFlight = append(inFlight, plantstore.InFlight{SubscriptionID: e.task.SubscriptionID, Owner: e.task.Owner, N: 1})
		case !e.nextAt.After(now):
			due = append(due, plantstore.DueDelivery{MessageID: e.task.MessageID, SubscriptionID: e.task.SubscriptionID,
				Owner: e.task.Owner, NextAttemptAt: e.nextAt})
			entries[[2]string{e.task.MessageID, e.task.SubscriptionID}] = e
		}
	}
	var out []*plantstore.Task
	for _, d := range service.Pick(c, due, inFlight) {
		e := entries[[2]string{d.MessageID, d.SubscriptionID}]
		e.leaseUntil = now.Add(c.Lease)
		t := e.task
		t.Attempts = len(e.results)
		out = append(out, &t)
	}
	o.claimed += len(out)
	return out, nil
}

// counts returns how many claims were made and how many tasks they
// returned.
func (o *memOutbox) counts() (claims, claimed int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.claims, o.claimed
}

// waitClaims waits for n more claims. A claim that returns fewer tasks
// than it asked for is followed by the next one a poll interval (5 ms)
// later at the earliest, so n >= 2 more claims also cover a retry that the
// schedule (1 ms) makes due after the last attempt.
func waitClaims(t *testing.T, n int, claims func() int) {
	t.Helper()
	want := claims() + n
	waitFor(t, fmt.Sprintf("%d more claims", n), func() bool { return claims() >= want })
}

func (o *memOutbox) claimCount() int { n, _ := o.counts(); return n }

func (o *memOutbox) CompleteDelivery(ctx context.Context, t *plantstore.Task, r plantstore.AttemptResult) error {
	if err := ctx.Err(); err != nil {
		return err // the dispatcher must record attempts even while shutting down
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range o.entries {
		if e.task.MessageID == t.MessageID && e.task.SubscriptionID == t.SubscriptionID {
			e.results = append(e.results, r)
			e.state = r.State
			e.leaseUntil = time.Time{}
			if r.NextAttemptAt != nil {
				e.nextAt = *r.NextAttemptAt
			}
			if r.Disable {
				o.disabled[t.SubscriptionID] = true
			}
			return nil
		}
	}
	return plantstore.Errorf(plantstore.CodeNotFound, "no task %s", t.MessageID)
}

func (o *memOutbox) OutboxStats(ctx context.Context) (int, time.Time, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n, oldest := 0, time.Time{}
	for _, e := range o.entries {
		if e.state == plantstore.DeliveryPending {
			n++
			if oldest.IsZero() || e.task.CreatedAt.Before(oldest) {
				oldest = e.task.CreatedAt
			}
		}
	}
	return n, oldest, nil
}

// PruneOutbox records the call and deletes nothing, unless prune is set.
func (o *memOutbox) PruneOutbox(ctx context.Context, before time.Time, limit int) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.prunes = append(o.prunes, before)
	if o.prune != nil {
		return o.prune(limit), nil
	}
	return 0, nil
}

// results returns the attempts recorded for a message.
func (o *memOutbox) results(msgID string) []plantstore.AttemptResult {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range o.entries {
		if e.task.MessageID == msgID {
			return append([]plantstore.AttemptResult(nil), e.results...)
		}
	}
	return nil
}

// waitFor polls cond; the bound only keeps a broken test from hanging.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// config is what newDispatcher builds the services and their sender of.
type config struct {
	service service.Config
	sender  sender.Options
}

// newDispatcher returns the dispatcher of q for 127.0.0.1 receivers with
// tiny retry waits and no jitter, its configuration then changed by each
// of set (the sender's clock is the services'), and the services it
// belongs to (whose stores it does not use).
func newDispatcher(t *testing.T, q service.Queue, reg prometheus.Registerer, set ...func(*config)) (*service.Dispatcher, *service.Services) {
	t.Helper()
	c := config{
		service: service.Config{Delivery: service.DeliveryConfig{
			PollInterval: 5 * time.Millisecond,
			Schedule:     []time.Duration{time.Millisecond, time.Millisecond},
			Jitter:       func(d time.Duration) time.Duration { return d },
		}},
		sender: sender.Options{AllowPrivate: true, Timeout: 10 * time.Second},
	}
	if reg != nil {
		c.service.Delivery.Metrics = plantstoreprometheus.NewWebhookMetrics(reg, service.Outcomes) // as serve wires it
	}
	for _, f := range set {
		f(&c)
	}
	if c.sender.Now == nil {
		c.sender.Now = c.service.Now
	}
	c.service.Sender = sender.New(c.sender)
	svc := service.New(nil, c.service)
	d, err := svc.NewDispatcher(q)
	if err != nil {
		t.Fatal(err)
	}
	return d, svc
}

// run runs d until the test ends; the returned stop cancels Run and
// waits for it to return.
func run(t *testing.T, d *service.Dispatcher) (stop func(), done <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		d.Run(ctx)
	}()
	stop = func() {
		cancel()
		select {
		case <-ch:
		case <-time.After(20 * time.Second):
			t.Fatal("Run did not return")
		}
	}
	t.Cleanup(stop)
	return stop, ch
}

func task(id, url string, secrets ...string) plantstore.Task {
	return plantstore.Task{
		MessageID: id, SubscriptionID: "whk_" + id, Owner: "alice",
		Event: plantstore.Event{Owner: "alice", ID: plantstore.EventIDOf(id), Type: plantstore.EventPlantCreated, PlantID: 7, Name: "Fern"},
		URL:   url, Secrets: secrets,
		CreatedAt: time.Now(),
	}
}

func metric(t *testing.T, reg *prometheus.Registry, name, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := outcome == ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					match = true
				}
			}
			if match {
				switch {
				case m.Counter != nil:
					return m.GetCounter().GetValue()
				case m.Gauge != nil:
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no metric %s{outcome=%q}", name, outcome)
	return 0
}

type received struct {
	header http.Header
	body   []byte
}

// recorder is a 127.0.0.1 receiver answering the given statuses in turn
// (the last one repeats).
func recorder(t *testing.T, statuses ...int) (*httptest.Server, func() []received) {
	t.Helper()
	var mu sync.Mutex
	var got []received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, received{r.Header.Clone(), body})
		status := statuses[min(len(got), len(statuses))-1]
		mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []received {
		mu.Lock()
		defer mu.Unlock()
		return append([]received(nil), got...)
	}
}

func TestDispatcherDelivers(t *testing.T) {
	t.Parallel()
	srv, got := recorder(t, http.StatusNoContent)
	o := newMemOutbox()
	current, previous := newSecret(t), newSecret(t)
	o.add(task("msg_ok", srv.URL+"/hooks?token=x", current, previous))
	reg := prometheus.NewRegistry()
	d, svc := newDispatcher(t, o, reg)
	stop, _ := run(t, d)
	svc.Notifier.DeliveriesDue()
	waitFor(t, "the attempt to be recorded", func() bool { return len(o.results("msg_ok")) == 1 })
	stop()

	reqs := got()
	if len(reqs) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(reqs))
	}
	h, body := reqs[0].header, reqs[0].body
	if string(body) != `{"id":7,"name":"Fern"}` {
		t.Errorf("body = %s", body)
	}
	for k, want := range map[string]string{
		"Content-Type": "application/json",
		"User-Agent":   "plantstore-webhooks/1",
		"Webhook-Id":   "msg_ok",
	} {
		if h.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, h.Get(k), want)
		}
	}
	if n := len(strings.Fields(h.Get("webhook-signature"))); n != 2 {
		t.Errorf("webhook-signature has %d entries, want 2 (rotation): %q", n, h.Get("webhook-signature"))
	}
	for _, s := range []string{current, previous} {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(body, h); err != nil {
			t.Errorf("standard-webhooks Verify: %v", err)
		}
		if err := webhook.Verify(s, h, body); err != nil {
			t.Errorf("Verify: %v", err)
		}
	}

	r := o.results("msg_ok")[0]
	if r.State != plantstore.DeliverySucceeded || r.StatusCode != 204 || r.Error != "" ||
		r.NextAttemptAt != nil || r.Disable || r.Duration <= 0 || r.AttemptedAt.IsZero() {
		t.Errorf("result = %+v", r)
	}
	if v := metric(t, reg, "plantstore_webhook_deliveries_total", "succeeded"); v != 1 {
		t.Errorf("succeeded = %v, want 1", v)
	}
}

func TestDispatcherRetriesWithTheSameID(t *testing.T) {
	t.Parallel()
	srv, got := recorder(t, 500, 500, 200)
	o := newMemOutbox()
	o.add(task("msg_retry", srv.URL, newSecret(t)))
	reg := prometheus.NewRegistry()
	stop, _ := run(t, dispatcherOf(newDispatcher(t, o, reg)))
	waitFor(t, "three attempts", func() bool { return len(o.results("msg_retry")) == 3 })
	stop()

	var ids []string
	for _, r := range got() {
		ids = append(ids, r.header.Get("webhook-id"))
	}
	if diff := cmp.Diff([]string{"msg_retry", "msg_retry", "msg_retry"}, ids); diff != "" {
		t.Errorf("webhook-id per request (-want +got):\n%s", diff)
	}
	var states []plantstore.DeliveryState
	var codes []int
	for _, r := range o.results("msg_retry") {
		states = append(states, r.State)
		codes = append(codes, r.StatusCode)
		if (r.State == plantstore.DeliveryPending) != (r.NextAttemptAt != nil) {
			t.Errorf("state %s with NextAttemptAt %v", r.State, r.NextAttemptAt)
		}
	}
	if diff := cmp.Diff([]plantstore.DeliveryState{"pending", "pending", "succeeded"}, states); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{500, 500, 200}, codes); diff != "" {
		t.Errorf("status codes (-want +got):\n%s", diff)
	}
	if v := metric(t, reg, "plantstore_webhook_deliveries_total", "retry"); v != 2 {
		t.Errorf("retry = %v, want 2", v)
	}
}

func TestDispatcherGivesUpAfterTheLastAttempt(t *testing.T) {
	t.Parallel()
	srv, got := recorder(t, 503)
	o := newMemOutbox()
	o.add(task("msg_fail", srv.URL, newSecret(t)))
	reg := prometheus.NewRegistry()
	stop, _ := run(t, dispatcherOf(newDispatcher(t, o, reg))) // Schedule of 2 waits: 3 attempts
	waitFor(t, "the delivery to fail", func() bool {
		rs := o.results("msg_fail")
		return len(rs) > 0 && rs[len(rs)-1].State == plantstore.DeliveryFailed
	})
	stop()
	if n := len(got()); n != 3 {
		t.Errorf("receiver got %d attempts, want 3", n)
	}
	rs := o.results("msg_fail")
	if last := rs[len(rs)-1]; last.NextAttemptAt != nil || last.Disable || last.StatusCode != 503 {
		t.Errorf("last result = %+v", last)
	}
	if v := metric(t, reg, "plantstore_webhook_deliveries_total", "failed"); v != 1 {
		t.Errorf("failed = %v, want 1", v)
	}
}

func TestDispatcherDisablesOnGone(t *testing.T) {
	t.Parallel()
	srv, got := recorder(t, http.StatusGone)
	o := newMemOutbox()
	o.add(task("msg_gone", srv.URL, newSecret(t)))
	reg := prometheus.NewRegistry()
	stop, _ := run(t, dispatcherOf(newDispatcher(t, o, reg)))
	waitFor(t, "the attempt", func() bool { return len(o.results("msg_gone")) == 1 })
	stop()
	r := o.results("msg_gone")[0]
	if r.State != plantstore.DeliveryFailed || !r.Disable || r.StatusCode != 410 || r.NextAttemptAt != nil {
		t.Errorf("result = %+v", r)
	}
	if !o.disabled["whk_msg_gone"] {
		t.Error("subscription not disabled")
	}
	if n := len(got()); n != 1 {
		t.Errorf("receiver got %d attempts, want 1", n)
	}
	if v := metric(t, reg, "plantstore_webhook_deliveries_total", "disabled"); v != 1 {
		t.Errorf("disabled = %v, want 1", v)
	}
}

func TestDispatcherHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC) // a fixed clock
	tests := []struct {
		name, retryAfter string
		want             time.Duration
	}{
		{"seconds", "120", 120 * time.Second},
		{"http date", now.Add(time.Hour).Format(http.TimeFormat), time.Hour},
		{"clamped up", "0", time.Second},
		{"clamped down", "604800", 24 * time.Hour},
		{"invalid: schedule", "later", time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", tt.retryAfter)
				w.WriteHeader(http.StatusTooManyRequests)
			}))
			defer srv.Close()
			o := newMemOutbox()
			o.add(task("msg_ra", srv.URL, newSecret(t)))
			d, _ := newDispatcher(t, o, nil, func(c *config) { c.service.Now = func() time.Time { return now } })
			stop, _ := run(t, d)
			waitFor(t, "the attempt", func() bool { return len(o.results("msg_ra")) >= 1 })
			stop()
			r := o.results("msg_ra")[0]
			if r.State != plantstore.DeliveryPending || r.NextAttemptAt == nil || r.StatusCode != 429 {
				t.Fatalf("result = %+v", r)
			}
			if got := r.NextAttemptAt.Sub(now); got != tt.want {
				t.Errorf("next attempt in %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDispatcherSlowReceiverDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	slowStarted := make(chan struct{})
	var slowDone atomic.Bool
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(slowStarted)
		select { // slow: answers when the test says so (or after a bound)
		case <-release:
		case <-time.After(10 * time.Second):
		}
		slowDone.Store(true)
	}))
	defer slow.Close()
	defer close(release)
	fast, got := recorder(t, 200)

	o := newMemOutbox()
	o.add(task("msg_slow", slow.URL, newSecret(t)))
	d, svc := newDispatcher(t, o, nil, func(c *config) { c.service.Delivery.Concurrency = 4 })
	run(t, d)
	select {
	case <-slowStarted:
	case <-time.After(10 * time.Second):
		t.Fatal("slow receiver never called")
	}
	// Created while the slow attempt is in flight: claiming must go on.
	// (Another owner's: alice has her share of the 4 workers, 1, in flight.)
	for _, id := range []string{"msg_fast1", "msg_fast2", "msg_fast3"} {
		tk := task(id, fast.URL, newSecret(t))
		tk.Owner = "bob"
		o.add(tk)
	}
	svc.Notifier.DeliveriesDue()
	waitFor(t, "the fast deliveries", func() bool {
		for _, id := range []string{"msg_fast1", "msg_fast2", "msg_fast3"} {
			if rs := o.results(id); len(rs) != 1 || rs[0].State != plantstore.DeliverySucceeded {
				return false
			}
		}
		return true
	})
	if slowDone.Load() {
		t.Error("the slow receiver finished before the fast deliveries")
	}
	if n := len(got()); n != 3 {
		t.Errorf("fast receiver got %d requests, want 3", n)
	}
	if rs := o.results("msg_slow"); len(rs) != 0 {
		t.Errorf("slow delivery recorded before it answered: %+v", rs)
	}
}

// TestDispatcherShutdownFinishesInFlight: once its context ends, Run
// claims no more but waits for the attempt in flight, which is not
// cancelled, and records it. In a synctest bubble, with a receiver in
// memory: synctest.Wait proves that Run is still waiting.
func TestDispatcherShutdownFinishesInFlight(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testDispatcherShutdownFinishesInFlight)
}

func testDispatcherShutdownFinishesInFlight(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	client := handlerClient(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-release:
		case <-r.Context().Done():
			w.WriteHeader(http.StatusServiceUnavailable) // the attempt was cancelled
		}
	})
	o := newMemOutbox()
	o.add(task("msg_inflight", "http://127.0.0.1/hook", newSecret(t)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	d, _ := newDispatcher(t, o, nil, func(c *config) { c.sender.Client = client })
	go func() { d.Run(ctx); close(done) }()
	<-started
	cancel()
	// Run waits for the attempt, which waits for release.
	synctest.Wait()
	select {
	case <-done:
		t.Fatal("Run returned with an attempt in flight")
	default:
	}
	claims := o.claimCount()
	close(release)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the in-flight attempt finished")
	}
	rs := o.results("msg_inflight")
	if len(rs) != 1 || rs[0].State != plantstore.DeliverySucceeded {
		t.Errorf("in-flight attempt recorded as %+v, want one succeeded", rs)
	}
	if n := o.claimCount(); n != claims {
		t.Errorf("claimed %d more times after cancel", n-claims)
	}
}

// handlerClient returns an HTTP client that has h answer each request in
// memory, without a connection: what h waits on is durably blocking in a
// synctest bubble.
func handlerClient(h http.HandlerFunc) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		sr := r.Clone(r.Context())
		sr.RequestURI = r.URL.RequestURI()
		h(rec, sr)
		return rec.Result(), nil
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestDispatcherRefusesPrivateTargetsByDefault(t *testing.T) {
	t.Parallel()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	o := newMemOutbox()
	o.add(task("msg_ssrf", srv.URL, newSecret(t)))
	d, _ := newDispatcher(t, o, nil, func(c *config) { c.sender.AllowPrivate = false }) // as serve runs by default: private addresses refused
	stop, _ := run(t, d)
	waitFor(t, "the attempt", func() bool { return len(o.results("msg_ssrf")) >= 1 })
	waitClaims(t, 3, o.claimCount) // a retry (1 ms later) would be claimed
	stop()
	if _, n := o.counts(); n != 1 {
		t.Errorf("claimed %d tasks, want 1: the refused delivery was retried", n)
	}
	results := o.results("msg_ssrf")
	r := results[0]
	// Refused before connecting, and not retried: every retry would be
	// refused the same way.
	if len(results) != 1 || r.State != plantstore.DeliveryFailed || r.NextAttemptAt != nil || r.StatusCode != 0 ||
		!strings.Contains(r.Error, "forbidden address") || !strings.Contains(r.Error, "--webhook-allow-private") ||
		strings.Contains(r.Error, srv.URL) {
		t.Errorf("results = %+v, want one, failed, with a forbidden-address error naming --webhook-allow-private (without the URL)", results)
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("receiver saw %d connections, want 0", n)
	}
}

// TestDispatcherRefusesNameResolvingToPrivate: a receiver's name that
// resolves to a forbidden address (here a test resolver maps it to
// 127.0.0.1; no DNS query leaves the process) is refused at connect time:
// the attempt is recorded with that reason and not retried, and the
// receiver sees no connection. The same client with AllowPrivate reaches
// the receiver through that name, so the refusal is the address check's.
func TestDispatcherRefusesNameResolvingToPrivate(t *testing.T) {
	t.Parallel()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	resolver := dnstest.New(map[string]netip.Addr{"receiver.test": netip.MustParseAddr("127.0.0.1")})
	url := fmt.Sprintf("http://receiver.test:%d/hook", srv.Listener.Addr().(*net.TCPAddr).Port)

	o := newMemOutbox()
	o.add(task("msg_name", url, newSecret(t)))
	var log lockedBuffer
	d, _ := newDispatcher(t, o, nil, func(c *config) {
		c.sender.Client = sender.NewClient(sender.ClientOptions{Resolver: resolver.Resolver, Timeout: 5 * time.Second})
		c.service.Delivery.Logger = slog.New(slog.NewJSONHandler(&log, nil))
	})
	stop, _ := run(t, d)
	waitFor(t, "the attempt", func() bool { return len(o.results("msg_name")) >= 1 })
	waitClaims(t, 3, o.claimCount) // a retry (1 ms later) would be claimed
	stop()
	if _, n := o.counts(); n != 1 {
		t.Errorf("claimed %d tasks, want 1: the refused delivery was retried", n)
	}
	// The attempt's error (what the API shows) names the kind only; the
	// address the name resolved to is in the server's log, with the
	// subscription.
	results := o.results("msg_name")
	if r := results[0]; len(results) != 1 || r.State != plantstore.DeliveryFailed || r.NextAttemptAt != nil ||
		r.Error != sender.FailureForbiddenAddress+": "+sender.AllowPrivateHint {
		t.Errorf("results = %+v, want one, failed, with error %q", results, sender.FailureForbiddenAddress+": "+sender.AllowPrivateHint)
	}
	if line := log.String(); !strings.Contains(line, `"subscription_id":"whk_msg_name"`) ||
		!strings.Contains(line, "forbidden address: 127.0.0.1 is not globally reachable") {
		t.Errorf("log = %s, want the subscription and the address 127.0.0.1 refused", line)
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("receiver saw %d connections, want 0", n)
	}
	if resolver.Queries() == 0 {
		t.Error("the name was not resolved by the test resolver")
	}

	// Control: with private addresses allowed, the name reaches the receiver.
	o = newMemOutbox()
	o.add(task("msg_allowed", url, newSecret(t)))
	d, _ = newDispatcher(t, o, nil, func(c *config) {
		c.sender.Client = sender.NewClient(sender.ClientOptions{AllowPrivate: true, Resolver: resolver.Resolver, Timeout: 5 * time.Second})
	})
	stop, _ = run(t, d)
	waitFor(t, "the delivery", func() bool { return len(o.results("msg_allowed")) >= 1 })
	stop()
	if r := o.results("msg_allowed")[0]; r.State != plantstore.DeliverySucceeded {
		t.Errorf("with AllowPrivate: %+v, want delivered", r)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("receiver saw %d connections, want 1", n)
	}
}

func TestDispatcherQueueGauges(t *testing.T) {
	t.Parallel()
	o := newMemOutbox()
	now := time.Now()
	for i, id := range []string{"msg_a", "msg_b"} {
		tk := task(id, "http://127.0.0.1:1/", newSecret(t))
		tk.CreatedAt = now.Add(-time.Duration(i+1) * time.Minute)
		o.add(tk)
	}
	reg := prometheus.NewRegistry()
	// statsOnly claims nothing: the queue stays as is.
	d, _ := newDispatcher(t, statsOnly{o}, reg, func(c *config) { c.service.Now = func() time.Time { return now } })
	run(t, d)
	waitFor(t, "the gauges", func() bool {
		return metric(t, reg, "plantstore_webhook_queue_depth", "") == 2 &&
			metric(t, reg, "plantstore_webhook_oldest_pending_seconds", "") == 120
	})
}

type statsOnly struct{ *memOutbox }

func (statsOnly) ClaimDeliveries(context.Context, plantstore.Claim) ([]*plantstore.Task, error) {
	return nil, nil
}

func TestDispatcherConfig(t *testing.T) {
	t.Parallel()
	snd := sender.New(sender.Options{})
	if _, err := service.New(nil, service.Config{Sender: snd}).NewDispatcher(nil); err == nil {
		t.Error("NewDispatcher without an outbox: no error")
	}
	if _, err := service.New(nil, service.Config{}).NewDispatcher(newMemOutbox()); err == nil {
		t.Error("NewDispatcher without a sender: no error")
	}
	svc := service.New(nil, service.Config{Sender: snd, Delivery: service.DeliveryConfig{Lease: 10 * time.Second}})
	if _, err := svc.NewDispatcher(newMemOutbox()); err == nil || !strings.Contains(err.Error(), "lease") {
		t.Errorf("NewDispatcher with a lease shorter than the attempt timeout = %v", err)
	}
	svc = service.New(nil, service.Config{Sender: snd})
	svc.Notifier.DeliveriesDue() // before Run, before the dispatcher: must not block
	svc.Notifier.DeliveriesDue()
	d, err := svc.NewDispatcher(newMemOutbox())
	if err != nil {
		t.Fatalf("NewDispatcher with defaults = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d.Run(ctx) // returns at once on a cancelled context
}

// TestDispatcherOwnerShare: an owner whose receivers accept and never
// answer holds at most its share of the workers (a quarter of them), at
// most MaxInFlight per subscription; another owner's delivery goes out at
// once.
func TestDispatcherOwnerShare(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var inFlight, most atomic.Int32
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
	}))
	defer hang.Close()
	defer close(release)
	fast, got := recorder(t, http.StatusOK)

	o := newMemOutbox()
	for sub := range 4 {
		for n := range 5 {
			tk := task(fmt.Sprintf("msg_a%d_%d", sub, n), hang.URL, newSecret(t))
			tk.SubscriptionID = fmt.Sprint("whk_a", sub)
			o.add(tk)
		}
	}
	d, svc := newDispatcher(t, o, nil, func(c *config) { c.service.Delivery.Concurrency = 8 }) // a's share: 2
	run(t, d)
	waitFor(t, "a's share in flight", func() bool { return inFlight.Load() == 2 })
	tk := task("msg_b", fast.URL, newSecret(t))
	tk.Owner, tk.SubscriptionID = "bob", "whk_b"
	o.add(tk)
	began := time.Now()
	svc.Notifier.DeliveriesDue()
	waitFor(t, "bob's delivery", func() bool { return len(got()) == 1 })
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("bob's delivery took %v behind a's hanging receivers", took)
	}
	waitClaims(t, 3, o.claimCount) // claims go on: a must stay at its share
	if _, n := o.counts(); n != 3 {
		t.Errorf("claimed %d tasks, want 3: a's share of 2 and bob's", n)
	}
	if n := most.Load(); n != 2 {
		t.Errorf("a had %d attempts in flight at most, want 2 (a quarter of 8 workers)", n)
	}
}

// TestDispatcherPrunes: with a retention, a pass at start deletes batches
// of history older than it until one comes back short, and the next pass
// comes an interval later; none without. In synctest bubbles, whose clock
// passes the interval at once.
func TestDispatcherPrunes(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
	before := now.Add(-30 * 24 * time.Hour)
	prunes := func(o *memOutbox) []time.Time {
		o.mu.Lock()
		defer o.mu.Unlock()
		return slices.Clone(o.prunes)
	}
	synctest.Test(t, func(t *testing.T) {
		o := newMemOutbox()
		left := service.DeliveryPruneBatch + 3
		o.prune = func(limit int) int {
			n := min(left, limit)
			left -= n
			return n
		}
		d, _ := newDispatcher(t, o, nil, func(c *config) {
			c.service.Now = func() time.Time { return now }
			c.service.Delivery.Retention = 30 * 24 * time.Hour
			c.service.Delivery.PollInterval = time.Hour // no claims to run through meanwhile
		})
		run(t, d)
		time.Sleep(service.DeliveryPruneInterval) // the next pass is an interval after the first ended
		synctest.Wait()
		if diff := cmp.Diff([]time.Time{before, before}, prunes(o)); diff != "" {
			t.Fatalf("PruneOutbox calls in the first interval, by before (-want +got):\n%s", diff)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if diff := cmp.Diff([]time.Time{before, before, before}, prunes(o)); diff != "" {
			t.Fatalf("PruneOutbox calls after the second pass, by before (-want +got):\n%s", diff)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		o := newMemOutbox()
		d, _ := newDispatcher(t, o, nil, func(c *config) { c.service.Delivery.PollInterval = time.Hour })
		stop, _ := run(t, d)
		time.Sleep(2 * service.DeliveryPruneInterval)
		stop()
		if n := len(prunes(o)); n != 0 {
			t.Fatalf("%d PruneOutbox calls with no retention", n)
		}
	})
}

// hangingServer is a receiver on 127.0.0.1 that holds every request until
// release is called (at the latest when the test ends); it counts the
// requests in flight.
func hangingServer(t *testing.T) (url string, inFlight *atomic.Int32, release func()) {
	t.Helper()
	released := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(released) }) }
	inFlight = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inFlight.Add(1)
		defer inFlight.Add(-1)
		io.Copy(io.Discard, r.Body) // then net/http sees the client go
		select {
		case <-released:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(release) // runs first
	return srv.URL, inFlight, release
}

// TestDispatcherPingBounds: a ping counts against MaxInFlight and
// MaxInFlightPerOwner like a delivery: past either, PingSubscription sends
// nothing and answers CodeWebhookBusy with RetryAfter (the attempt
// timeout); leased deliveries count; and the dispatcher's claims count the
// pings in flight. Over a real SQLite file, as serve wires the services.
func TestDispatcherPingBounds(t *testing.T) {
	t.Parallel()
	url, inFlight, release := hangingServer(t)
	svc := service.New(MustOpenDB(t), service.Config{
		Sender: sender.New(sender.Options{AllowPrivate: true, Timeout: 5 * time.Second}),
		Delivery: service.DeliveryConfig{
			MaxInFlight: 2, MaxInFlightPerOwner: 3, AttemptTimeout: 5 * time.Second,
			PollInterval: 5 * time.Millisecond,
		},
	})
	q := &countingQueue{Queue: svc.Outbox}
	d, err := svc.NewDispatcher(q)
	if err != nil {
		t.Fatal(err)
	}
	subs := map[string]string{} // name -> id
	for _, name := range []string{"alice/a1", "alice/a2", "alice/a3", "bob/b1"} {
		owner, _, _ := strings.Cut(name, "/")
		sub, err := svc.Webhooks.CreateSubscription(t.Context(), owner, url, name)
		if err != nil {
			t.Fatal(err)
		}
		subs[name] = sub.ID
	}
	var cancels []context.CancelFunc
	t.Cleanup(func() {
		for _, c := range cancels {
			c()
		}
	})
	ping := func(name string) <-chan error {
		owner, _, _ := strings.Cut(name, "/")
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		done := make(chan error, 1)
		go func() {
			_, err := svc.Webhooks.PingSubscription(ctx, owner, subs[name])
			done <- err
		}()
		return done
	}
	wantBusy := func(err error) {
		t.Helper()
		var e *plantstore.Error
		if !errors.As(err, &e) || e.Code != plantstore.CodeWebhookBusy || e.RetryAfter != 5*time.Second {
			t.Fatalf("ping past the bound: %v, want CodeWebhookBusy with RetryAfter 5s", err)
		}
	}
	immediate := func(ch <-chan error) error {
		t.Helper()
		select {
		case err := <-ch:
			return err
		case <-time.After(5 * time.Second):
			t.Fatal("ping past the bound did not answer at once")
			return nil
		}
	}

	// The subscription's bound: two pings hang, the third is refused.
	first := ping("alice/a1")
	cancelFirst := cancels[0]
	ping("alice/a1")
	waitFor(t, "two pings in flight", func() bool { return inFlight.Load() == 2 })
	wantBusy(immediate(ping("alice/a1")))
	// The owner's bound (3): one more to another subscription, then none.
	ping("alice/a2")
	waitFor(t, "three pings in flight", func() bool { return inFlight.Load() == 3 })
	wantBusy(immediate(ping("alice/a3")))
	if n := inFlight.Load(); n != 3 {
		t.Fatalf("%d requests at the receiver, want 3", n)
	}
	// Another owner is not counted.
	ping("bob/b1")
	waitFor(t, "bob's ping in flight", func() bool { return inFlight.Load() == 4 })

	// Claims count the pings: b1 has one ping in flight, so of its three
	// due deliveries one is attempted.
	for id := range int64(3) {
		if _, _, err := svc.Plants.CreatePlant(t.Context(), &plantstore.Plant{Owner: "bob", ID: id + 1, Name: "Fern"}); err != nil {
			t.Fatal(err)
		}
	}
	run(t, d)
	t.Cleanup(release) // before the dispatcher's stop, which waits for its attempts
	waitFor(t, "bob's delivery in flight", func() bool { return inFlight.Load() == 5 })
	waitClaims(t, 3, func() int { return int(q.claims.Load()) }) // claims go on: b1 must stay at 2
	if n := q.claimed.Load(); n != 1 {
		t.Fatalf("claimed %d deliveries, want 1: a claim did not count the ping in flight", n)
	}
	if n := inFlight.Load(); n != 5 {
		t.Fatalf("%d requests at the receiver, want 5: a claim did not count the ping in flight", n)
	}
	// And a ping counts the leased delivery: b1 has a ping and a delivery
	// in flight.
	wantBusy(immediate(ping("bob/b1")))

	// A ping that ends (its client went) frees its place.
	cancelFirst()
	if err := <-first; err != nil {
		t.Fatalf("the cancelled ping: %v", err)
	}
	waitFor(t, "the cancelled ping to leave the receiver", func() bool { return inFlight.Load() == 4 })
	ping("alice/a1")
	waitFor(t, "a ping in the freed place", func() bool { return inFlight.Load() == 5 })
}

// countingQueue counts the claims made of its Queue and the tasks they
// returned.
type countingQueue struct {
	service.Queue
	claims, claimed atomic.Int64
}

func (q *countingQueue) ClaimDeliveries(ctx context.Context, c plantstore.Claim) ([]*plantstore.Task, error) {
	tasks, err := q.Queue.ClaimDeliveries(ctx, c)
	q.claims.Add(1)
	q.claimed.Add(int64(len(tasks)))
	return tasks, err
}

// lockedBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// dispatcherOf returns the dispatcher of newDispatcher's results.
func dispatcherOf(d *service.Dispatcher, _ *service.Services) *service.Dispatcher { return d }

func newSecret(t *testing.T) string {
	t.Helper()
	s, err := plantstore.NewWebhookSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDefaultJitter(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{time.Nanosecond, 5 * time.Second, 8 * time.Hour} {
		for range 1000 {
			if got := service.DefaultJitter(d); got < d/2 || got >= d/2+d {
				t.Fatalf("DefaultJitter(%v) = %v, outside [d/2, 3d/2)", d, got)
			}
		}
	}
	if got := service.DefaultJitter(0); got != 0 {
		t.Errorf("DefaultJitter(0) = %v", got)
	}
}

// TestDefaultScheduleSpan keeps the documented schedule honest: 11 attempts
// over about a day.
func TestDefaultScheduleSpan(t *testing.T) {
	t.Parallel()
	var total time.Duration
	for _, d := range service.DefaultSchedule {
		total += d
	}
	if want := 23*time.Hour + 42*time.Minute + 35*time.Second; total != want || len(service.DefaultSchedule) != 10 {
		t.Errorf("schedule: %d waits, %v in all; the doc says 10 and %v", len(service.DefaultSchedule), total, want)
	}
}

// TestDispatcherDrainsABacklogAtOnce: a subscription's backlog, bounded to
// MaxInFlight attempts at a time, drains as fast as its receiver answers:
// each recorded attempt frees a place and Run claims again at once, not a
// poll interval later (at MaxInFlight deliveries a poll interval, the
// backlog a failover leaves would take minutes). In a synctest bubble:
// the deliveries are all made before a poll interval passes.
func TestDispatcherDrainsABacklogAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var got atomic.Int32
		client := handlerClient(func(w http.ResponseWriter, r *http.Request) { got.Add(1) })
		o := newMemOutbox()
		secret := newSecret(t)
		const n = 40
		for i := range n {
			tk := task(fmt.Sprintf("msg_%02d", i), "http://127.0.0.1/hook", secret)
			tk.SubscriptionID = "whk_backlog"
			o.add(tk)
		}
		d, _ := newDispatcher(t, o, nil, func(c *config) {
			c.sender.Client = client
			c.service.Delivery.PollInterval = time.Second
			c.service.Delivery.MaxInFlight = 2
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { d.Run(ctx); close(done) }()
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		if g := got.Load(); g != n {
			t.Errorf("%d of the %d deliveries made within half a poll interval, want all", g, n)
		}
		cancel()
		<-done
	})
}

// failingQueue is a Queue whose first fails CompleteDelivery calls fail
// as a database failing over does.
type failingQueue struct {
	*memOutbox
	fails atomic.Int32
}

func (q *failingQueue) CompleteDelivery(ctx context.Context, t *plantstore.Task, r plantstore.AttemptResult) error {
	if q.fails.Add(-1) >= 0 {
		return fmt.Errorf("complete webhook delivery: %w: read only connection", plantstore.ErrUnavailable)
	}
	return q.memOutbox.CompleteDelivery(ctx, t, r)
}

// TestDispatcherRecordsAgainAfterAFailure: an attempt whose record fails
// (the database failing over) is recorded once the database answers
// again, which releases its lease: the subscription's next delivery goes
// out then, not once the lease ends, and the first is not sent twice. In
// a synctest bubble, with a 30 s lease: both are delivered and recorded
// within 5 s.
func TestDispatcherRecordsAgainAfterAFailure(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var got atomic.Int32
		client := handlerClient(func(w http.ResponseWriter, r *http.Request) { got.Add(1) })
		q := &failingQueue{memOutbox: newMemOutbox()}
		q.fails.Store(3)
		secret := newSecret(t)
		for _, id := range []string{"msg_first", "msg_second"} {
			tk := task(id, "http://127.0.0.1/hook", secret)
			tk.SubscriptionID = "whk_one"
			q.add(tk)
			time.Sleep(time.Millisecond) // msg_first is due first
		}
		d, _ := newDispatcher(t, q, nil, func(c *config) {
			c.sender.Client = client
			c.service.Delivery.MaxInFlight = 1
			c.service.Delivery.Lease = 30 * time.Second
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { d.Run(ctx); close(done) }()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		for _, id := range []string{"msg_first", "msg_second"} {
			if rs := q.results(id); len(rs) != 1 || rs[0].State != plantstore.DeliverySucceeded {
				t.Errorf("%s recorded as %+v within 5 s, want one succeeded attempt", id, rs)
			}
		}
		if g := got.Load(); g != 2 {
			t.Errorf("receiver got %d requests, want 2", g)
		}
		cancel()
		<-done
	})
}
