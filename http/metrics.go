package http

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

type metrics struct {
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	rateLimited prometheus.Counter
}

// NewRegistry returns a registry with the Go and process collectors, for
// Server.Registry and the metrics of the storage and services
// (storemetrics.go).
func NewRegistry() *prometheus.Registry { return newRegistry() }

func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plantstore_http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "plantstore_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern and method.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method"}),
		rateLimited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "plantstore_rate_limited_total",
			Help: "Requests refused with 429 because their token's rate limit was spent.",
		}),
	}
	reg.MustRegister(m.requests, m.duration, m.rateLimited)
	return m
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// instrument counts and times every request by its route pattern (never the
// raw path, which would make unbounded label values) and logs one line per
// request. The log line never includes the Authorization header.
func (s *Server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		info := &requestInfo{id: requestID(r.Header.Get("X-Request-Id"))}
		w.Header().Set("X-Request-Id", info.id)
		r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info))
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		d := time.Since(start)
		route := s.routeLabel(r)
		method := r.Method
		if !knownMethod(method) {
			method = "OTHER"
		}
		s.metrics.requests.WithLabelValues(route, method, strconv.Itoa(rec.status)).Inc()
		s.metrics.duration.WithLabelValues(route, method).Observe(d.Seconds())
		s.logger().LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method),
			slog.String("route", route),
			slog.Int("status", rec.status),
			slog.Float64("duration_ms", float64(d.Microseconds())/1000),
			slog.String("owner", info.owner),
			slog.String("request_id", info.id),
		)
	})
}

func (s *Server) routeLabel(r *http.Request) string {
	switch r.URL.Path {
	case "/healthz", "/readyz", "/metrics", "/openapi.json", "/docs", "/docs/", "/docs/redoc.standalone.js":
		return r.URL.Path
	}
	if route, ok := s.api.FindRoute(r.Method, r.URL.Path); ok {
		return route.PathPattern()
	}
	return "unmatched"
}

func knownMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return true
	}
	return false
}
