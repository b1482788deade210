package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/client"
)

// webhookToken issues a token of owner that may create plants and manage
// webhooks.
func (ts *testServer) webhookToken(tb testing.TB, owner string) string {
	tb.Helper()
	return ts.token(tb, owner, plantstore.ScopePlantsRead, plantstore.ScopePlantsWrite, plantstore.ScopeWebhooksManage)
}

// receiver is a webhook receiver on 127.0.0.1 answering status and counting
// the requests it got.
func receiver(t *testing.T, status int) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("receiver at %s, want 127.0.0.1", srv.URL)
	}
	return srv.URL, &n
}

// waitDeliveries polls the subscription's deliveries until done accepts
// them (at most 20 s) and returns them.
func waitDeliveries(t *testing.T, c *client.Client, id string, done func([]client.Delivery) bool) []client.Delivery {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		page, err := c.ListWebhookDeliveries(context.Background(), id, client.ListDeliveriesOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ds := page.Deliveries; done(ds) {
			return ds
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries of %s after 20 s: %+v", id, page.Deliveries)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestWebhooks(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	ctx := context.Background()
	c := ts.client(t, ts.webhookToken(t, "alice"))
	okURL, okCount := receiver(t, http.StatusOK)

	created, err := c.CreateWebhook(ctx, client.NewWebhook{URL: okURL + "/hook", Description: "sync"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(created.ID, "whk_") || !strings.HasPrefix(created.Secret, "whsec_") {
		t.Fatalf("created = %+v, want a whk_ id and a whsec_ secret", created)
	}
	want := client.Webhook{ID: created.ID, URL: okURL + "/hook", Description: "sync", CreatedAt: created.CreatedAt, Enabled: true}
	if diff := cmp.Diff(want, *created, cmpopts.IgnoreFields(client.Webhook{}, "Secret")); diff != "" {
		t.Errorf("create (-want +got):\n%s", diff)
	}
	if created.CreatedAt.IsZero() {
		t.Error("CreatedAt is zero")
	}

	got, err := c.GetWebhook(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Errorf("get (-want +got; no secret):\n%s", diff)
	}

	rotated, err := c.RotateWebhookSecret(ctx, created.ID, client.RotateSecretOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.Secret == created.Secret || rotated.ID != created.ID {
		t.Errorf("rotated = %+v, want the subscription with a new whsec_ secret (was %q)", rotated, created.Secret)
	}

	// A new subscription has no deliveries; a new plant is delivered and
	// its attempt listed.
	page, err := c.ListWebhookDeliveries(ctx, created.ID, client.ListDeliveriesOptions{})
	if err != nil || len(page.Deliveries) != 0 || page.Next != nil {
		t.Fatalf("deliveries of a new subscription: %+v, %v; want none", page, err)
	}
	if _, err := c.CreatePlant(ctx, client.NewPlant{ID: 42, Name: "Ivy"}); err != nil {
		t.Fatal(err)
	}
	ds := waitDeliveries(t, c, created.ID, func(ds []client.Delivery) bool { return len(ds) > 0 })
	d := ds[0]
	if d.State != "succeeded" || d.StatusCode != 200 || d.Attempt != 1 || d.PlantID == nil || *d.PlantID != 42 ||
		d.MessageID == "" || d.AttemptedAt.IsZero() || d.NextAttemptAt != nil || d.Error != "" {
		t.Errorf("delivery = %+v, want attempt 1 of plant 42 succeeded with 200", d)
	}
	if okCount.Load() != 1 {
		t.Errorf("the receiver got %d requests, want 1", okCount.Load())
	}

	// A failing receiver: attempts with its status, pending then failed.
	badURL, _ := receiver(t, http.StatusServiceUnavailable)
	failing, err := c.CreateWebhook(ctx, client.NewWebhook{URL: badURL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreatePlant(ctx, client.NewPlant{ID: 43, Name: "Moss"}); err != nil {
		t.Fatal(err)
	}
	ds = waitDeliveries(t, c, failing.ID, func(ds []client.Delivery) bool { return len(ds) == 3 })
	if ds[0].State != "failed" || ds[0].Attempt != 3 || ds[2].Attempt != 1 || ds[2].State != "pending" {
		t.Errorf("deliveries = %+v, want attempts 3 (failed), 2, 1 (pending), the latest first", ds)
	}
	for _, d := range ds {
		if d.StatusCode != 503 || d.PlantID == nil || *d.PlantID != 43 {
			t.Errorf("attempt %+v: want status 503 for plant 43", d)
		}
	}

	if err := c.DeleteWebhook(ctx, failing.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetWebhook(ctx, failing.ID); apiError(t, err).Code != 40403 {
		t.Errorf("get after delete: %v, want 40403", err)
	}
}

func TestWebhookErrors(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	ctx := context.Background()
	c := ts.client(t, ts.webhookToken(t, "alice"))
	plantsOnly := ts.client(t, ts.token(t, "alice"))
	bob := ts.client(t, ts.webhookToken(t, "bob"))
	w, err := c.CreateWebhook(ctx, client.NewWebhook{URL: "http://127.0.0.1:1/hook"})
	if err != nil {
		t.Fatal(err)
	}
	unknown := "whk_0000000000000000"

	tests := []struct {
		name string
		call func() error
		want client.Error
	}{
		{"get unknown", func() error { _, err := c.GetWebhook(ctx, unknown); return err }, client.Error{Status: 404, Code: 40403}},
		{"get another owner's", func() error { _, err := bob.GetWebhook(ctx, w.ID); return err }, client.Error{Status: 404, Code: 40403}},
		{"delete unknown", func() error { return c.DeleteWebhook(ctx, unknown) }, client.Error{Status: 404, Code: 40403}},
		{"rotate unknown", func() error { _, err := c.RotateWebhookSecret(ctx, unknown, client.RotateSecretOptions{}); return err }, client.Error{Status: 404, Code: 40403}},
		{"deliveries unknown", func() error {
			_, err := c.ListWebhookDeliveries(ctx, unknown, client.ListDeliveriesOptions{})
			return err
		}, client.Error{Status: 404, Code: 40403}},
		{"bad id", func() error { _, err := c.GetWebhook(ctx, "nope"); return err }, client.Error{Status: 400, Code: 40004}},
		{"bad url", func() error { _, err := c.CreateWebhook(ctx, client.NewWebhook{URL: "ftp://127.0.0.1/x"}); return err }, client.Error{Status: 400, Code: 40002}},
		{"missing scope", func() error { _, err := plantsOnly.ListWebhooks(ctx, client.ListWebhooksOptions{}); return err }, client.Error{Status: 403, Code: 40301}},
		{"bad limit", func() error { _, err := c.ListWebhooks(ctx, client.ListWebhooksOptions{Limit: 5000}); return err }, client.Error{Status: 400, Code: 40003}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := apiError(t, tt.call())
			if e.Message == "" {
				t.Error("empty Message")
			}
			if diff := cmp.Diff(tt.want, client.Error{Status: e.Status, Code: e.Code}); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("too many", func(t *testing.T) {
		for i := 1; i < maxSubscriptions; i++ {
			if _, err := c.CreateWebhook(ctx, client.NewWebhook{URL: "http://127.0.0.1:1/hook"}); err != nil {
				t.Fatal(err)
			}
		}
		_, err := c.CreateWebhook(ctx, client.NewWebhook{URL: "http://127.0.0.1:1/hook"})
		if e := apiError(t, err); e.Status != 409 || e.Code != 40902 {
			t.Errorf("subscription %d: %+v, want 409 40902", maxSubscriptions+1, e)
		}
	})
}

func TestListWebhooksAndWebhooks(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	ctx := context.Background()
	counter := &countingTransport{}
	id, secret := ts.tokenWithID(t, "alice", plantstore.ScopeWebhooksManage)
	c := ts.client(t, secret, client.WithHTTPClient(&http.Client{Transport: counter}))
	var all []string
	for range maxSubscriptions - 1 {
		w, err := c.CreateWebhook(ctx, client.NewWebhook{URL: "http://127.0.0.1:1/hook"})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, w.ID)
	}
	slices.Sort(all) // the list is by id
	if _, err := ts.client(t, ts.webhookToken(t, "bob")).CreateWebhook(ctx, client.NewWebhook{URL: "http://127.0.0.1:1/bob"}); err != nil {
		t.Fatal(err)
	}

	page, err := c.ListWebhooks(ctx, client.ListWebhooksOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(page.Webhooks); !cmp.Equal(all[:2], got) {
		t.Errorf("page 1 = %v, want %v", got, all[:2])
	}
	if diff := cmp.Diff(&client.ListWebhooksOptions{Limit: 2, After: all[1]}, page.Next); diff != "" {
		t.Errorf("page 1 next (-want +got):\n%s", diff)
	}
	for _, w := range page.Webhooks {
		if w.Secret != "" {
			t.Errorf("listed %s with its secret", w.ID)
		}
	}

	for _, tt := range []struct {
		name  string
		opts  client.ListWebhooksOptions
		want  []string
		pages int64
	}{
		{"one page", client.ListWebhooksOptions{}, all, 1},
		{"pages of 2", client.ListWebhooksOptions{Limit: 2}, all, 3},
		{"pages of 1", client.ListWebhooksOptions{Limit: 1}, all, 5},
		{"after", client.ListWebhooksOptions{Limit: 2, After: all[2]}, all[3:], 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := counter.n.Load()
			var got []string
			for w, err := range c.Webhooks(ctx, tt.opts) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, w.ID)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
			if n := counter.n.Load() - before; n != tt.pages {
				t.Errorf("%d requests, want %d", n, tt.pages)
			}
		})
	}
	t.Run("break stops requests", func(t *testing.T) {
		before := counter.n.Load()
		for w, err := range c.Webhooks(ctx, client.ListWebhooksOptions{Limit: 2}) {
			if err != nil {
				t.Fatal(err)
			}
			if w.ID == all[2] {
				break
			}
		}
		if got := counter.n.Load() - before; got != 2 {
			t.Errorf("%d requests, want 2", got)
		}
	})
	t.Run("error midway", func(t *testing.T) {
		var got []string
		var errs []error
		for w, err := range c.Webhooks(ctx, client.ListWebhooksOptions{Limit: 2}) {
			if err != nil {
				errs = append(errs, err)
				continue
			}
			got = append(got, w.ID)
			if len(got) == 2 {
				ts.revoke(t, id)
			}
		}
		if diff := cmp.Diff(all[:2], got); diff != "" {
			t.Errorf("ids before the error (-want +got):\n%s", diff)
		}
		if len(errs) != 1 || apiError(t, errs[0]).Code != 40102 {
			t.Errorf("errors = %v, want one 40102", errs)
		}
	})
}

func ids(ws []client.Webhook) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.ID)
	}
	return out
}
