package http_test

import (
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// spanAttrs returns a span's attributes as strings.
func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes() {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

// waitSpan waits for an ended span named name (a server span ends just
// after its answer is written, so the client may see the answer first);
// the bound only keeps a broken test from hanging.
func waitSpan(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, s := range rec.Ended() {
			if s.Name() == name {
				return s
			}
		}
		if time.Now().After(deadline) {
			var names []string
			for _, s := range rec.Ended() {
				names = append(names, s.Name())
			}
			t.Fatalf("no span %q; ended: %q", name, names)
		}
		time.Sleep(time.Millisecond)
	}
}

// With a TracerProvider every request is a server span named by its route,
// the child of the caller's traceparent, and a create's commit batch is a
// span linked to it.
func TestTracing(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	ts := MustOpenServer(t, func(s *TestServer) {
		s.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	})
	token := ts.Token(t, "alice")

	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		spanID  = "00f067aa0ba902b7"
	)
	resp := ts.Do(t, Request{Method: "POST", Path: "/plants", Token: token, Body: `{"id":7,"name":"Fern"}`,
		Header: map[string]string{"traceparent": "00-" + traceID + "-" + spanID + "-01"}})
	if resp.Status != http.StatusOK {
		t.Fatalf("create: %d %s", resp.Status, resp.Body)
	}
	server := waitSpan(t, rec, "POST /plants")
	if got, want := server.SpanKind(), trace.SpanKindServer; got != want {
		t.Errorf("kind %v, want %v", got, want)
	}
	if got := server.SpanContext().TraceID().String(); got != traceID {
		t.Errorf("trace id %s, want the caller's %s", got, traceID)
	}
	if got := server.Parent().SpanID().String(); got != spanID {
		t.Errorf("parent span id %s, want the caller's %s", got, spanID)
	}
	attrs := spanAttrs(server)
	for k, want := range map[string]string{
		"http.request.method":       "POST",
		"http.route":                "/plants",
		"http.response.status_code": "200",
		"plantstore.request_id":     resp.Header.Get("X-Request-Id"),
	} {
		if attrs[k] != want {
			t.Errorf("server span: %s = %q, want %q", k, attrs[k], want)
		}
	}

	// The create's batch (the token's was another) links to its span.
	var batch sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		for _, l := range s.Links() {
			if s.Name() == "sqlite commit" && l.SpanContext.SpanID() == server.SpanContext().SpanID() {
				batch = s
			}
		}
	}
	if batch == nil {
		t.Fatalf("no sqlite commit span links to the request's span %s", server.SpanContext().SpanID())
	}
	for k, want := range map[string]string{"db.operation.batch.size": "1", "db.system.name": "sqlite"} {
		if got := spanAttrs(batch)[k]; got != want {
			t.Errorf("batch span: %s = %q, want %q", k, got, want)
		}
	}

	// A request with an id in its path is named by the pattern; one the
	// router does not know, by "unmatched"; an operational path, by itself.
	// Without a traceparent each is a root span.
	for _, tc := range []struct {
		path, name, status string
	}{
		{"/plants/7", "GET /plants/{id}", "200"},
		{"/nope/123", "GET unmatched", "404"},
		{"/healthz", "GET /healthz", "200"},
	} {
		ts.Get(t, token, tc.path)
		s := waitSpan(t, rec, tc.name)
		if got := spanAttrs(s)["http.response.status_code"]; got != tc.status {
			t.Errorf("%s: status %s, want %s", tc.path, got, tc.status)
		}
		if s.Parent().IsValid() {
			t.Errorf("%s: parent %v, want a root span", tc.path, s.Parent())
		}
		if s.Status().Code == codes.Error {
			t.Errorf("%s: span status error for a %s", tc.path, tc.status)
		}
	}
}
