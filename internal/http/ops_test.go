package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/api"
	plantstorehttp "github.com/plantstore/plantstore/internal/http"
	"github.com/plantstore/plantstore/internal/testkit/mock"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		t.Run(path, func(t *testing.T) {
			resp := ts.Get(t, "", path)
			if resp.Status != 200 || string(resp.Body) != `{"status":"ok"}`+"\n" {
				t.Fatalf("%d %s", resp.Status, resp.Body)
			}
		})
	}
	t.Run("ReadyzWhenStorageGone", func(t *testing.T) {
		if err := ts.DB.Close(); err != nil {
			t.Fatal(err)
		}
		mustError(t, ts.Get(t, "", "/readyz"), 503, plantstore.CodeStorageUnavailable)
		if resp := ts.Get(t, "", "/healthz"); resp.Status != 200 {
			t.Fatalf("healthz = %d: the process is still alive", resp.Status)
		}
	})
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice")
	ts.Post(t, tok, `{"id":1,"name":"Fern"}`)
	ts.Get(t, tok, "/plants/1")
	ts.Get(t, tok, "/plants/2")
	ts.Get(t, tok, "/no/such/route")
	resp := ts.Metrics(t)
	if resp.Status != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("%d %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{
		`plantstore_http_requests_total{code="200",method="POST",route="/plants"} 1`,
		`plantstore_http_requests_total{code="200",method="GET",route="/plants/{id}"} 1`,
		`plantstore_http_requests_total{code="404",method="GET",route="/plants/{id}"} 1`,
		`plantstore_http_requests_total{code="404",method="GET",route="unmatched"} 1`,
		`plantstore_http_request_duration_seconds_bucket{method="POST",route="/plants",le="+Inf"} 1`,
		`go_goroutines`,
		`process_resident_memory_bytes`,
	} {
		if !bytes.Contains(resp.Body, []byte(want)) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestMetricsListener: /metrics is served on the metrics listener alone
// (MetricsAddr); the API listener answers it with the contract's 404, and
// keeps /healthz and /readyz. The metrics listener has the API's timeouts
// and stops with the server.
func TestMetricsListener(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, func(ts *TestServer) {
		ts.ReadHeaderTimeout = 300 * time.Millisecond
	})
	if ts.MetricsURL() == "" || ts.MetricsURL() == ts.URL {
		t.Fatalf("MetricsURL = %q, want a listener of its own (API %s)", ts.MetricsURL(), ts.URL)
	}
	for _, method := range []string{"GET", "HEAD"} {
		resp := ts.Do(t, Request{Method: method, Path: "/metrics"})
		if method == "HEAD" {
			if resp.Status != 404 {
				t.Errorf("HEAD /metrics on the API listener: %d, want 404", resp.Status)
			}
			continue
		}
		mustError(t, resp, 404, plantstore.CodeNoRoute)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if resp := ts.Get(t, "", path); resp.Status != 200 {
			t.Errorf("GET %s on the API listener: %d, want 200", path, resp.Status)
		}
	}
	if resp := ts.Metrics(t); resp.Status != 200 || !bytes.Contains(resp.Body, []byte("plantstore_http_requests_total")) {
		t.Fatalf("GET /metrics on the metrics listener: %d\n%s", resp.Status, resp.Body)
	}
	// The metrics listener serves nothing else: not the API, not the ops
	// paths.
	for _, path := range []string{"/healthz", "/plants", "/openapi.json", "/"} {
		resp, err := http.Get(ts.MetricsURL() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("GET %s on the metrics listener: %d, want 404", path, resp.StatusCode)
		}
	}
	if resp, err := http.Post(ts.MetricsURL()+"/metrics", "text/plain", nil); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != 405 {
		t.Errorf("POST /metrics on the metrics listener: %d, want 405", resp.StatusCode)
	}

	// A client that never finishes its request header is cut off after
	// ReadHeaderTimeout, as on the API listener.
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.MetricsURL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if _, err := io.ReadAll(conn); err != nil {
		t.Fatalf("the metrics listener kept a stalled request open: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("stalled request closed after %v, want about ReadHeaderTimeout (300ms)", took)
	}

	// Close stops the metrics listener too.
	metricsURL := ts.MetricsURL()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ts.Close(ctx); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 2 * time.Second}
	if resp, err := client.Get(metricsURL + "/metrics"); err == nil {
		resp.Body.Close()
		t.Fatalf("GET /metrics after Close: %d, want a refused connection", resp.StatusCode)
	}
}

// TestMetricsListenerOff: without MetricsAddr there is no metrics
// listener, and the API listener still answers /metrics with 404.
func TestMetricsListenerOff(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, func(ts *TestServer) { ts.MetricsAddr = "" })
	if got := ts.MetricsURL(); got != "" {
		t.Fatalf("MetricsURL = %q, want none", got)
	}
	mustError(t, ts.Get(t, "", "/metrics"), 404, plantstore.CodeNoRoute)
}

func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	resp := ts.Get(t, "", "/openapi.json")
	if resp.Status != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	if !bytes.Equal(resp.Body, api.JSON) {
		t.Fatal("served document differs from api/openapi.json")
	}
	// Relative: clients and /docs call the server that served the document,
	// whatever its address.
	if got, want := servers(t, resp.Body), []any{map[string]any{"url": "/", "description": "The server that serves this document (`--public-url` when set)"}}; !cmp.Equal(got, want) {
		t.Errorf("servers = %v, want %v", got, want)
	}
}

// servers decodes a document's servers.
func servers(t *testing.T, doc []byte) any {
	t.Helper()
	var d struct{ Servers any }
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	return d.Servers
}

// TestOpenAPIPublicURL: with PublicURL the served document's servers is
// that URL (no trailing slash), and nothing else changes.
func TestOpenAPIPublicURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"https://api.example.com", "https://api.example.com"},
		{"https://api.example.com/", "https://api.example.com"},
		{"http://127.0.0.1:9000/plantstore/", "http://127.0.0.1:9000/plantstore"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			ts := MustOpenServer(t, func(ts *TestServer) { ts.PublicURL = tc.in })
			resp := ts.Get(t, "", "/openapi.json")
			if resp.Status != 200 {
				t.Fatalf("%d %s", resp.Status, resp.Body)
			}
			want := []any{map[string]any{"url": tc.want, "description": "This deployment (plantstore serve --public-url)"}}
			if got := servers(t, resp.Body); !cmp.Equal(got, want) {
				t.Errorf("servers = %v, want %v", got, want)
			}
			var got, orig map[string]any
			if err := json.Unmarshal(resp.Body, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(api.JSON, &orig); err != nil {
				t.Fatal(err)
			}
			delete(got, "servers")
			delete(orig, "servers")
			if diff := cmp.Diff(orig, got); diff != "" {
				t.Errorf("document changed beyond servers (-api.JSON +served):\n%s", diff)
			}
			// Key order kept: the document still reads like its source.
			if i, j := bytes.Index(resp.Body, []byte(`"info"`)), bytes.Index(resp.Body, []byte(`"servers"`)); i < 0 || j < i {
				t.Errorf("key order changed: info at %d, servers at %d", i, j)
			}
		})
	}
}

// pingerFunc is a Pinger of a function (nil: always ready).
type pingerFunc func(context.Context) error

func (f pingerFunc) Ping(ctx context.Context) error {
	if f == nil {
		return nil
	}
	return f(ctx)
}

// TestCheckPublicURL: only absolute http(s) URLs without user, query or
// fragment; the server refuses to start with another.
func TestCheckPublicURL(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"http://127.0.0.1:8080", "https://api.example.com/", "https://api.example.com/base/path"} {
		if err := plantstorehttp.CheckPublicURL(ok); err != nil {
			t.Errorf("CheckPublicURL(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "/", "api.example.com", "127.0.0.1:8080", "ftp://api.example.com", "https://", "https:api.example.com",
		"https://user:pw@api.example.com", "https://api.example.com/?x=1", "https://api.example.com/?", "https://api.example.com/#top", "https://api.example.com/#"} {
		if err := plantstorehttp.CheckPublicURL(bad); err == nil {
			t.Errorf("CheckPublicURL(%q) = nil, want an error", bad)
		}
	}
	s := plantstorehttp.NewServer()
	s.Addr = "127.0.0.1:0"
	s.PlantService, s.TokenService, s.WebhookService, s.Storage = &mock.PlantService{}, &mock.TokenService{}, &mock.WebhookService{}, pingerFunc(nil)
	s.PublicURL = "https://api.example.com/?x=1"
	if _, err := s.Handler(); err == nil || !strings.Contains(err.Error(), "query") {
		t.Errorf("Handler() with a bad PublicURL = %v, want an error about the query", err)
	}
}

// TestDocs: /docs is sent with a Content-Security-Policy header that allows
// this origin only and no framing; its script, the Redoc bundle and the logo
// the bundle shows all come from this origin.
func TestDocs(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	page := ts.Get(t, "", "/docs")
	if page.Status != 200 || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("%d %s", page.Status, page.Header.Get("Content-Type"))
	}
	csp := page.Header.Get("Content-Security-Policy")
	directives := map[string]string{}
	for d := range strings.SplitSeq(csp, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		directives[name] = value
	}
	for name, want := range map[string]string{
		"default-src":     "'self'",
		"script-src":      "'self'",
		"frame-ancestors": "'none'",
		"object-src":      "'none'",
		"base-uri":        "'none'",
	} {
		if got := directives[name]; got != want {
			t.Errorf("Content-Security-Policy %s = %q, want %q (policy %q)", name, got, want, csp)
		}
	}
	if strings.Contains(csp, "http") {
		t.Errorf("Content-Security-Policy %q allows another site", csp)
	}
	if regexp.MustCompile(`<script(\s[^>]*)?>\s*[^<\s]`).Match(page.Body) || !bytes.Contains(page.Body, []byte(`src="/docs/docs.js"`)) {
		t.Fatalf("page has an inline script, or lacks /docs/docs.js:\n%s", page.Body)
	}
	initJS := ts.Get(t, "", "/docs/docs.js")
	for _, want := range []string{"/openapi.json", "/docs/redoc.standalone.js"} {
		if initJS.Status != 200 || !bytes.Contains(initJS.Body, []byte(want)) {
			t.Fatalf("/docs/docs.js: %d, lacks %s", initJS.Status, want)
		}
	}
	for _, r := range []*Response{page, initJS} {
		if bytes.Contains(r.Body, []byte("https://")) || bytes.Contains(r.Body, []byte("http://")) {
			t.Fatal("page loads something from another site; it must work offline")
		}
	}
	script := ts.Get(t, "", "/docs/redoc.standalone.js")
	if script.Status != 200 || len(script.Body) < 100_000 || !strings.Contains(script.Header.Get("Content-Type"), "javascript") {
		t.Fatalf("script: %d, %d bytes, %s", script.Status, len(script.Body), script.Header.Get("Content-Type"))
	}
	// The bundle's logo (an <img>) comes from this origin, not Redocly's
	// CDN, which the policy refuses.
	if bytes.Contains(script.Body, []byte("cdn.redoc.ly")) || !bytes.Contains(script.Body, []byte("`/docs/redocly.svg`")) {
		t.Fatal("the Redoc bundle still loads its logo from cdn.redoc.ly")
	}
	logo := ts.Get(t, "", "/docs/redocly.svg")
	if logo.Status != 200 || logo.Header.Get("Content-Type") != "image/svg+xml" || !bytes.HasPrefix(logo.Body, []byte("<svg")) {
		t.Fatalf("logo: %d %s %.40s", logo.Status, logo.Header.Get("Content-Type"), logo.Body)
	}
}

// TestFavicon: /favicon.ico, which browsers ask for by themselves, is an
// icon that may be cached, not a 404.
func TestFavicon(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	for _, method := range []string{"GET", "HEAD"} {
		resp := ts.Do(t, Request{Method: method, Path: "/favicon.ico"})
		if resp.Status != 200 || resp.Header.Get("Content-Type") != "image/x-icon" ||
			resp.Header.Get("Cache-Control") != "public, max-age=86400" {
			t.Fatalf("%s /favicon.ico: %d, Content-Type %q, Cache-Control %q", method, resp.Status,
				resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"))
		}
		if method == "GET" && !bytes.HasPrefix(resp.Body, []byte{0, 0, 1, 0, 1, 0}) { // an ICO of one image
			t.Fatalf("GET /favicon.ico: not an icon: % x", resp.Body[:min(len(resp.Body), 8)])
		}
	}
}
