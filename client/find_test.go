package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/client"
)

// TestFindPlants: search, tag and time filters and sorts over real HTTP,
// page after page through the Link header with pages of 2 (so every next
// link must carry the query), and the counts.
func TestFindPlants(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, ts.token(t, "alice"))
	ctx := context.Background()
	// Created in this order, which is not the ids'.
	plants := []client.NewPlant{
		{ID: 4, Name: "Monstera adansonii", Tag: ptr("shade")},
		{ID: 1, Name: "Monstera deliciosa", Tag: ptr("green")},
		{ID: 6, Name: "Zebra plant", Tag: ptr("shade")},
		{ID: 2, Name: "Café au lait"},
		{ID: 7, Name: "cafe racer", Tag: ptr("flower")},
		{ID: 3, Name: "Boston fern", Tag: ptr("green")},
		{ID: 5, Name: "Aloe vera"},
	}
	created := map[int64]*client.Plant{}
	var last time.Time
	for _, np := range plants {
		p, err := c.CreatePlant(ctx, np)
		if err != nil {
			t.Fatal(err)
		}
		if !p.CreatedAt.After(last) {
			t.Fatalf("plant %d created at %v, not after the one before (%v)", p.ID, p.CreatedAt, last)
		}
		last = p.CreatedAt
		created[p.ID] = p
	}
	// Another owner's plant matches nothing of alice's.
	if _, err := ts.client(t, ts.token(t, "bob")).CreatePlant(ctx, client.NewPlant{ID: 8, Name: "Monstera"}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		opts client.ListPlantsOptions
		want []int64
	}{
		{"word prefix", client.ListPlantsOptions{Q: "mon"}, []int64{1, 4}},
		{"two words", client.ListPlantsOptions{Q: "mon del"}, []int64{1}},
		{"accents and case", client.ListPlantsOptions{Q: "CAFÉ"}, []int64{2, 7}},
		{"search in tags", client.ListPlantsOptions{Q: "green"}, []int64{1, 3}},
		{"search descending", client.ListPlantsOptions{Q: "cafe", Sort: "-id"}, []int64{7, 2}},
		{"tags", client.ListPlantsOptions{Tags: []string{"green", "shade"}}, []int64{1, 3, 4, 6}},
		{"tag and search", client.ListPlantsOptions{Tags: []string{"shade"}, Q: "mon"}, []int64{4}},
		{"no match", client.ListPlantsOptions{Tags: []string{"nope"}}, nil},
		{"by id", client.ListPlantsOptions{Sort: "id"}, []int64{1, 2, 3, 4, 5, 6, 7}},
		{"by name", client.ListPlantsOptions{Sort: "name"}, []int64{5, 3, 2, 4, 1, 6, 7}},
		{"by name descending", client.ListPlantsOptions{Sort: "-name"}, []int64{7, 6, 1, 4, 2, 3, 5}},
		{"by creation", client.ListPlantsOptions{Sort: "created_at"}, []int64{4, 1, 6, 2, 7, 3, 5}},
		{"by creation descending", client.ListPlantsOptions{Sort: "-created_at", Q: "a"}, []int64{5, 2, 4}},
		// Both bounds exclusive, to the microsecond.
		{"created between", client.ListPlantsOptions{CreatedAfter: created[1].CreatedAt, CreatedBefore: created[7].CreatedAt}, []int64{2, 6}},
		{"created after", client.ListPlantsOptions{CreatedAfter: created[3].CreatedAt, Sort: "-name"}, []int64{5}},
		{"created before", client.ListPlantsOptions{CreatedBefore: created[1].CreatedAt.In(time.FixedZone("", -5*3600))}, []int64{4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Limit = 2
			var got []int64
			for p, err := range c.Plants(ctx, opts) {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(created[p.ID], &p); diff != "" {
					t.Errorf("plant %d (-created +listed):\n%s", p.ID, diff)
				}
				got = append(got, p.ID)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}

			// The total of the query, not of the page, asked for once.
			for _, count := range []string{"exact", "estimated"} {
				opts.Count = count
				page, err := c.ListPlants(ctx, opts)
				if err != nil {
					t.Fatal(err)
				}
				if page.Total == nil || *page.Total != int64(len(tt.want)) || page.TotalEstimated != (count == "estimated") {
					t.Errorf("count %s: total %v, estimated %v; want %d, %v", count, page.Total, page.TotalEstimated, len(tt.want), count == "estimated")
				}
				if page.Next == nil {
					continue
				}
				if page.Next.Count != "" {
					t.Errorf("count %s: next page asks for the count %q again", count, page.Next.Count)
				}
				next, err := c.ListPlants(ctx, *page.Next)
				if err != nil {
					t.Fatal(err)
				}
				if next.Total != nil {
					t.Errorf("count %s: next page total %d, not asked for", count, *next.Total)
				}
				h, err := c.HeadPlants(ctx, opts)
				if err != nil {
					t.Fatal(err)
				}
				if h.Total == nil || *h.Total != int64(len(tt.want)) || h.TotalEstimated != (count == "estimated") || h.Link == "" {
					t.Errorf("HeadPlants count %s: %+v; want total %d and a Link", count, h, len(tt.want))
				}
			}
		})
	}

	t.Run("no count unless asked", func(t *testing.T) {
		page, err := c.ListPlants(ctx, client.ListPlantsOptions{Q: "mon"})
		if err != nil || page.Total != nil || page.TotalEstimated {
			t.Errorf("ListPlants without Count: %+v, %v; want no total", page, err)
		}
		h, err := c.HeadPlants(ctx, client.ListPlantsOptions{Q: "mon"})
		if err != nil || h.Total != nil {
			t.Errorf("HeadPlants without Count: %+v, %v; want no total", h, err)
		}
	})

	t.Run("errors", func(t *testing.T) {
		page, err := c.ListPlants(ctx, client.ListPlantsOptions{Q: "mon", Limit: 1})
		if err != nil || page.Next == nil {
			t.Fatalf("first page: %+v, %v", page, err)
		}
		otherQuery := *page.Next
		otherQuery.Q = "cafe"
		otherSort := *page.Next
		otherSort.Sort = "name"
		for _, tt := range []struct {
			name string
			opts client.ListPlantsOptions
		}{
			{"cursor of another search", otherQuery},
			{"cursor of another sort", otherSort},
			{"unknown sort", client.ListPlantsOptions{Sort: "size"}},
			{"id cursor with another sort", client.ListPlantsOptions{Sort: "name", After: "3"}},
			{"long search", client.ListPlantsOptions{Q: strings.Repeat("a", 201)}},
		} {
			_, err := c.ListPlants(ctx, tt.opts)
			if e := apiError(t, err); e.Status != http.StatusBadRequest || e.Message == "" {
				t.Errorf("%s: %+v, want a 400 with a message", tt.name, e)
			}
		}
	})
}

// TestListPlantsQuery: what ListPlants sends and reads, against a stub
// server: every option in the query, times to the nanosecond in UTC, the
// count in the Prefer header of the first page only, the total from
// X-Total-Count and Preference-Applied, every parameter of the next link
// read back.
func TestListPlantsQuery(t *testing.T) {
	t.Parallel()
	type request struct{ query, prefer string }
	var seen []request
	after := time.Date(2025, 3, 1, 12, 0, 0, 123456000, time.UTC)
	nextQuery := url.Values{
		"q": {"mon del"}, "tag": {"a b", "c&d"}, "created_after": {after.Format(time.RFC3339Nano)},
		"sort": {"-name"}, "after": {"opaque/cursor+=="}, "limit": {"1"},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /plants", func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, request{r.URL.RawQuery, r.Header.Get("Prefer")})
		if r.URL.Query().Get("after") == "" {
			w.Header().Set("Link", "</plants?"+nextQuery.Encode()+`>; rel="next"`)
		} else if r.URL.Query().Get("after") == "stuck" {
			w.Header().Set("Link", `</plants?after=stuck>; rel="next"`)
		}
		if strings.Contains(r.Header.Get("Prefer"), "count=") {
			w.Header().Set("X-Total-Count", "1204")
			w.Header().Set("Preference-Applied", strings.TrimSpace(r.Header.Get("Prefer")))
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `[{"id":1,"name":"p"}]`)
	})
	srv := &http.Server{Handler: mux}
	ln := listen(t)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c, err := client.New("http://"+ln.Addr().String(), "t")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	zone := time.FixedZone("", 2*3600)
	opts := client.ListPlantsOptions{
		Limit: 1, Q: "mon del", Tags: []string{"a b", "c&d"},
		CreatedAfter:  after.In(zone),
		CreatedBefore: time.Date(2025, 3, 2, 0, 0, 0, 1, zone),
		Sort:          "-name", Count: "estimated",
	}
	page, err := c.ListPlants(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if page.Total == nil || *page.Total != 1204 || !page.TotalEstimated {
		t.Errorf("total %v, estimated %v; want 1204, true", page.Total, page.TotalEstimated)
	}
	want := &client.ListPlantsOptions{Limit: 1, Q: "mon del", Tags: []string{"a b", "c&d"}, CreatedAfter: after, Sort: "-name", After: "opaque/cursor+=="}
	if diff := cmp.Diff(want, page.Next); diff != "" {
		t.Errorf("next (-want +got):\n%s", diff)
	}
	next, err := c.ListPlants(ctx, *page.Next)
	if err != nil {
		t.Fatal(err)
	}
	if next.Total != nil || next.Next != nil {
		t.Errorf("second page: %+v, want no total and no next", next)
	}
	page, err = c.ListPlants(ctx, client.ListPlantsOptions{Count: "exact"})
	if err != nil || page.Total == nil || *page.Total != 1204 || page.TotalEstimated {
		t.Errorf("count exact: %+v, %v; want total 1204, not estimated", page, err)
	}
	wantSeen := []request{
		{"created_after=2025-03-01T12%3A00%3A00.123456Z&created_before=2025-03-01T22%3A00%3A00.000000001Z&limit=1&q=mon+del&sort=-name&tag=a+b&tag=c%26d", "count=estimated"},
		{"after=opaque%2Fcursor%2B%3D%3D&created_after=2025-03-01T12%3A00%3A00.123456Z&limit=1&q=mon+del&sort=-name&tag=a+b&tag=c%26d", ""},
		{"", "count=exact"},
	}
	if diff := cmp.Diff(wantSeen, seen, cmp.AllowUnexported(request{})); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}

	// A next link that does not move the cursor ends the iteration with an
	// error instead of looping.
	var errs []error
	n := 0
	for _, err := range c.Plants(ctx, client.ListPlantsOptions{After: "stuck"}) {
		if err != nil {
			errs = append(errs, err)
		}
		if n++; n > 3 {
			break
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "does not move") {
		t.Errorf("stuck cursor: errors %v, want one saying the link does not move", errs)
	}

	// A count the API has no word for is the caller's error: nothing sent.
	before := len(seen)
	var apiErr *client.Error
	if _, err := c.ListPlants(ctx, client.ListPlantsOptions{Count: "planned"}); err == nil || errors.As(err, &apiErr) {
		t.Errorf("Count planned: %v, want a client-side error", err)
	}
	if _, err := c.HeadPlants(ctx, client.ListPlantsOptions{Count: "planned"}); err == nil || errors.As(err, &apiErr) {
		t.Errorf("HeadPlants Count planned: %v, want a client-side error", err)
	}
	if len(seen) != before {
		t.Errorf("%d requests sent for a bad Count", len(seen)-before)
	}
}
