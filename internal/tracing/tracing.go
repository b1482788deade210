// Package tracing starts the OpenTelemetry SDK that serve exports spans
// with (--otel-endpoint): an OTLP/HTTP exporter, a batching span processor,
// a parent-based ratio sampler and the process's resource. The parts that
// make spans (http, the row stores, webhook) take only the
// trace.TracerProvider it returns, and make none when they have none.
package tracing

import (
	"context"
	"fmt"
	"net/url"
	"path"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// ServiceName is the service.name of every span exported.
const ServiceName = "plantstore"

// otlpTracesPath is what the endpoint's path gets, as with
// OTEL_EXPORTER_OTLP_ENDPOINT: the OTLP/HTTP traces path.
const otlpTracesPath = "/v1/traces"

// TracesURL checks an endpoint, the collector's OTLP/HTTP base URL
// (http://host:4318), and returns the URL spans are sent to: its path with
// /v1/traces appended unless it ends with it already.
func TracesURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	switch {
	case err != nil:
		return "", fmt.Errorf("not a URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("give the collector's OTLP/HTTP URL, http:// or https:// (e.g. http://127.0.0.1:4318); OTLP over gRPC is not supported")
	case u.Host == "":
		return "", fmt.Errorf("no host")
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("no user info, query or fragment: headers go in OTEL_EXPORTER_OTLP_HEADERS")
	}
	if !strings.HasSuffix(u.Path, otlpTracesPath) {
		u.Path = path.Join("/", u.Path, otlpTracesPath)
		u.RawPath = ""
	}
	return u.String(), nil
}

// exporterError is an error of the exporter's settings, as opposed to one
// of the resource.
type exporterError struct{ err error }

func (e *exporterError) Error() string { return e.err.Error() }
func (e *exporterError) Unwrap() error { return e.err }

// IsExporterError reports whether err, from Start, is about the exporter's
// settings (the endpoint, the OTEL_EXPORTER_OTLP_* variables).
func IsExporterError(err error) bool {
	_, ok := err.(*exporterError)
	return ok
}

// Start starts the OTLP/HTTP exporter to endpoint (checked by TracesURL)
// and the tracer provider, which records the share ratio of the traces
// started here and every trace whose caller sampled it (traceparent). The
// exporter also reads the standard OTEL_EXPORTER_OTLP_* variables (headers,
// timeout, certificates, compression), and OTEL_RESOURCE_ATTRIBUTES may
// add attributes (deployment, region); service.name stays ServiceName.
// Shutdown exports the spans still queued. An empty endpoint is tracing
// off: no provider, at no cost.
func Start(ctx context.Context, endpoint string, ratio float64) (*sdktrace.TracerProvider, error) {
	if endpoint == "" {
		return nil, nil
	}
	target, err := TracesURL(endpoint)
	if err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(target))
	if err != nil {
		return nil, &exporterError{err}
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost(),
		resource.WithAttributes(semconv.ServiceName(ServiceName)))
	if err != nil {
		return nil, fmt.Errorf("otel resource: %w", err)
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
	), nil
}
