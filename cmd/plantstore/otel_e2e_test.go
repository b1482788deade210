package main

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP trace receiver on 127.0.0.1 that keeps every
// span it is sent, with its resource's service.name.
type collector struct {
	*httptest.Server
	mu    sync.Mutex
	spans []collectedSpan
	paths []string
}

type collectedSpan struct {
	service string
	span    *tracepb.Span
}

func newCollector(t *testing.T) *collector {
	t.Helper()
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.paths = append(c.paths, r.URL.Path)
		for _, rs := range req.GetResourceSpans() {
			service := ""
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.GetKey() == "service.name" {
					service = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					c.spans = append(c.spans, collectedSpan{service, s})
				}
			}
		}
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *collector) got() ([]collectedSpan, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.spans), slices.Clone(c.paths)
}

// TestServeTracingAndCORS: with --otel-endpoint a create is a request span
// and a batch span, its webhook delivery an attempt span whose trace the
// delivery's traceparent continues, all exported to the collector by
// SIGTERM under service.name plantstore; with --cors-origins an allowed
// origin's preflight is answered.
func TestServeTracingAndCORS(t *testing.T) {
	t.Parallel()
	col := newCollector(t)
	db := filepath.Join(t.TempDir(), "plantstore.db")
	s := startServer(t, db, "--create-db", "--no-bootstrap-admin", "--webhook-allow-private", "--rate-limit", "0",
		"--otel-endpoint", col.URL, "--cors-origins", "https://app.example,http://localhost:5173")
	token := webhookToken(t, db, "alice")
	rc := newReceiver(t)
	subscribe(t, s, token, rc.URL)

	if status, _, body := do(t, testClient, "POST", s.url+"/plants", token, `{"id":7,"name":"Fern"}`); status != http.StatusOK {
		t.Fatalf("create: %d %s", status, body)
	}
	waitFor(t, 10*time.Second, "the delivery", func() bool { return len(rc.got()) == 1 })
	traceparent := rc.got()[0].headers.Get("traceparent")
	parts := strings.Split(traceparent, "-")
	if len(parts) != 4 || len(parts[1]) != 32 {
		t.Fatalf("delivery traceparent %q, want a W3C trace context", traceparent)
	}

	req, err := http.NewRequest(http.MethodOptions, s.url+"/plants", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", "http://localhost:5173")
	req.Header.Set("Access-Control-Request-Method", "POST")
	res, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" {
		t.Errorf("preflight: %d, Allow-Origin %q", res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
	}

	if err := s.stop(t); err != nil {
		t.Fatalf("serve: %v", err)
	}
	spans, paths := col.got()
	for _, p := range paths {
		if p != "/v1/traces" {
			t.Errorf("exported to %s, want /v1/traces", p)
		}
	}
	byName := map[string][]*tracepb.Span{}
	for _, cs := range spans {
		if cs.service != "plantstore" {
			t.Errorf("span %q: service.name %q, want plantstore", cs.span.GetName(), cs.service)
		}
		byName[cs.span.GetName()] = append(byName[cs.span.GetName()], cs.span)
	}
	for _, name := range []string{"POST /plants", "sqlite commit", "webhook delivery", "OPTIONS /plants"} {
		if len(byName[name]) == 0 {
			names := make([]string, 0, len(byName))
			for n := range byName {
				names = append(names, n)
			}
			t.Errorf("no span %q exported; got %q", name, names)
		}
	}
	found := false
	for _, sp := range byName["webhook delivery"] {
		found = found || hex.EncodeToString(sp.GetTraceId()) == parts[1]
	}
	if !found {
		t.Errorf("no webhook delivery span in trace %s (the delivery's traceparent)", parts[1])
	}
}

// The CORS and tracing settings are checked before anything starts.
func TestServeTracingAndCORSSettings(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--cors-origins", "https://app.example/"}, "--cors-origins"},
		{[]string{"--cors-origins", "*,https://app.example"}, "--cors-origins"},
		{[]string{"--otel-endpoint", "grpc://127.0.0.1:4317"}, "--otel-endpoint"},
		{[]string{"--otel-endpoint", "127.0.0.1:4318"}, "--otel-endpoint"},
		{[]string{"--otel-endpoint", "http://127.0.0.1:4318", "--otel-sample-ratio", "1.5"}, "--otel-sample-ratio"},
	} {
		r := runCLI(t, nil, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", tempDBPath(t), "--no-bootstrap-admin"}, tt.args...)...)
		if r.err == nil || !strings.Contains(r.err.Error(), tt.wantErr) {
			t.Errorf("%q: error %v, want one naming %s", tt.args, r.err, tt.wantErr)
		}
	}
}
