package sender_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/sender"
)

// recorder is a 127.0.0.1 receiver answering the given statuses in turn
// (the last one repeats); it returns the headers of the requests so far.
func recorder(t *testing.T, statuses ...int) (*httptest.Server, func() []http.Header) {
	t.Helper()
	var mu sync.Mutex
	var got []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		status := statuses[min(len(got), len(statuses))-1]
		mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []http.Header {
		mu.Lock()
		defer mu.Unlock()
		return append([]http.Header(nil), got...)
	}
}

func task(t *testing.T, id, url string) *plantstore.Task {
	t.Helper()
	secret, err := plantstore.NewWebhookSecret()
	if err != nil {
		t.Fatal(err)
	}
	return &plantstore.Task{
		MessageID: id, SubscriptionID: "whk_" + id, Owner: "alice",
		Event: plantstore.Event{Owner: "alice", ID: plantstore.EventIDOf(id), Type: plantstore.EventPlantCreated, PlantID: 7, Name: "Fern"},
		URL:   url, Secrets: []string{secret},
		CreatedAt: time.Now(),
	}
}

// With a TracerProvider each request is a client span, and the request
// carries its W3C trace context: the receiver's traceparent names the
// request's span. A failed request's span is an error.
func TestSenderTracesRequests(t *testing.T) {
	t.Parallel()
	srv, got := recorder(t, http.StatusInternalServerError, http.StatusNoContent)
	rec := tracetest.NewSpanRecorder()
	s := sender.New(sender.Options{AllowPrivate: true,
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
	tk := task(t, "msg_traced", srv.URL+"/hooks?token=secret")
	for range 2 {
		s.Send(t.Context(), tk)
		tk.Attempts++
	}

	reqs := got()
	spans := rec.Ended()
	if len(reqs) != 2 || len(spans) != 2 {
		t.Fatalf("%d requests and %d spans, want 2 and 2", len(reqs), len(spans))
	}
	for i, h := range reqs {
		ctx := propagation.TraceContext{}.Extract(t.Context(), propagation.HeaderCarrier(h))
		sent := trace.SpanContextFromContext(ctx)
		if !sent.IsValid() {
			t.Fatalf("request %d: no valid traceparent: %q", i, h.Get("traceparent"))
		}
		s := spans[i]
		if got, want := sent.TraceID(), s.SpanContext().TraceID(); got != want {
			t.Errorf("request %d: traceparent trace id %s, want the request span's %s", i, got, want)
		}
		if got, want := sent.SpanID(), s.SpanContext().SpanID(); got != want {
			t.Errorf("request %d: traceparent span id %s, want the request span's %s", i, got, want)
		}
		if got, want := s.SpanKind(), trace.SpanKindClient; got != want {
			t.Errorf("span %d: kind %v, want %v", i, got, want)
		}
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		for k, want := range map[string]string{
			"plantstore.webhook.message_id":      "msg_traced",
			"plantstore.webhook.subscription_id": "whk_msg_traced",
			"server.address":                     "127.0.0.1",
			"http.response.status_code":          []string{"500", "204"}[i],
			"plantstore.webhook.attempt":         []string{"1", "2"}[i],
		} {
			if attrs[k] != want {
				t.Errorf("span %d: %s = %q, want %q", i, k, attrs[k], want)
			}
		}
		for k, v := range attrs {
			if v == srv.URL+"/hooks?token=secret" || k == "url.full" {
				t.Errorf("span %d: %s = %q: the URL (which may carry credentials) is not recorded", i, k, v)
			}
		}
	}
	if got, want := spans[0].Status().Code, codes.Error; got != want {
		t.Errorf("failed request's span: status %v, want %v", got, want)
	}
	if got := spans[1].Status().Code; got == codes.Error {
		t.Errorf("answered request's span: status %v, want unset", got)
	}
	if spans[0].SpanContext().TraceID() == spans[1].SpanContext().TraceID() {
		t.Errorf("two requests share a trace: each is a root span")
	}
}

// Without a TracerProvider requests carry no traceparent.
func TestSenderUntracedSendsNoTraceparent(t *testing.T) {
	t.Parallel()
	srv, got := recorder(t, http.StatusNoContent)
	s := sender.New(sender.Options{AllowPrivate: true})
	if r := s.Send(t.Context(), task(t, "msg_plain", srv.URL)); r.StatusCode != http.StatusNoContent {
		t.Fatalf("Send = %+v", r)
	}
	for _, h := range got() {
		if v := h.Get("traceparent"); v != "" {
			t.Errorf("traceparent %q without tracing", v)
		}
	}
}
