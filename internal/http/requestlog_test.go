package http_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/api"
	plantstorehttp "github.com/plantstore/plantstore/internal/http"
	"github.com/plantstore/plantstore/internal/http/oapi"
	"github.com/plantstore/plantstore/internal/slogbuf"
)

// TestRequestLogAfterClose: requests from many clients at once, answered
// with different statuses on different routes, each have their log line
// once Close has returned, with no other flush; the Logger is the
// buffered slogbuf.Handler serve uses, so its lines are formatted by the
// server (they must still be slog's: logLines parses them).
func TestRequestLogAfterClose(t *testing.T) {
	t.Parallel()
	const clients, perClient = 16, 25
	ts := MustOpenServer(t, func(s *TestServer) {
		s.Logger = slog.New(slogbuf.New(s.logs, false, nil))
	})
	tok := ts.Token(t, "alice")
	type sent struct {
		route  string
		status int
	}
	var (
		mu   sync.Mutex
		want = map[string]sent{} // by request id
		wg   sync.WaitGroup
	)
	for c := range clients {
		wg.Go(func() {
			for i := range perClient {
				id := fmt.Sprintf("c%d-%d", c, i)
				r := Request{Method: "POST", Path: "/plants", Token: tok, Body: fmt.Sprintf(`{"id":%d,"name":"Fern"}`, c*1000+i)}
				route := "/plants"
				switch i % 4 {
				case 1:
					r, route = Request{Method: "GET", Path: fmt.Sprintf("/plants/%d", c*1000+i-1), Token: tok}, "/plants/{id}"
				case 2:
					r, route = Request{Method: "GET", Path: "/nope"}, "unmatched"
				case 3:
					r, route = Request{Method: "GET", Path: "/plants"}, "/plants" // 401
				}
				r.Header = map[string]string{"X-Request-Id": id}
				resp := ts.Do(t, r)
				mu.Lock()
				want[id] = sent{route, resp.Status}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	http.DefaultClient.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.Close(ctx); err != nil {
		t.Fatal(err)
	}
	ts.logs.flush = nil // read what Close wrote, nothing more
	got := map[string]sent{}
	for _, l := range logLines(t, ts, "request") {
		id := l["request_id"].(string)
		if _, dup := got[id]; dup {
			t.Errorf("two log lines for request %s", id)
		}
		got[id] = sent{l["route"].(string), int(l["status"].(float64))}
		if l["level"] != "INFO" || l["time"] == "" || l["method"] == "" || l["duration_ms"] == nil {
			t.Errorf("log line %v lacks a field", l)
		}
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("request %s: logged %+v, want %+v", id, got[id], w)
		}
	}
	if len(want) != clients*perClient {
		t.Fatalf("%d requests, want %d", len(want), clients*perClient)
	}
}

// TestMetricLabels: the route label comes from the operation (set during
// authentication), from the operational path, or by routing again for the
// requests refused before authentication; requests sent at once are all
// counted.
func TestMetricLabels(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice")
	readOnly := ts.Token(t, "alice", plantstore.ScopePlantsRead)
	ts.Post(t, tok, `{"id":1,"name":"Fern"}`)
	counts := map[string]int{} // requests sent by series
	for _, tt := range []struct {
		r    Request
		want string // the series of plantstore_http_requests_total
	}{
		{Request{Method: "GET", Path: "/plants/1", Token: tok}, `code="200",method="GET",route="/plants/{id}"`},
		{Request{Method: "GET", Path: "/plants/2", Token: tok}, `code="404",method="GET",route="/plants/{id}"`},
		{Request{Method: "GET", Path: "/plants/abc", Token: tok}, `code="400",method="GET",route="/plants/{id}"`},
		{Request{Method: "DELETE", Path: "/plants/9", Token: tok}, `code="404",method="DELETE",route="/plants/{id}"`},
		{Request{Method: "POST", Path: "/plants", Token: readOnly, Body: `{"id":2,"name":"x"}`}, `code="403",method="POST",route="/plants"`},
		{Request{Method: "GET", Path: "/plants", Token: "nope"}, `code="401",method="GET",route="/plants"`},
		{Request{Method: "GET", Path: "/plants"}, `code="401",method="GET",route="/plants"`},
		{Request{Method: "GET", Path: "/webhooks/x/deliveries"}, `code="401",method="GET",route="/webhooks/{id}/deliveries"`},
		{Request{Method: "POST", Path: "/webhooks/x/rotate-secret", Token: tok}, `code="403",method="POST",route="/webhooks/{id}/rotate-secret"`},
		{Request{Method: "PUT", Path: "/plants/1", Token: tok}, `code="405",method="PUT",route="unmatched"`},
		{Request{Method: "BREW", Path: "/plants", Token: tok}, `code="405",method="OTHER",route="unmatched"`},
		{Request{Method: "GET", Path: "/no/such/route"}, `code="404",method="GET",route="unmatched"`},
		{Request{Method: "GET", Path: "/healthz"}, `code="200",method="GET",route="/healthz"`},
		{Request{Method: "HEAD", Path: "/readyz"}, `code="200",method="HEAD",route="/readyz"`},
		{Request{Method: "POST", Path: "/healthz"}, `code="405",method="POST",route="/healthz"`},
		{Request{Method: "GET", Path: "/docs/"}, `code="200",method="GET",route="/docs/"`},
	} {
		const n = 6
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() { ts.Do(t, tt.r) })
		}
		wg.Wait()
		counts[tt.want] += n
		body := string(ts.Metrics(t).Body)
		if want := "plantstore_http_requests_total{" + tt.want + "} " + fmt.Sprint(counts[tt.want]); !strings.Contains(body, want+"\n") {
			t.Errorf("%s %s: metrics lack %s; have:\n%s", tt.r.Method, tt.r.Path, want, grepLines(body, "plantstore_http_requests_total"))
		}
		route := tt.want[strings.Index(tt.want, "method="):]
		if want := "plantstore_http_request_duration_seconds_count{" + route + "} "; !strings.Contains(body, want) {
			t.Errorf("%s %s: metrics lack %s", tt.r.Method, tt.r.Path, want)
		}
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestOperationRoutes: the route label table names every operation of
// the contract with its path, as the generated router does.
func TestOperationRoutes(t *testing.T) {
	t.Parallel()
	doc := loadDocument(t, api.JSON)
	router, err := oapi.NewServer(oapi.UnimplementedHandler{}, nopSecurity{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, item := range doc.get("paths").(map[string]any) {
		for method, o := range item.(map[string]any) {
			m, ok := o.(map[string]any)
			if !ok || m["operationId"] == nil {
				continue
			}
			n++
			id := m["operationId"].(string)
			route, ok := router.FindRoute(strings.ToUpper(method), strings.ReplaceAll(path, "{id}", "x1"))
			if !ok || !strings.EqualFold(route.Name(), id) || route.PathPattern() != path {
				t.Errorf("%s %s (%s): the router finds %q %q", method, path, id, route.Name(), route.PathPattern())
				continue
			}
			if got := plantstorehttp.OperationRoutes[route.Name()]; got != path {
				t.Errorf("operation %s: route label %q, want %q", route.Name(), got, path)
			}
		}
	}
	if got, want := len(plantstorehttp.OperationRoutes), n; got != want {
		t.Errorf("the table has %d operations, the contract %d", got, want)
	}
}

type nopSecurity struct{}

func (nopSecurity) HandleBearerAuth(ctx context.Context, _ oapi.OperationName, _ oapi.BearerAuth) (context.Context, error) {
	return ctx, nil
}
