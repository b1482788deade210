package webhook_test

import (
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore/internal/webhook"
)

// With a TracerProvider each attempt is a client span, and the delivery
// carries its W3C trace context: the receiver's traceparent names the
// attempt's span. A failed attempt's span is an error.
func TestDispatcherTracesAttempts(t *testing.T) {
	srv, got := recorder(t, http.StatusInternalServerError, http.StatusNoContent)
	o := newMemOutbox()
	o.add(task("msg_traced", srv.URL+"/hooks?token=secret", newSecret(t)))
	rec := tracetest.NewSpanRecorder()
	d := newDispatcher(t, o, nil, func(o *webhook.Options) {
		o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	})
	stop, _ := start(t, d)
	waitFor(t, "two attempts", func() bool { return len(o.results("msg_traced")) == 2 })
	stop()

	reqs := got()
	spans := rec.Ended()
	if len(reqs) != 2 || len(spans) != 2 {
		t.Fatalf("%d deliveries and %d spans, want 2 and 2", len(reqs), len(spans))
	}
	for i, r := range reqs {
		ctx := propagation.TraceContext{}.Extract(t.Context(), propagation.HeaderCarrier(r.header))
		sent := trace.SpanContextFromContext(ctx)
		if !sent.IsValid() {
			t.Fatalf("delivery %d: no valid traceparent: %q", i, r.header.Get("traceparent"))
		}
		s := spans[i]
		if got, want := sent.TraceID(), s.SpanContext().TraceID(); got != want {
			t.Errorf("delivery %d: traceparent trace id %s, want the attempt span's %s", i, got, want)
		}
		if got, want := sent.SpanID(), s.SpanContext().SpanID(); got != want {
			t.Errorf("delivery %d: traceparent span id %s, want the attempt span's %s", i, got, want)
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
		t.Errorf("failed attempt's span: status %v, want %v", got, want)
	}
	if got := spans[1].Status().Code; got == codes.Error {
		t.Errorf("delivered attempt's span: status %v, want unset", got)
	}
	if spans[0].SpanContext().TraceID() == spans[1].SpanContext().TraceID() {
		t.Errorf("two attempts share a trace: each is a root span")
	}
}

// Without a TracerProvider deliveries carry no traceparent.
func TestDispatcherUntracedSendsNoTraceparent(t *testing.T) {
	srv, got := recorder(t, http.StatusNoContent)
	o := newMemOutbox()
	o.add(task("msg_plain", srv.URL, newSecret(t)))
	stop, _ := start(t, newDispatcher(t, o, nil))
	waitFor(t, "the attempt", func() bool { return len(o.results("msg_plain")) == 1 })
	stop()
	for _, r := range got() {
		if v := r.header.Get("traceparent"); v != "" {
			t.Errorf("traceparent %q without tracing", v)
		}
	}
}
