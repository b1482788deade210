package webhook_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/webhook"
)

// memOutbox is an in-memory plantstore.OutboxService, a test double of the
// dispatcher's dependency (service.OutboxService implements it over the row
// stores, which have their own conformance tests). Its tasks carry URL and
// Secrets as the service sets them.
type memOutbox struct {
	mu       sync.Mutex
	entries  []*memEntry
	disabled map[string]bool
	claims   int
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

// ClaimTasks leases due entries as the row stores do: chosen by c.Pick,
// timed by the real clock (the database's).
func (o *memOutbox) ClaimTasks(ctx context.Context, c plantstore.Claim) ([]*plantstore.Task, error) {
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
	for _, d := range c.Pick(due, inFlight) {
		e := entries[[2]string{d.MessageID, d.SubscriptionID}]
		e.leaseUntil = now.Add(c.Lease)
		t := e.task
		t.Attempts = len(e.results)
		out = append(out, &t)
	}
	return out, nil
}

func (o *memOutbox) CompleteTask(ctx context.Context, t *plantstore.Task, r plantstore.AttemptResult) error {
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

// newDispatcher returns a dispatcher for 127.0.0.1 receivers with tiny
// retry waits and no jitter.
func newDispatcher(o *memOutbox, reg prometheus.Registerer) *webhook.Dispatcher {
	d := &webhook.Dispatcher{
		Outbox:       o,
		Client:       webhook.NewClient(webhook.ClientOptions{AllowPrivate: true, Timeout: 10 * time.Second}),
		PollInterval: 5 * time.Millisecond,
		Schedule:     []time.Duration{time.Millisecond, time.Millisecond},
		Jitter:       func(d time.Duration) time.Duration { return d },
	}
	if reg != nil {
		d.Metrics = webhook.NewMetrics(reg)
	}
	return d
}

// start runs d until the test ends; the returned stop cancels Run and
// returns its error once it has returned.
func start(t *testing.T, d *webhook.Dispatcher) (stop func() error, done <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan struct{})
	var err error
	go func() {
		defer close(ch)
		err = d.Run(ctx)
	}()
	stop = func() error {
		cancel()
		select {
		case <-ch:
		case <-time.After(20 * time.Second):
			t.Fatal("Run did not return")
		}
		return err
	}
	t.Cleanup(func() { stop() })
	return stop, ch
}

func task(id, url string, secrets ...string) plantstore.Task {
	return plantstore.Task{
		MessageID: id, SubscriptionID: "whk_" + id, Owner: "alice", PlantID: 7,
		Payload: []byte(`{"id":7,"name":"Fern"}`), URL: url, Secrets: secrets,
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
	srv, got := recorder(t, http.StatusNoContent)
	o := newMemOutbox()
	current, previous := newSecret(t), newSecret(t)
	o.add(task("msg_ok", srv.URL+"/hooks?token=x", current, previous))
	reg := prometheus.NewRegistry()
	d := newDispatcher(o, reg)
	stop, _ := start(t, d)
	d.Notify()
	waitFor(t, "the attempt to be recorded", func() bool { return len(o.results("msg_ok")) == 1 })
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}

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
	srv, got := recorder(t, 500, 500, 200)
	o := newMemOutbox()
	o.add(task("msg_retry", srv.URL, newSecret(t)))
	reg := prometheus.NewRegistry()
	stop, _ := start(t, newDispatcher(o, reg))
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
	srv, got := recorder(t, 503)
	o := newMemOutbox()
	o.add(task("msg_fail", srv.URL, newSecret(t)))
	reg := prometheus.NewRegistry()
	stop, _ := start(t, newDispatcher(o, reg)) // Schedule of 2 waits: 3 attempts
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
	srv, got := recorder(t, http.StatusGone)
	o := newMemOutbox()
	o.add(task("msg_gone", srv.URL, newSecret(t)))
	reg := prometheus.NewRegistry()
	stop, _ := start(t, newDispatcher(o, reg))
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
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", tt.retryAfter)
				w.WriteHeader(http.StatusTooManyRequests)
			}))
			defer srv.Close()
			o := newMemOutbox()
			o.add(task("msg_ra", srv.URL, newSecret(t)))
			d := newDispatcher(o, nil)
			d.Now = func() time.Time { return now }
			stop, _ := start(t, d)
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
	d := newDispatcher(o, nil)
	d.Concurrency = 4
	start(t, d)
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
	d.Notify()
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

func TestDispatcherShutdownFinishesInFlight(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
	}))
	defer srv.Close()
	o := newMemOutbox()
	o.add(task("msg_inflight", srv.URL, newSecret(t)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- newDispatcher(o, nil).Run(ctx) }()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("receiver never called")
	}
	cancel()
	// Run waits for the attempt, which waits for release.
	time.Sleep(20 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("Run returned with an attempt in flight")
	default:
	}
	o.mu.Lock()
	claims := o.claims
	o.mu.Unlock()
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the in-flight attempt finished")
	}
	rs := o.results("msg_inflight")
	if len(rs) != 1 || rs[0].State != plantstore.DeliverySucceeded {
		t.Errorf("in-flight attempt recorded as %+v, want one succeeded", rs)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.claims != claims {
		t.Errorf("claimed %d more times after cancel", o.claims-claims)
	}
}

func TestDispatcherRefusesPrivateTargetsByDefault(t *testing.T) {
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
	d := newDispatcher(o, nil)
	d.Client = nil // the default client: private addresses refused
	stop, _ := start(t, d)
	waitFor(t, "the attempt", func() bool { return len(o.results("msg_ssrf")) >= 1 })
	stop()
	r := o.results("msg_ssrf")[0]
	if r.State != plantstore.DeliveryPending || r.StatusCode != 0 ||
		!strings.Contains(r.Error, "forbidden address") || strings.Contains(r.Error, srv.URL) {
		t.Errorf("result = %+v, want pending with a forbidden-address error (without the URL)", r)
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("receiver saw %d connections, want 0", n)
	}
}

func TestDispatcherQueueGauges(t *testing.T) {
	o := newMemOutbox()
	now := time.Now()
	for i, id := range []string{"msg_a", "msg_b"} {
		tk := task(id, "http://127.0.0.1:1/", newSecret(t))
		tk.CreatedAt = now.Add(-time.Duration(i+1) * time.Minute)
		o.add(tk)
	}
	reg := prometheus.NewRegistry()
	d := newDispatcher(o, reg)
	d.Now = func() time.Time { return now }
	d.Outbox = statsOnly{o} // claims nothing: the queue stays as is
	start(t, d)
	waitFor(t, "the gauges", func() bool {
		return metric(t, reg, "plantstore_webhook_queue_depth", "") == 2 &&
			metric(t, reg, "plantstore_webhook_oldest_pending_seconds", "") == 120
	})
}

type statsOnly struct{ *memOutbox }

func (statsOnly) ClaimTasks(context.Context, plantstore.Claim) ([]*plantstore.Task, error) {
	return nil, nil
}

func TestDispatcherConfig(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (&webhook.Dispatcher{}).Run(ctx); err == nil {
		t.Error("Run without an Outbox: no error")
	}
	d := &webhook.Dispatcher{Outbox: newMemOutbox(), Lease: 10 * time.Second}
	if err := d.Run(ctx); err == nil || !strings.Contains(err.Error(), "lease") {
		t.Errorf("Run with a lease shorter than the attempt timeout = %v", err)
	}
	d = &webhook.Dispatcher{Outbox: newMemOutbox()}
	d.Notify() // before Run: must not block
	d.Notify()
	if err := d.Run(ctx); err != nil {
		t.Errorf("Run with defaults on a cancelled context = %v", err)
	}
}

// TestDispatcherOwnerShare: an owner whose receivers accept and never
// answer holds at most its share of the workers (a quarter of them), at
// most MaxInFlight per subscription; another owner's delivery goes out at
// once.
func TestDispatcherOwnerShare(t *testing.T) {
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
	d := newDispatcher(o, nil)
	d.Concurrency = 8 // a's share: 2
	start(t, d)
	waitFor(t, "a's share in flight", func() bool { return inFlight.Load() == 2 })
	tk := task("msg_b", fast.URL, newSecret(t))
	tk.Owner, tk.SubscriptionID = "bob", "whk_b"
	o.add(tk)
	began := time.Now()
	d.Notify()
	waitFor(t, "bob's delivery", func() bool { return len(got()) == 1 })
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("bob's delivery took %v behind a's hanging receivers", took)
	}
	time.Sleep(100 * time.Millisecond) // claims go on: a must stay at its share
	if n := most.Load(); n != 2 {
		t.Errorf("a had %d attempts in flight at most, want 2 (a quarter of 8 workers)", n)
	}
}

// TestDispatcherPrunes: with a retention, a pass at start deletes batches
// of history older than it until one comes back short; none without.
func TestDispatcherPrunes(t *testing.T) {
	now := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
	o := newMemOutbox()
	left := webhook.PruneBatch + 3
	o.prune = func(limit int) int {
		n := min(left, limit)
		left -= n
		return n
	}
	d := newDispatcher(o, nil)
	d.Now = func() time.Time { return now }
	d.Retention = 30 * 24 * time.Hour
	start(t, d)
	waitFor(t, "a pruning pass", func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return len(o.prunes) >= 2
	})
	time.Sleep(100 * time.Millisecond) // the next pass is a minute away
	o.mu.Lock()
	prunes := slices.Clone(o.prunes)
	o.mu.Unlock()
	before := now.Add(-30 * 24 * time.Hour)
	if diff := cmp.Diff([]time.Time{before, before}, prunes); diff != "" {
		t.Fatalf("PruneOutbox calls, by before (-want +got):\n%s", diff)
	}

	o = newMemOutbox()
	d = newDispatcher(o, nil)
	stop, _ := start(t, d)
	time.Sleep(50 * time.Millisecond)
	stop()
	if len(o.prunes) != 0 {
		t.Fatalf("%d PruneOutbox calls with no retention", len(o.prunes))
	}
}

// failingClaims is an outbox whose claims fail with err until n of them
// have, then work.
type failingClaims struct {
	*memOutbox
	err  error
	n    int32
	seen atomic.Int32
}

func (f *failingClaims) ClaimTasks(ctx context.Context, c plantstore.Claim) ([]*plantstore.Task, error) {
	if f.seen.Add(1) <= f.n {
		return nil, f.err
	}
	return f.memOutbox.ClaimTasks(ctx, c)
}

// TestDispatcherClaimOutageLogs: while the storage is unavailable (a
// failover) every poll's claim fails; that is logged once as a warning and
// once as an info line when claims work again, not as an error per poll.
// Any other failure is an error, each time.
func TestDispatcherClaimOutageLogs(t *testing.T) {
	for _, tt := range []struct {
		name               string
		err                error
		warns, infos, errs int
	}{
		{"Unavailable", fmt.Errorf("postgres: claim: %w: connection refused", plantstore.ErrUnavailable), 1, 1, 0},
		{"Other", fmt.Errorf("bad row"), 0, 0, 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf syncBuffer
			o := &failingClaims{memOutbox: newMemOutbox(), err: tt.err, n: 20}
			d := newDispatcher(o.memOutbox, nil)
			d.Outbox = o
			d.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
			stop, _ := start(t, d)
			waitFor(t, "the claims to work again", func() bool { return o.seen.Load() > o.n+2 })
			stop()
			log := buf.String()
			for level, want := range map[string]int{"WARN": tt.warns, "INFO": tt.infos, "ERROR": tt.errs} {
				if got := strings.Count(log, "level="+level); got != want {
					t.Errorf("%d %s lines after %d failed claims, want %d:\n%s", got, level, o.n, want, log)
				}
			}
		})
	}
}

// syncBuffer is a strings.Builder safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
