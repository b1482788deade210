package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/client"
	plantstorehttp "github.com/plantstore/plantstore/internal/http"
	"github.com/plantstore/plantstore/internal/sender"
	"github.com/plantstore/plantstore/internal/service"
	"github.com/plantstore/plantstore/internal/sqlite"
)

// testServer is a real server on 127.0.0.1 over a real SQLite file, with
// a webhook dispatcher that may deliver to loopback receivers.
type testServer struct {
	URL    string
	Tokens plantstore.TokenService
}

// maxSubscriptions is each owner's subscription limit in the test server.
const maxSubscriptions = 6

func startServer(tb testing.TB) *testServer {
	tb.Helper()
	db := sqlite.NewDB(filepath.Join(tb.TempDir(), "plantstore.db"))
	if err := db.Open(context.Background()); err != nil {
		tb.Fatal(err)
	}
	if _, err := db.Migrate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := service.New(db, service.Config{
		MaxSubscriptions: maxSubscriptions,
		Sender:           sender.New(sender.Options{AllowPrivate: true}),
		Delivery: service.DeliveryConfig{
			Logger:   logger,
			Schedule: []time.Duration{20 * time.Millisecond, 20 * time.Millisecond},
		},
	})
	dispatcher, err := svc.NewDispatcher(svc.Outbox)
	if err != nil {
		tb.Fatal(err)
	}
	dctx, stopDispatcher := context.WithCancel(context.Background())
	dispatched := make(chan struct{})
	go func() { dispatcher.Run(dctx); close(dispatched) }()
	s := plantstorehttp.NewServer()
	s.Addr = "127.0.0.1:0"
	s.PlantService, s.TokenService, s.WebhookService, s.Storage = svc.Plants, svc.Tokens, svc.Webhooks, db
	s.EventService, s.EventNotifier = svc.Events, svc.Notifier
	s.EventStreamHeartbeat = time.Second
	s.Logger = logger
	if err := s.Open(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			tb.Errorf("close server: %v", err)
		}
		stopDispatcher()
		<-dispatched
		if err := db.Close(); err != nil {
			tb.Errorf("close db: %v", err)
		}
	})
	return &testServer{URL: s.URL(), Tokens: svc.Tokens}
}

// token issues a token for owner with scopes (default: read and write).
func (ts *testServer) token(tb testing.TB, owner string, scopes ...string) string {
	tb.Helper()
	_, secret := ts.tokenWithID(tb, owner, scopes...)
	return secret
}

// tokenWithID issues a token as token does and returns its id too.
func (ts *testServer) tokenWithID(tb testing.TB, owner string, scopes ...string) (id, secret string) {
	tb.Helper()
	if len(scopes) == 0 {
		scopes = []string{plantstore.ScopePlantsRead, plantstore.ScopePlantsWrite}
	}
	tok, secret, err := ts.Tokens.CreateToken(context.Background(), plantstore.TokenRequest{Owner: owner, Scopes: scopes})
	if err != nil {
		tb.Fatal(err)
	}
	return tok.ID, secret
}

// revoke revokes the token id.
func (ts *testServer) revoke(tb testing.TB, id string) {
	tb.Helper()
	if err := ts.Tokens.RevokeToken(context.Background(), id); err != nil {
		tb.Fatal(err)
	}
}

func (ts *testServer) client(tb testing.TB, token string, opts ...client.Option) *client.Client {
	tb.Helper()
	c, err := client.New(ts.URL, token, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func ptr[T any](v T) *T { return &v }

// ignoreETag compares plants without their ETag.
var ignoreETag = cmpopts.IgnoreFields(client.Plant{}, "ETag")

// ignoreTimes compares plants without their CreatedAt and UpdatedAt.
var ignoreTimes = cmpopts.IgnoreFields(client.Plant{}, "CreatedAt", "UpdatedAt")

// checkTimes fails the test unless p has the times of a plant the server
// created and did not change since: in UTC, to the microsecond, UpdatedAt
// equal to CreatedAt.
func checkTimes(t *testing.T, what string, p *client.Plant) {
	t.Helper()
	if p.CreatedAt.IsZero() || p.CreatedAt.Location() != time.UTC || !p.CreatedAt.Equal(p.CreatedAt.Truncate(time.Microsecond)) || !p.UpdatedAt.Equal(p.CreatedAt) {
		t.Errorf("%s: created_at %v, updated_at %v; want a UTC time to the microsecond, both equal", what, p.CreatedAt, p.UpdatedAt)
	}
}

// apiError returns err as an *client.Error, failing the test if it is not one.
func apiError(t *testing.T, err error) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want a *client.Error", err, err)
	}
	return e
}

func TestCreateGetDelete(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, ts.token(t, "alice"))
	ctx := context.Background()

	got, err := c.CreatePlant(ctx, client.NewPlant{ID: 7, Name: "Monstera", Tag: ptr("indoor")})
	if err != nil {
		t.Fatal(err)
	}
	checkTimes(t, "create", got)
	want := &client.Plant{ID: 7, Name: "Monstera", Tag: ptr("indoor"), CreatedAt: got.CreatedAt, UpdatedAt: got.UpdatedAt}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("create (-want +got):\n%s", diff)
	}
	// Identical replay: 200 with the stored plant, its times too.
	if got, err = c.CreatePlant(ctx, client.NewPlant{ID: 7, Name: "Monstera", Tag: ptr("indoor")}); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replay (-want +got):\n%s", diff)
	}
	if got, err = c.GetPlant(ctx, 7, client.GetPlantOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.ETag, `"`) || !strings.HasSuffix(got.ETag, `"`) || len(got.ETag) < 3 {
		t.Errorf("get: ETag = %q, want a strong entity tag", got.ETag)
	}
	if diff := cmp.Diff(want, got, ignoreETag); diff != "" {
		t.Errorf("get (-want +got):\n%s", diff)
	}
	noTag, err := c.CreatePlant(ctx, client.NewPlant{ID: 8, Name: "Fern"})
	if err != nil {
		t.Fatal(err)
	}
	checkTimes(t, "create without tag", noTag)
	if diff := cmp.Diff(&client.Plant{ID: 8, Name: "Fern"}, noTag, ignoreTimes); diff != "" {
		t.Errorf("create without tag (-want +got):\n%s", diff)
	}
	if err := c.DeletePlant(ctx, 7, client.DeletePlantOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetPlant(ctx, 7, client.GetPlantOptions{}); err == nil {
		t.Fatal("get after delete: no error")
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	ctx := context.Background()
	c := ts.client(t, ts.token(t, "alice"))
	if _, err := c.CreatePlant(ctx, client.NewPlant{ID: 1, Name: "Rose"}); err != nil {
		t.Fatal(err)
	}
	readOnly := ts.client(t, ts.token(t, "alice", plantstore.ScopePlantsRead))
	badToken := ts.client(t, "not-a-token")

	tests := []struct {
		name string
		call func() error
		want client.Error // Message is not compared
	}{
		{"get unknown", func() error { _, err := c.GetPlant(ctx, 404, client.GetPlantOptions{}); return err }, client.Error{Status: 404, Code: 40401}},
		{"delete unknown", func() error { return c.DeletePlant(ctx, 404, client.DeletePlantOptions{}) }, client.Error{Status: 404, Code: 40401}},
		{"conflict", func() error { _, err := c.CreatePlant(ctx, client.NewPlant{ID: 1, Name: "Tulip"}); return err }, client.Error{Status: 409, Code: 40901}},
		{"empty name", func() error { _, err := c.CreatePlant(ctx, client.NewPlant{ID: 2, Name: ""}); return err }, client.Error{Status: 400, Code: 40002}},
		{"bad limit", func() error { _, err := c.ListPlants(ctx, client.ListPlantsOptions{Limit: 5000}); return err }, client.Error{Status: 400, Code: 40003}},
		{"unknown token", func() error { _, err := badToken.GetPlant(ctx, 1, client.GetPlantOptions{}); return err }, client.Error{Status: 401, Code: 40102}},
		{"unknown token list", func() error { _, err := badToken.ListPlants(ctx, client.ListPlantsOptions{}); return err }, client.Error{Status: 401, Code: 40102}},
		{"missing scope", func() error { _, err := readOnly.CreatePlant(ctx, client.NewPlant{ID: 3, Name: "Ivy"}); return err }, client.Error{Status: 403, Code: 40301}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := apiError(t, tt.call())
			if e.Message == "" {
				t.Error("empty Message")
			}
			got := client.Error{Status: e.Status, Code: e.Code}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ url, token string }{
		{"http://127.0.0.1:1", ""},
		{"127.0.0.1:8080", "t"},
		{"ftp://host", "t"},
		{"http://", "t"},
	} {
		if _, err := client.New(tt.url, tt.token); err == nil {
			t.Errorf("New(%q, %q): no error", tt.url, tt.token)
		}
	}
}

// countingTransport counts the requests sent through it.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func TestListPlantsAndPlants(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	ctx := context.Background()
	counter := &countingTransport{}
	c := ts.client(t, ts.token(t, "alice"), client.WithHTTPClient(&http.Client{Transport: counter}))
	other := ts.client(t, ts.token(t, "bob"))
	if _, err := other.CreatePlant(ctx, client.NewPlant{ID: 3, Name: "Bob's"}); err != nil {
		t.Fatal(err)
	}
	var all, red []client.Plant
	for i := int64(1); i <= 23; i++ {
		var tag *string
		if i%3 == 0 {
			tag = ptr("red")
		}
		p, err := c.CreatePlant(ctx, client.NewPlant{ID: i * 10, Name: "plant " + strconv.FormatInt(i, 10), Tag: tag})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, *p)
		if tag != nil {
			red = append(red, *p)
		}
	}

	// One page, then the next one from its Link header.
	page, err := c.ListPlants(ctx, client.ListPlantsOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(all[:10], page.Plants); diff != "" {
		t.Errorf("page 1 (-want +got):\n%s", diff)
	}
	// The cursor is opaque: only its presence is checked.
	if page.Next == nil || page.Next.After == "" {
		t.Fatalf("page 1 next = %+v, want a cursor", page.Next)
	}
	if diff := cmp.Diff(&client.ListPlantsOptions{Limit: 10}, page.Next, cmpopts.IgnoreFields(client.ListPlantsOptions{}, "After")); diff != "" {
		t.Errorf("page 1 next (-want +got):\n%s", diff)
	}
	if page.Total != nil {
		t.Errorf("page 1 total = %d, not asked for", *page.Total)
	}
	// A plant id is a cursor too, by id.
	last, err := c.ListPlants(ctx, client.ListPlantsOptions{Limit: 10, After: "200"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(all[20:], last.Plants); diff != "" {
		t.Errorf("last page (-want +got):\n%s", diff)
	}
	if last.Next != nil {
		t.Errorf("last page next = %+v, want nil", *last.Next)
	}

	tests := []struct {
		name  string
		opts  client.ListPlantsOptions
		want  []client.Plant
		pages int64
	}{
		{"default page size", client.ListPlantsOptions{}, all, 1},
		{"pages of 5", client.ListPlantsOptions{Limit: 5}, all, 5},
		{"exact pages", client.ListPlantsOptions{Limit: 23}, all, 1},
		{"pages of 1", client.ListPlantsOptions{Limit: 1}, all, 23},
		{"after", client.ListPlantsOptions{Limit: 4, After: "150"}, all[15:], 2},
		{"tag", client.ListPlantsOptions{Limit: 2, Tags: []string{"red"}}, red, 4},
		{"no match", client.ListPlantsOptions{Tags: []string{"blue"}}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := counter.n.Load()
			var got []client.Plant
			for p, err := range c.Plants(ctx, tt.opts) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, p)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("plants (-want +got):\n%s", diff)
			}
			if n := counter.n.Load() - before; n != tt.pages {
				t.Errorf("%d requests, want %d", n, tt.pages)
			}
		})
	}

	t.Run("break stops requests", func(t *testing.T) {
		before := counter.n.Load()
		n := 0
		for _, err := range c.Plants(ctx, client.ListPlantsOptions{Limit: 2}) {
			if err != nil {
				t.Fatal(err)
			}
			if n++; n == 3 {
				break
			}
		}
		if got := counter.n.Load() - before; got != 2 {
			t.Errorf("%d requests, want 2", got)
		}
	})
	t.Run("error is yielded", func(t *testing.T) {
		bad := ts.client(t, "not-a-token")
		var errs []error
		for _, err := range bad.Plants(ctx, client.ListPlantsOptions{}) {
			errs = append(errs, err)
		}
		if len(errs) != 1 || apiError(t, errs[0]).Code != 40102 {
			t.Errorf("errors = %v, want one 40102", errs)
		}
	})
}

func TestLinkHeader(t *testing.T) {
	t.Parallel()
	// A stub server answers crafted Link headers; the client must follow
	// rel="next" whatever the order of links and parameters.
	links := map[string]string{
		"":  `</plants?after=1&limit=1>; rel="prev", </plants?after=1&limit=1&tag=a%20b>; title="x;y,z"; rel="last next"`,
		"1": `<http://elsewhere.invalid/x>; rel=prev, </plants?limit=1&after=2&tag=a+b>; REL=Next`,
		"2": `</plants?after=0>; rel="first"`,
	}
	mux := http.NewServeMux()
	var seen []string
	mux.HandleFunc("GET /plants", func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.RawQuery)
		after := r.URL.Query().Get("after")
		w.Header().Set("Link", links[after])
		w.Header().Set("Content-Type", "application/json")
		id := 1
		if after != "" {
			id, _ = strconv.Atoi(after)
			id++
		}
		io.WriteString(w, `[{"id":`+strconv.Itoa(id)+`,"name":"p"}]`)
	})
	srv := &http.Server{Handler: mux}
	ln := listen(t)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	c, err := client.New("http://"+ln.Addr().String(), "t")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for p, err := range c.Plants(context.Background(), client.ListPlantsOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	if diff := cmp.Diff([]int64{1, 2, 3}, ids); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"", "after=1&limit=1&tag=a+b", "after=2&limit=1&tag=a+b"}, seen); diff != "" {
		t.Errorf("queries (-want +got):\n%s", diff)
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
