package http

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// TracerName is the instrumentation scope of the server's spans.
const TracerName = "github.com/plantstore/plantstore/internal/http"

// traceRequests makes one OpenTelemetry server span of every request, named
// "METHOD route" (the route pattern, never the raw path), the child of the
// caller's span when the request carries a W3C traceparent. The span is in
// the request's context, so the layers below (the group commit's batch
// spans) link to it. Handler installs it only when Server.TracerProvider is
// set: with tracing off a request pays nothing for it.
//
// It is the transport's own middleware rather than ogen's instrumentation
// (the generator's ogen/otel feature stays disabled): that one costs 14
// allocations per request even with no-op providers, measured, and covers
// only the requests the generated router takes, not the operational paths,
// the CORS preflights nor the requests refused before it.
func (s *Server) traceRequests(next http.Handler) http.Handler {
	tracer := s.TracerProvider.Tracer(TracerName)
	prop := propagation.TraceContext{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(
				semconv.HTTPRequestMethodKey.String(r.Method),
				semconv.URLPath(r.URL.Path),
			))
		defer span.End()
		next.ServeHTTP(w, r.WithContext(ctx))

		info := requestInfoFrom(ctx)
		if info == nil { // not under instrument: tests
			return
		}
		route := ""
		if info.route != nil {
			route = info.route.label
		} else {
			route = s.routeLabel(r)
		}
		status := info.rec.status
		if status == 0 {
			status = http.StatusOK
		}
		span.SetName(r.Method + " " + route)
		span.SetAttributes(
			semconv.HTTPRoute(route),
			semconv.HTTPResponseStatusCode(status),
			attribute.String("plantstore.request_id", info.id),
		)
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
	})
}
