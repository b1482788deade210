package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/client"
)

// TestHead: every HEAD operation answers the GET's headers over real HTTP,
// and a missing resource is an *Error with the status (a HEAD has no body).
func TestHead(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, ts.webhookToken(t, "alice"))
	ctx := context.Background()
	for id := int64(1); id <= 2; id++ {
		if _, err := c.CreatePlant(ctx, client.NewPlant{ID: id, Name: "Fern"}); err != nil {
			t.Fatal(err)
		}
	}

	got, err := c.GetPlant(ctx, 1, client.GetPlantOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.HeadPlant(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if h.ETag == "" || h.ETag != got.ETag {
		t.Errorf("HeadPlant ETag = %q, GetPlant's = %q", h.ETag, got.ETag)
	}
	notFound := func(what string, err error) {
		t.Helper()
		var e *client.Error
		if !errors.As(err, &e) || e.Status != http.StatusNotFound {
			t.Errorf("%s: %v, want an *Error with status 404", what, err)
		}
	}
	_, err = c.HeadPlant(ctx, 99)
	notFound("HeadPlant(99)", err)

	if h, err = c.HeadPlants(ctx, client.ListPlantsOptions{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.Link, `rel="next"`) || !strings.Contains(h.Link, "after=") || h.Total != nil {
		t.Errorf("HeadPlants limit 1 of 2: Link = %q, total %v; want the next page's cursor, no total", h.Link, h.Total)
	}
	if h, err = c.HeadPlants(ctx, client.ListPlantsOptions{Limit: 1, Count: "exact"}); err != nil || h.Total == nil || *h.Total != 2 || h.TotalEstimated {
		t.Errorf("HeadPlants count exact: %+v, %v; want an exact total 2", h, err)
	}
	if h, err = c.HeadPlants(ctx, client.ListPlantsOptions{}); err != nil || h.Link != "" {
		t.Errorf("HeadPlants of one page: %+v, %v; want no Link", h, err)
	}

	w, err := c.CreateWebhook(ctx, client.NewWebhook{URL: "http://127.0.0.1:9/hook"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateWebhook(ctx, client.NewWebhook{URL: "http://127.0.0.1:9/other"}); err != nil {
		t.Fatal(err)
	}
	if h, err = c.HeadWebhooks(ctx, client.ListWebhooksOptions{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.Link, `rel="next"`) {
		t.Errorf("HeadWebhooks limit 1 of 2: Link = %q, want a next page", h.Link)
	}
	if _, err := c.HeadWebhook(ctx, w.ID); err != nil {
		t.Errorf("HeadWebhook(%s): %v", w.ID, err)
	}
	if _, err := c.HeadWebhookDeliveries(ctx, w.ID); err != nil {
		t.Errorf("HeadWebhookDeliveries(%s): %v", w.ID, err)
	}
	_, err = c.HeadWebhook(ctx, "whk_0000000000000001")
	notFound("HeadWebhook(unknown)", err)
	_, err = c.HeadWebhookDeliveries(ctx, "whk_0000000000000001")
	notFound("HeadWebhookDeliveries(unknown)", err)

	// A token without the webhook scope: 403 with the status.
	plain := ts.client(t, ts.token(t, "alice"))
	var e *client.Error
	if _, err := plain.HeadWebhooks(ctx, client.ListWebhooksOptions{}); !errors.As(err, &e) || e.Status != http.StatusForbidden {
		t.Errorf("HeadWebhooks without the scope: %v, want status 403", err)
	}
}
