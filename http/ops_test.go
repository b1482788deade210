package http_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/api"
)

func TestHealth(t *testing.T) {
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
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice")
	ts.Post(t, tok, `{"id":1,"name":"Fern"}`)
	ts.Get(t, tok, "/plants/1")
	ts.Get(t, tok, "/plants/2")
	ts.Get(t, tok, "/no/such/route")
	resp := ts.Get(t, "", "/metrics")
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

func TestOpenAPIServed(t *testing.T) {
	ts := MustOpenServer(t)
	resp := ts.Get(t, "", "/openapi.json")
	if resp.Status != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	if !bytes.Equal(resp.Body, api.JSON) {
		t.Fatal("served document differs from api/openapi.json")
	}
}

func TestDocs(t *testing.T) {
	ts := MustOpenServer(t)
	page := ts.Get(t, "", "/docs")
	if page.Status != 200 || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("%d %s", page.Status, page.Header.Get("Content-Type"))
	}
	for _, want := range []string{"/openapi.json", "/docs/redoc.standalone.js"} {
		if !bytes.Contains(page.Body, []byte(want)) {
			t.Fatalf("page lacks %s", want)
		}
	}
	if bytes.Contains(page.Body, []byte("https://")) || bytes.Contains(page.Body, []byte("http://")) {
		t.Fatal("page loads something from another site; it must work offline")
	}
	script := ts.Get(t, "", "/docs/redoc.standalone.js")
	if script.Status != 200 || len(script.Body) < 100_000 || !strings.Contains(script.Header.Get("Content-Type"), "javascript") {
		t.Fatalf("script: %d, %d bytes, %s", script.Status, len(script.Body), script.Header.Get("Content-Type"))
	}
}
