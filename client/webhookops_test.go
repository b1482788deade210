package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/webhook"
)

// switchReceiver is a receiver on 127.0.0.1 whose status can change, that
// keeps every request body it got.
type switchReceiver struct {
	URL    string
	status atomic.Int64
	mu     sync.Mutex
	bodies []recorded
}

type recorded struct {
	header http.Header
	body   []byte
}

func newSwitchReceiver(t *testing.T, status int) *switchReceiver {
	t.Helper()
	r := &switchReceiver{}
	r.status.Store(int64(status))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, recorded{req.Header.Clone(), body})
		r.mu.Unlock()
		w.WriteHeader(int(r.status.Load()))
		io.WriteString(w, "receiver says hi")
	}))
	t.Cleanup(srv.Close)
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("receiver at %s, want 127.0.0.1", srv.URL)
	}
	r.URL = srv.URL
	return r
}

func (r *switchReceiver) requests() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bodies)
}

// allDeliveries reads every attempt of the subscription that opts selects
// with the iterator.
func allDeliveries(t *testing.T, c *client.Client, id string, opts client.ListDeliveriesOptions) []client.Delivery {
	t.Helper()
	var out []client.Delivery
	for d, err := range c.WebhookDeliveries(context.Background(), id, opts) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// waitState polls until the delivery msgID has an attempt after which it
// was in state (at most 20 s).
func waitState(t *testing.T, c *client.Client, id, msgID, state string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, d := range allDeliveries(t, c, id, client.ListDeliveriesOptions{State: state}) {
			if d.MessageID == msgID {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery %s of %s not %s after 20 s: %+v", msgID, id, state, allDeliveries(t, c, id, client.ListDeliveriesOptions{}))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitFailed waits until a delivery of the subscription failed for good
// and returns its message id.
func waitFailed(t *testing.T, c *client.Client, id string, not ...string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, d := range allDeliveries(t, c, id, client.ListDeliveriesOptions{State: "failed"}) {
			if !slices.Contains(not, d.MessageID) {
				return d.MessageID
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failed delivery of %s after 20 s", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestWebhookOperations(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	ctx := context.Background()
	c := ts.client(t, ts.webhookToken(t, "alice"))
	rcv := newSwitchReceiver(t, http.StatusInternalServerError)
	w, err := c.CreateWebhook(ctx, client.NewWebhook{URL: rcv.URL + "/hook"})
	if err != nil {
		t.Fatal(err)
	}

	// A plant whose delivery fails: three attempts (the test server's
	// schedule has two retries), then failed, with the receiver's answer.
	t0 := time.Now().Add(-time.Second)
	if _, err := c.CreatePlant(ctx, client.NewPlant{ID: 1, Name: "Fern"}); err != nil {
		t.Fatal(err)
	}
	first := waitFailed(t, c, w.ID)
	all := allDeliveries(t, c, w.ID, client.ListDeliveriesOptions{})
	if len(all) != 3 {
		t.Fatalf("attempts = %+v, want 3", all)
	}
	for _, d := range all {
		if d.MessageID != first || d.StatusCode != 500 || d.ResponseBody != "receiver says hi" {
			t.Errorf("attempt %+v: want message %s, status 500, the receiver's body", d, first)
		}
	}
	// Paging: one attempt a page gives the same attempts, newest first.
	page, err := c.ListWebhookDeliveries(ctx, w.ID, client.ListDeliveriesOptions{Limit: 1})
	if err != nil || len(page.Deliveries) != 1 || page.Next == nil || page.Next.Limit != 1 {
		t.Fatalf("first page of 1: %+v, %v; want one attempt and a next page", page, err)
	}
	paged := allDeliveries(t, c, w.ID, client.ListDeliveriesOptions{Limit: 1})
	if len(paged) != 3 || paged[0].Attempt != 3 || paged[2].Attempt != 1 {
		t.Errorf("attempts a page at a time = %+v, want attempts 3, 2, 1", paged)
	}
	if got := allDeliveries(t, c, w.ID, client.ListDeliveriesOptions{State: "succeeded"}); len(got) != 0 {
		t.Errorf("succeeded attempts = %+v, want none", got)
	}

	// Ping: answered at once, signed with the subscription's secret.
	rcv.status.Store(http.StatusOK)
	p, err := c.PingWebhook(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Succeeded || p.StatusCode != 200 || p.ResponseBody != "receiver says hi" || !strings.HasPrefix(p.MessageID, "msg_") {
		t.Errorf("ping = %+v", p)
	}
	reqs := rcv.requests()
	last := reqs[len(reqs)-1]
	if err := webhook.Verify(w.Secret, last.header, last.body); err != nil {
		t.Errorf("ping signature: %v", err)
	}
	var ping struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	if err := json.Unmarshal(last.body, &ping); err != nil || ping.Type != "ping" || ping.ID != p.MessageID {
		t.Errorf("ping body %s: %v", last.body, err)
	}

	// Resend: the failed delivery is attempted again, the same message.
	q, err := c.ResendDelivery(ctx, w.ID, first)
	if err != nil {
		t.Fatal(err)
	}
	if q.MessageID != first || q.PlantID == nil || *q.PlantID != 1 {
		t.Errorf("resend = %+v, want delivery %s of plant 1", q, first)
	}
	waitState(t, c, w.ID, first, "succeeded")
	if _, err := c.ResendDelivery(ctx, w.ID, "msg_000000000000000000000000"); apiError(t, err).Code != 40404 {
		t.Errorf("resend of an unknown delivery: %v, want 40404", err)
	}

	// Recover: a second failed delivery is re-queued once, even if asked
	// twice.
	rcv.status.Store(http.StatusInternalServerError)
	if _, err := c.CreatePlant(ctx, client.NewPlant{ID: 2, Name: "Ivy"}); err != nil {
		t.Fatal(err)
	}
	second := waitFailed(t, c, w.ID, first)
	rcv.status.Store(http.StatusOK)
	r, err := c.RecoverWebhook(ctx, w.ID, t0)
	if err != nil {
		t.Fatal(err)
	}
	// The contract's date-time goes out to the second.
	if r.Requeued != 1 || !r.Since.Equal(t0.Truncate(time.Second)) {
		t.Errorf("recover = %+v, want 1 re-queued since %v", r, t0.Truncate(time.Second))
	}
	if r, err := c.RecoverWebhook(ctx, w.ID, t0); err != nil || r.Requeued != 0 {
		t.Errorf("recover again = %+v, %v; want 0 re-queued", r, err)
	}
	waitState(t, c, w.ID, second, "succeeded")

	// Disable, then re-enable with missed_since; a disabled subscription
	// cannot resend.
	off := false
	d, err := c.UpdateWebhook(ctx, w.ID, client.WebhookPatch{Enabled: &off})
	if err != nil || d.Enabled || d.DisabledReason != "manual" {
		t.Fatalf("disable = %+v, %v", d, err)
	}
	if _, err := c.ResendDelivery(ctx, w.ID, first); apiError(t, err).Code != 40903 {
		t.Errorf("resend while disabled: %v, want 40903", err)
	}
	on, desc := true, "typed now"
	e, err := c.UpdateWebhook(ctx, w.ID, client.WebhookPatch{Enabled: &on, Description: &desc, Types: []string{"plant.created", "plant.deleted"}})
	if err != nil {
		t.Fatal(err)
	}
	if !e.Enabled || e.MissedSince == nil || e.Description != desc || !slices.Equal(e.Types, []string{"plant.created", "plant.deleted"}) {
		t.Errorf("re-enable = %+v", e)
	}
	u, err := c.UpdateWebhook(ctx, w.ID, client.WebhookPatch{Untyped: true})
	if err != nil || len(u.Types) != 0 || u.MissedSince != nil {
		t.Errorf("untyped = %+v, %v", u, err)
	}
	if _, err := c.UpdateWebhook(ctx, w.ID, client.WebhookPatch{Untyped: true, Types: []string{"plant.created"}}); err == nil {
		t.Error("a patch with Types and Untyped: no error")
	}

	// Rotate with the old secret expiring now: deliveries carry one
	// signature.
	zero := time.Duration(0)
	rot, err := c.RotateWebhookSecret(ctx, w.ID, client.RotateSecretOptions{OldSecretExpiresIn: &zero})
	if err != nil || rot.Secret == w.Secret || !strings.HasPrefix(rot.Secret, "whsec_") {
		t.Fatalf("rotate = %+v, %v", rot, err)
	}
	if _, err := c.PingWebhook(ctx, w.ID); err != nil {
		t.Fatal(err)
	}
	reqs = rcv.requests()
	last = reqs[len(reqs)-1]
	if sig := last.header.Get("webhook-signature"); len(strings.Fields(sig)) != 1 {
		t.Errorf("signature after a rotation with no overlap: %q, want one", sig)
	}
	if err := webhook.Verify(rot.Secret, last.header, last.body); err != nil {
		t.Errorf("ping with the new secret: %v", err)
	}
	bad := 1500 * time.Millisecond
	if _, err := c.RotateWebhookSecret(ctx, w.ID, client.RotateSecretOptions{OldSecretExpiresIn: &bad}); err == nil {
		t.Error("rotate with a fraction of a second: no error")
	}
}
