package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/client"
)

func TestUpdatePlant(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, ts.token(t, "alice"))
	ctx := context.Background()
	created, err := c.CreatePlant(ctx, client.NewPlant{ID: 7, Name: "Fern", Tag: ptr("green")})
	if err != nil {
		t.Fatal(err)
	}
	before := created

	tests := []struct {
		name  string
		patch client.PlantPatch
		want  client.Plant
	}{
		{"name", client.PlantPatch{Name: ptr("Boston fern")}, client.Plant{ID: 7, Name: "Boston fern", Tag: ptr("green")}},
		{"tag", client.PlantPatch{Tag: ptr("shade")}, client.Plant{ID: 7, Name: "Boston fern", Tag: ptr("shade")}},
		{"nothing", client.PlantPatch{}, client.Plant{ID: 7, Name: "Boston fern", Tag: ptr("shade")}},
		{"remove tag", client.PlantPatch{RemoveTag: true}, client.Plant{ID: 7, Name: "Boston fern"}},
		{"both", client.PlantPatch{Name: ptr("Fern"), Tag: ptr("green")}, client.Plant{ID: 7, Name: "Fern", Tag: ptr("green")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.UpdatePlant(ctx, 7, tt.patch, client.UpdatePlantOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&tt.want, got, ignoreETag, ignoreTimes); diff != "" {
				t.Errorf("update (-want +got):\n%s", diff)
			}
			if !got.CreatedAt.Equal(created.CreatedAt) {
				t.Errorf("created_at %v after the update, want %v as created", got.CreatedAt, created.CreatedAt)
			}
			// updated_at moves when the name or tag changes, and only then.
			if changed := tt.name != "nothing"; changed != got.UpdatedAt.After(before.UpdatedAt) || !changed && !got.UpdatedAt.Equal(before.UpdatedAt) {
				t.Errorf("updated_at %v, before %v: want it moved only by a change", got.UpdatedAt, before.UpdatedAt)
			}
			before = got
			stored, err := c.GetPlant(ctx, 7, client.GetPlantOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, stored, ignoreETag); diff != "" {
				t.Errorf("stored (-want +got):\n%s", diff)
			}
			if got.ETag == "" || got.ETag != stored.ETag {
				t.Errorf("ETag of the update %q, of a get %q: want the same, non-empty", got.ETag, stored.ETag)
			}
		})
	}

	t.Run("errors", func(t *testing.T) {
		for _, tt := range []struct {
			name  string
			id    int64
			patch client.PlantPatch
			want  client.Error
		}{
			{"unknown", 404, client.PlantPatch{Name: ptr("x")}, client.Error{Status: 404, Code: 40401}},
			{"empty name", 7, client.PlantPatch{Name: ptr("")}, client.Error{Status: 400, Code: 40002}},
		} {
			_, err := c.UpdatePlant(ctx, tt.id, tt.patch, client.UpdatePlantOptions{})
			e := apiError(t, err)
			if diff := cmp.Diff(tt.want, client.Error{Status: e.Status, Code: e.Code}); diff != "" {
				t.Errorf("%s: error (-want +got):\n%s", tt.name, diff)
			}
		}
		_, err := c.UpdatePlant(ctx, 7, client.PlantPatch{Tag: ptr("a"), RemoveTag: true}, client.UpdatePlantOptions{})
		var e *client.Error
		if err == nil || errors.As(err, &e) {
			t.Errorf("Tag and RemoveTag: err = %v, want a client-side error", err)
		}
	})
}

// TestConditionalRequests: If-Match on update and delete (412 as a typed
// error, nothing changed), If-None-Match on get (ErrNotModified).
func TestConditionalRequests(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, ts.token(t, "alice"))
	ctx := context.Background()
	if _, err := c.CreatePlant(ctx, client.NewPlant{ID: 1, Name: "Aloe"}); err != nil {
		t.Fatal(err)
	}
	read, err := c.GetPlant(ctx, 1, client.GetPlantOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := read.ETag

	// Unchanged: 304.
	if p, err := c.GetPlant(ctx, 1, client.GetPlantOptions{IfNoneMatch: stale}); !errors.Is(err, client.ErrNotModified) || p != nil {
		t.Fatalf("get If-None-Match current: %+v, %v; want ErrNotModified", p, err)
	}
	// A matching If-Match changes it and answers the new ETag.
	changed, err := c.UpdatePlant(ctx, 1, client.PlantPatch{Name: ptr("Aloe vera")}, client.UpdatePlantOptions{IfMatch: stale})
	if err != nil {
		t.Fatal(err)
	}
	if changed.ETag == "" || changed.ETag == stale {
		t.Fatalf("ETag after a change = %q, was %q: want a new one", changed.ETag, stale)
	}
	// Changed: If-None-Match with the old ETag answers the plant.
	if p, err := c.GetPlant(ctx, 1, client.GetPlantOptions{IfNoneMatch: stale}); err != nil || p.Name != "Aloe vera" {
		t.Fatalf("get If-None-Match stale: %+v, %v; want the plant", p, err)
	}

	// A stale If-Match: a 412 *Error, nothing changed or deleted.
	_, err = c.UpdatePlant(ctx, 1, client.PlantPatch{Name: ptr("Lost update")}, client.UpdatePlantOptions{IfMatch: stale})
	if e := apiError(t, err); e.Status != 412 || e.Code != 41201 || e.Message == "" {
		t.Errorf("update with a stale If-Match: %+v, want 412 41201", e)
	}
	err = c.DeletePlant(ctx, 1, client.DeletePlantOptions{IfMatch: stale})
	if e := apiError(t, err); e.Status != 412 || e.Code != 41201 {
		t.Errorf("delete with a stale If-Match: %+v, want 412 41201", e)
	}
	if p, err := c.GetPlant(ctx, 1, client.GetPlantOptions{}); err != nil || p.Name != "Aloe vera" || p.ETag != changed.ETag {
		t.Fatalf("after the refused changes: %+v, %v; want Aloe vera unchanged", p, err)
	}

	// The current ETag deletes it.
	if err := c.DeletePlant(ctx, 1, client.DeletePlantOptions{IfMatch: changed.ETag}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetPlant(ctx, 1, client.GetPlantOptions{}); apiError(t, err).Code != 40401 {
		t.Errorf("get after delete: %v, want 40401", err)
	}
}

// TestPlantsErrorMidway: the iterator yields the first pages, then the
// error of a later page (the token was revoked meanwhile), then stops.
func TestPlantsErrorMidway(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	id, secret := ts.tokenWithID(t, "alice")
	c := ts.client(t, secret)
	ctx := context.Background()
	for i := int64(1); i <= 5; i++ {
		if _, err := c.CreatePlant(ctx, client.NewPlant{ID: i, Name: "p"}); err != nil {
			t.Fatal(err)
		}
	}
	var ids []int64
	var errs []error
	for p, err := range c.Plants(ctx, client.ListPlantsOptions{Limit: 2}) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ids = append(ids, p.ID)
		if len(ids) == 2 {
			ts.revoke(t, id)
		}
	}
	if diff := cmp.Diff([]int64{1, 2}, ids); diff != "" {
		t.Errorf("ids before the error (-want +got):\n%s", diff)
	}
	if len(errs) != 1 || apiError(t, errs[0]).Code != 40102 {
		t.Errorf("errors = %v, want one 40102", errs)
	}
}

// TestSharedErrorAnswers: the answers the contract shares between operations
// (a 503 with Retry-After, a 429) are *Errors too, for every operation.
// A stub server on 127.0.0.1 answers them (a real server cannot be made to
// fail on demand).
func TestSharedErrorAnswers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		status int
		body   string
		want   client.Error
	}{
		{503, `{"error":50301,"message":"storage is not available"}`, client.Error{Status: 503, Code: 50301, Message: "storage is not available", RetryAfter: 2 * time.Second}},
		{429, `{"error":42901,"message":"too many requests"}`, client.Error{Status: 429, Code: 42901, Message: "too many requests", RetryAfter: 2 * time.Second}},
		{500, `{"error":50001,"message":"Internal error."}`, client.Error{Status: 500, Code: 50001, Message: "Internal error."}},
	} {
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(tt.status)
			io.WriteString(w, tt.body)
		})}
		ln := listen(t)
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		c, err := client.New("http://"+ln.Addr().String(), "t")
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		calls := map[string]func() error{
			"get plant": func() error { _, err := c.GetPlant(ctx, 1, client.GetPlantOptions{}); return err },
			"update plant": func() error {
				_, err := c.UpdatePlant(ctx, 1, client.PlantPatch{}, client.UpdatePlantOptions{})
				return err
			},
			"delete plant": func() error { return c.DeletePlant(ctx, 1, client.DeletePlantOptions{}) },
			"list plants":  func() error { _, err := c.ListPlants(ctx, client.ListPlantsOptions{}); return err },
			"get webhook":  func() error { _, err := c.GetWebhook(ctx, "whk_0000000000000000"); return err },
			"deliveries": func() error {
				_, err := c.ListWebhookDeliveries(ctx, "whk_0000000000000000", client.ListDeliveriesOptions{})
				return err
			},
		}
		for name, call := range calls {
			e := apiError(t, call())
			want := tt.want
			if tt.status == 500 {
				want.RetryAfter = 0 // the contract's 500 has no Retry-After
			}
			if diff := cmp.Diff(want, *e); diff != "" {
				t.Errorf("%s, HTTP %d (-want +got):\n%s", name, tt.status, diff)
			}
		}
	}
}
