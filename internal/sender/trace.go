package sender

import (
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore"
)

// TracerName is the instrumentation scope of the request spans.
const TracerName = "github.com/plantstore/plantstore/internal/sender"

// startSpan starts the client span of one request (a root span: the
// delivery is not part of the request that caused it) and puts its W3C
// trace context in req's traceparent header, so that a traced receiver
// continues the trace. The header is not signed: it says nothing about the
// event. The span names the receiver's host, never its URL, which may
// carry credentials.
func (s *Sender) startSpan(req *http.Request, t *plantstore.Task) (*http.Request, trace.Span) {
	attrs := []attribute.KeyValue{
		semconv.HTTPRequestMethodKey.String(req.Method),
		semconv.ServerAddress(req.URL.Hostname()),
		attribute.String("plantstore.webhook.message_id", t.MessageID),
		attribute.String("plantstore.webhook.subscription_id", t.SubscriptionID),
		attribute.Int("plantstore.webhook.attempt", t.Attempts+1),
	}
	if p, err := strconv.Atoi(req.URL.Port()); err == nil {
		attrs = append(attrs, semconv.ServerPort(p))
	}
	ctx, span := s.tracer.Start(req.Context(), "webhook delivery", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithNewRoot(), trace.WithAttributes(attrs...))
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	return req.WithContext(ctx), span
}

// endSpan records what came of the request on its span and ends it: an
// error unless the receiver answered 2xx.
func endSpan(span trace.Span, r plantstore.SendResult) {
	if r.StatusCode != 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCode(r.StatusCode))
	}
	if r.StatusCode < 200 || r.StatusCode > 299 {
		msg := r.Error
		if msg == "" {
			msg = "status " + strconv.Itoa(r.StatusCode)
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End()
}
