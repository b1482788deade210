package main

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

// serviceName is the service.name of every span serve exports.
const serviceName = "plantstore"

// otlpTracesPath is what --otel-endpoint's path gets, as with
// OTEL_EXPORTER_OTLP_ENDPOINT: the OTLP/HTTP traces path.
const otlpTracesPath = "/v1/traces"

// otlpTracesURL checks an --otel-endpoint value, the collector's OTLP/HTTP
// base URL (http://host:4318), and returns the URL spans are sent to: its
// path with /v1/traces appended unless it ends with it already.
func otlpTracesURL(endpoint string) (string, error) {
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

// tracing holds serve's tracer provider when --otel-endpoint is set.
type tracing struct {
	provider *sdktrace.TracerProvider
}

// newTracing starts the OTLP/HTTP exporter and the tracer provider, nil when
// --otel-endpoint is empty (tracing off). The exporter also reads the
// standard OTEL_EXPORTER_OTLP_* variables (headers, timeout, certificates,
// compression); the endpoint is the flag's.
func (c *serveCmd) newTracing(ctx context.Context) (*tracing, error) {
	if c.OTelEndpoint == "" {
		return nil, nil
	}
	target, err := otlpTracesURL(c.OTelEndpoint)
	if err != nil {
		return nil, invalidSetting("otel-endpoint", "PLANTSTORE_OTEL_ENDPOINT", "%v, got %q", err, c.OTelEndpoint)
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(target))
	if err != nil {
		return nil, failedSetting("otel-endpoint", "PLANTSTORE_OTEL_ENDPOINT", "%v", err)
	}
	// OTEL_RESOURCE_ATTRIBUTES may add attributes (deployment, region);
	// service.name stays plantstore.
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost(),
		resource.WithAttributes(semconv.ServiceName(serviceName)))
	if err != nil {
		return nil, fmt.Errorf("otel resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		// A request whose caller sampled it (traceparent) is traced;
		// otherwise the ratio decides.
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.OTelSampleRatio))),
	)
	return &tracing{provider: tp}, nil
}

// shutdown exports the spans still queued, within ctx.
func (t *tracing) shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}
