package http

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
	tokenCache  *prometheus.CounterVec
}

// NewRegistry returns a registry with the Go and process collectors, for
// Server.Registry and the store's metrics (CommitObserver).
func NewRegistry() *prometheus.Registry { return newRegistry() }

// CommitObserver registers the storage's group-commit metrics on reg and
// returns the function to give the store as its OnCommit hook.
func CommitObserver(reg prometheus.Registerer) func(writes int, took time.Duration) {
	writes := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "plantstore_store_batch_writes",
		Help:    "Writes per group commit (one transaction, one fsync).",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
	})
	took := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "plantstore_store_commit_seconds",
		Help:    "Time to apply and commit one group-commit batch.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
	})
	reg.MustRegister(writes, took)
	return func(n int, d time.Duration) {
		writes.Observe(float64(n))
		took.Observe(d.Seconds())
	}
}

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
	m.tokenCache = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plantstore_token_cache_total",
		Help: "Bearer token checks by token cache result (hit: no database lookup).",
	}, []string{"result"})
	reg.MustRegister(m.requests, m.duration, m.rateLimited, m.tokenCache)
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

// requestInfo collects what inner layers learn about a request for the
// request log line.
type requestInfo struct {
	id    string // the request id: the client's X-Request-Id or a generated one
	owner string
}

// maxRequestIDLen bounds a client's X-Request-Id; longer ones are replaced.
const maxRequestIDLen = 128

// requestID returns the client's X-Request-Id when it is 1 to 128 visible
// ASCII characters (safe in a header and a log line), else a new random id
// of 16 hex digits.
func requestID(client string) string {
	if len(client) > 0 && len(client) <= maxRequestIDLen {
		ok := true
		for i := 0; i < len(client); i++ {
			if c := client[i]; c < '!' || c > '~' {
				ok = false
				break
			}
		}
		if ok {
			return client
		}
	}
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// RequestID returns the id of the request ctx belongs to, or "".
func RequestID(ctx context.Context) string {
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		return info.id
	}
	return ""
}

type requestInfoKey struct{}

// setOwner records the authenticated owner for the request log.
func setOwner(ctx context.Context, owner string) {
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		info.owner = owner
	}
}
