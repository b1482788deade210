// Package http is the service's HTTP transport: the generated OpenAPI server
// (package oapi) with the handlers, bearer authentication, the one error
// mapper, and the operational endpoints (/healthz, /readyz, /openapi.json,
// /docs, /favicon.ico); /metrics has a listener of its own (MetricsAddr); the browser
// console (/console) when one is set.
package http

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/apischema"
	"github.com/plantstore/plantstore/internal/http/oapi"
	"github.com/plantstore/plantstore/internal/outage"
)

// Server timeouts and limits. Every http.Server timeout is set, so a slow or
// idle client cannot hold a connection forever.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 30 * time.Second
	WriteTimeout      = 30 * time.Second
	IdleTimeout       = 120 * time.Second
	MaxHeaderBytes    = 16 << 10 // larger headers get 431
)

// ErrMetricsListen is wrapped by the error of Open when it cannot listen on
// MetricsAddr (the API listener is closed again).
var ErrMetricsListen = errors.New("http: listen for metrics")

// Pinger reports whether the storage answers.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Server serves the API over HTTP. Set the fields, then call Open.
type Server struct {
	// Addr is the address to listen on, e.g. ":8080" or "127.0.0.1:0".
	Addr string

	// The services the handlers call (package service implements them once
	// over any backend; package mock fakes them), and the storage /readyz
	// checks.
	PlantService   plantstore.PlantService
	TokenService   plantstore.TokenService
	WebhookService plantstore.WebhookService
	EventService   plantstore.EventService // GET /events and the event stream
	Storage        Pinger

	// EventNotifier wakes the event streams (GET /events/stream) when this
	// process commits events; nil: they only poll. EventStreamHeartbeat (an
	// idle stream's comment line, and how often a stream's token is
	// authenticated again, busy or not), EventStreamPoll (how often a stream
	// reads the store for events committed elsewhere, another replica's),
	// EventStreamMax (open streams per server; a quarter of them per owner)
	// and EventStreamMaxAge (how long a stream may last; the client then
	// reconnects with Last-Event-ID): zero means the Default* constant
	// (events_stream.go).
	EventNotifier        plantstore.EventNotifier
	EventStreamHeartbeat time.Duration
	EventStreamPoll      time.Duration
	EventStreamMax       int
	EventStreamMaxAge    time.Duration
	// onStreamWait, if set (tests), is called each time a stream waits
	// for events, with the capacity of the buffer it keeps meanwhile.
	onStreamWait func(retained int)
	streams      streamTable
	feeds        feedTable

	// Logger receives error details and one line per request; nil:
	// slog.Default(). The request lines are queued and written in batches
	// off the requests' goroutines (accesslog.go), so they reach the
	// handler within LogFlushInterval, at FlushLogs, or at Close; with a
	// handler that takes preformatted JSON lines (slogbuf.Handler, what
	// serve uses) the server formats them itself.
	Logger *slog.Logger
	// Now returns the current time; tests replace it.
	Now func() time.Time

	// RateLimit is each owner's sustained request rate (per second), all
	// its tokens together, and RateBurst its bucket size; a zero RateLimit
	// turns limiting off.
	RateLimit rate.Limit
	RateBurst int

	// BatchMax is the most plants POST /plants/batch takes in one request
	// (0: DefaultBatchMax); its body may then be BatchBodyBytes(BatchMax).
	BatchMax int

	// JWT, if set, verifies bearer values shaped like a JWT (three base64url
	// segments: plantstore.LooksLikeJWT) instead of looking them up as
	// opaque tokens, which keep working alongside; serve gives an
	// oidc.Verifier.
	JWT JWTVerifier

	// AuthFailureLimit is how many failed authentications (401s) per minute
	// each client IP may cause, with AuthFailureBurst at once (0: 20); past
	// it, requests from that IP whose token is missing or bad get 429 (a
	// valid token still works). Zero turns the limit off. See authlimit.go.
	AuthFailureLimit float64
	AuthFailureBurst int

	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are the
	// http.Server's; zero means the package constant of the same name.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration

	// Registry receives the server's metrics and is served at /metrics on
	// MetricsAddr; nil: a new registry of the server's metrics alone. serve
	// gives the process's (NewRegistry of package plantstore/prometheus:
	// the Go and process collectors, the storage's, services' and
	// dispatcher's metrics).
	Registry *prometheus.Registry

	// MetricsAddr, if set, is the address of a listener of its own that
	// serves GET /metrics (Prometheus text format, no token) and nothing
	// else, with the same timeouts as the API's; Open listens on it and
	// Close stops it. The API listener answers /metrics with 404, so that
	// publishing the API does not publish the metrics. Empty: no metrics
	// listener (Registry is filled all the same).
	MetricsAddr string

	// PublicURL, if set, is the servers entry of the document at
	// /openapi.json (an absolute http(s) URL, see CheckPublicURL); empty:
	// the document's relative "/", the server that served it.
	PublicURL  string
	openapiDoc []byte                           // /openapi.json with PublicURL; nil: api.JSON
	ops        map[oapi.OperationName]operation // the contract's operations, read from it

	// CORSOrigins lists the browser origins (scheme://host[:port], or "*"
	// alone) whose pages may call the API; empty: no CORS header at all.
	// See cors.go and CheckCORSOrigins.
	CORSOrigins []string

	// TracerProvider, if set, makes an OpenTelemetry server span of every
	// request (tracing.go); nil: no tracing, at no cost.
	TracerProvider trace.TracerProvider

	// Console, if set, answers /console and every path under /console/ (the
	// browser console, package console, which sets its own security
	// headers); nil: those paths are the API's 404. Its answers never carry
	// CORS headers, whatever CORSOrigins says: the console is same-origin
	// only.
	Console http.Handler

	opsAllow      map[string]string // the operational paths' Allow values, for CORS preflights
	readyFailures *outage.Log       // /readyz probes that found the storage failing

	ln            net.Listener
	server        *http.Server
	metricsLn     net.Listener // nil: no metrics listener
	metricsServer *http.Server
	api           *oapi.Server
	handler       http.Handler
	metrics       *metrics
	access        *accessLog

	limiters  limiterTable // each owner's request bucket, by owner
	authFails authFailures

	// draining is set by Close: every answer then says Connection: close.
	draining atomic.Bool
	connsMu  sync.Mutex
	conns    map[net.Conn]http.ConnState // open connections and their state
	// undrained, from Close on, holds the connections open when draining
	// began that have neither closed nor started a request since (whose
	// answer says Connection: close).
	undrained map[net.Conn]bool
}

// NewServer returns a Server with defaults.
func NewServer() *Server {
	return &Server{Now: time.Now}
}

// Handler builds (once) and returns the server's root handler.
func (s *Server) Handler() (http.Handler, error) {
	if s.handler != nil {
		return s.handler, nil
	}
	if s.PlantService == nil || s.TokenService == nil || s.WebhookService == nil || s.Storage == nil {
		return nil, errors.New("http: PlantService, TokenService, WebhookService and Storage are required")
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Registry == nil {
		s.Registry = prometheus.NewRegistry()
	}
	if s.PublicURL != "" {
		doc, err := publicDocument(s.PublicURL)
		if err != nil {
			return nil, err
		}
		s.openapiDoc = doc
	}
	h := &handler{s: s}
	api, err := oapi.NewServer(h, h,
		oapi.WithErrorHandler(s.ogenError),
		oapi.WithNotFound(s.notFound),
		oapi.WithMethodNotAllowed(s.methodNotAllowed),
	)
	if err != nil {
		return nil, fmt.Errorf("http: api server: %w", err)
	}
	s.api = api
	ops, err := readOperations(api)
	if err != nil {
		return nil, err
	}
	s.ops = ops
	if err := apischema.Load(); err != nil {
		return nil, err
	}
	s.metrics = newMetrics(s.Registry, ops)
	s.access = newAccessLog(s.logger().Handler())
	s.authFails.out = newAuthFailureMetric(s.Registry)
	s.streams.init(s.Registry)
	s.readyFailures = outage.New(s.logger(), slog.LevelWarn, "readyz: storage does not answer")
	cors, err := newCORSPolicy(s.CORSOrigins)
	if err != nil {
		return nil, fmt.Errorf("http: %w", err)
	}
	next := s.route()
	if cors != nil {
		next = s.cors(cors, next) // preflights answered before auth and the 405s
	}
	next = s.recoverPanics(next)
	if s.TracerProvider != nil {
		next = s.traceRequests(next)
	}
	s.handler = s.instrument(next)
	return s.handler, nil
}

// Open starts listening on Addr and serves in the background. Listening is
// synchronous, so Addr ":0" works and URL tells the port.
func (s *Server) Open() error {
	h, err := s.Handler()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("http: listen: %w", err)
	}
	if s.MetricsAddr != "" {
		mln, err := net.Listen("tcp", s.MetricsAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("%w: %w", ErrMetricsListen, err)
		}
		s.metricsLn = mln
		s.metricsServer = s.newHTTPServer(s.metricsHandler())
	}
	s.ln = &onceCloseListener{Listener: ln}
	s.conns = make(map[net.Conn]http.ConnState)
	s.server = s.newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	}))
	s.server.ConnState = s.trackConn
	go func() {
		if err := s.server.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) && !s.draining.Load() {
			s.logger().Error("http: serve", "err", err)
		}
	}()
	if s.metricsServer != nil {
		go func() {
			if err := s.metricsServer.Serve(s.metricsLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.logger().Error("http: serve metrics", "err", err)
			}
		}()
	}
	return nil
}

// newHTTPServer returns an http.Server of h with every timeout set (the
// API's and the metrics listener's alike).
func (s *Server) newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: orDefault(s.ReadHeaderTimeout, ReadHeaderTimeout),
		ReadTimeout:       orDefault(s.ReadTimeout, ReadTimeout),
		WriteTimeout:      orDefault(s.WriteTimeout, WriteTimeout),
		IdleTimeout:       orDefault(s.IdleTimeout, IdleTimeout),
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.logger().Handler(), slog.LevelWarn),
	}
}

// orDefault returns d, or def when d is zero.
func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// URL returns the base URL the server listens on, with a loopback host
// when it listens on all interfaces.
func (s *Server) URL() string {
	return baseURL(s.ln.Addr().(*net.TCPAddr))
}

// MetricsURL returns the base URL of the metrics listener (GET
// MetricsURL()+"/metrics"), with a loopback host when it listens on all
// interfaces, or "" when there is none (MetricsAddr empty).
func (s *Server) MetricsURL() string {
	if s.metricsLn == nil {
		return ""
	}
	return baseURL(s.metricsLn.Addr().(*net.TCPAddr))
}

// baseURL is http://host:port of addr, with a loopback host for an
// unspecified address.
func baseURL(addr *net.TCPAddr) string {
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, fmt.Sprint(addr.Port))
}

// drainIdle bounds how long Close waits for idle keep-alive connections to
// carry one more request (answered with Connection: close).
const drainIdle = 500 * time.Millisecond

// Close stops accepting connections and waits for in-flight requests until
// ctx ends.
//
// http.Server.Shutdown alone closes keep-alive connections that are idle
// between two requests, and a client may be sending its next request on one
// at that moment: it sees an EOF or a reset for a request it cannot know was
// not processed. So Close first stops accepting, answers every request with
// Connection: close, and waits (at most drainIdle) until every connection
// has closed or started a request since, so that busy clients learn to
// close theirs; then Shutdown. The metrics listener stops last, so that a
// scrape during the drain still answers.
func (s *Server) Close(ctx context.Context) error {
	if s.server == nil {
		return nil
	}
	s.draining.Store(true)
	s.streams.close() // event streams end now: Shutdown would wait for them
	s.ln.Close()      // new connections are refused; Serve returns, open ones go on
	s.connsMu.Lock()
	s.undrained = make(map[net.Conn]bool, len(s.conns))
	for c := range s.conns {
		s.undrained[c] = true
	}
	s.connsMu.Unlock()
	deadline := time.Now().Add(drainIdle)
	for s.undrainedConns() > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	err := s.server.Shutdown(ctx)
	if s.metricsServer != nil {
		if merr := s.metricsServer.Shutdown(ctx); merr != nil {
			s.metricsServer.Close()
			err = errors.Join(err, merr)
		}
	}
	// The requests have been answered (or ctx ended): write their log
	// lines; a request still running logs its line at once when it ends.
	s.access.close()
	s.flushLogger()
	return err
}

// FlushLogs writes out the request log lines queued so far and, when the
// Logger's handler has a Flush method (slogbuf.Handler), flushes it. Lines are
// written without it too, within LogFlushInterval (see accesslog.go).
func (s *Server) FlushLogs() {
	if s.access != nil {
		s.access.flush()
	}
	s.flushLogger()
}

// flushLogger flushes the Logger's handler when it has a Flush method.
func (s *Server) flushLogger() {
	if f, ok := s.logger().Handler().(interface{ Flush() error }); ok {
		f.Flush()
	}
}

// trackConn is the http.Server's ConnState hook.
func (s *Server) trackConn(c net.Conn, state http.ConnState) {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	if state == http.StateActive || state == http.StateClosed || state == http.StateHijacked {
		delete(s.undrained, c) // a request now is answered with Connection: close
	}
	if state == http.StateClosed || state == http.StateHijacked {
		delete(s.conns, c)
		return
	}
	s.conns[c] = state
}

// undrainedConns counts the connections Close still waits for.
func (s *Server) undrainedConns() int {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	return len(s.undrained)
}

// onceCloseListener lets Close stop accepting before Shutdown closes the
// listener again (a second Close is a no-op, not an error).
type onceCloseListener struct {
	net.Listener
	once sync.Once
	err  error
}

func (l *onceCloseListener) Close() error {
	l.once.Do(func() { l.err = l.Listener.Close() })
	return l.err
}

// route sends the operational endpoints to their handlers and everything
// else to the generated API server, which answers 404/405 for what the
// contract does not have, once it has refused a request with more than one
// Authorization or Last-Event-ID header (400 40005) or a query parameter
// given twice (400 40002).
func (s *Server) route() http.Handler {
	type route struct {
		h     http.HandlerFunc
		allow string
		stats *routeStats // each path is its own route label
	}
	ops := map[string]*route{
		"/healthz":                  {h: s.handleHealthz, allow: "GET, HEAD"},
		"/readyz":                   {h: s.handleReadyz, allow: "GET, HEAD"},
		"/openapi.json":             {h: s.handleOpenAPI, allow: "GET, HEAD"},
		"/docs":                     {h: s.handleDocs, allow: "GET, HEAD"},
		"/docs/":                    {h: s.handleDocs, allow: "GET, HEAD"},
		"/docs/docs.js":             {h: s.handleDocsInit, allow: "GET, HEAD"},
		"/docs/redoc.standalone.js": {h: s.handleDocsScript, allow: "GET, HEAD"},
		redocLogoPath:               {h: s.handleDocsLogo, allow: "GET, HEAD"},
		"/favicon.ico":              {h: s.handleFavicon, allow: "GET, HEAD"},
	}
	s.opsAllow = make(map[string]string, len(ops))
	for path, rt := range ops {
		rt.stats = s.metrics.route(path)
		s.opsAllow[path] = rt.allow
	}
	var consoleStats *routeStats
	if s.Console != nil {
		consoleStats = s.metrics.route(consolePrefix) // one label for every console path
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Console != nil && isConsolePath(r.URL.Path) {
			if info := requestInfoFrom(r.Context()); info != nil {
				info.route = consoleStats
			}
			s.Console.ServeHTTP(w, r)
			return
		}
		if rt, ok := ops[r.URL.Path]; ok {
			if info := requestInfoFrom(r.Context()); info != nil {
				info.route = rt.stats
			}
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				s.methodNotAllowed(w, r, rt.allow)
				return
			}
			rt.h(w, r)
			return
		}
		// Two Authorization headers are ambiguous (the generated code would
		// read the first, a proxy may read the last), and so are two
		// Last-Event-ID headers (where the event stream resumes): refused
		// before authentication. The ops paths authenticate nobody and
		// ignore them.
		for _, h := range singleHeaders {
			if len(r.Header[h.key]) > 1 {
				s.writeError(w, r, newError(plantstore.CodeInvalidHeader, "more than one %s header: send one", h.name))
				return
			}
		}
		// A query parameter given twice is ambiguous as a duplicate JSON key
		// is (the generated decoder would take the first): 400 40002.
		if name, ok := repeatedParam(r.URL.RawQuery, listParams[r.URL.Path]); ok {
			s.writeError(w, r, newError(plantstore.CodeInvalidBody, "invalid query parameter %q: given more than once: send it once", name))
			return
		}
		// If-Match and If-None-Match sent as several field lines are one
		// list (RFC 9110 §5.3); the generated decoder would read the
		// first line only, and a line with junk after it must spoil the
		// whole list (plantstore.MatchETag).
		for _, name := range [...]string{"If-Match", "If-None-Match", "Prefer"} {
			if v := r.Header[name]; len(v) > 1 {
				r.Header[name] = []string{strings.Join(v, ", ")}
			}
		}
		if r.URL.Path == "/plants/" && r.Method != http.MethodPost && r.Method != http.MethodOptions {
			// An empty id: the generated router, which has the static
			// route /plants/batch beside /plants/{id}, finds no route for
			// it; it is a bad id, as any that is not an int64.
			s.writeError(w, r, newError(plantstore.CodeInvalidPath, "invalid path parameter %q: %s", "id", apischema.Param("getPlant", "path", "id")))
			return
		}
		if r.Method == http.MethodPost || r.Method == http.MethodPatch {
			s.prepareBody(w, r)
			defer r.Body.(*checkedBody).release()
		}
		if r.Method == http.MethodGet && r.URL.Path == "/events" {
			w, r = withRawBody(w, r) // ListEvents renders its body itself (package eventjson)
		}
		s.api.ServeHTTP(w, r)
	})
}

// singleHeaders are the request headers the API reads that a request may
// send once only: their canonical keys (http.Header's) and names.
var singleHeaders = [...]struct{ key, name string }{
	{"Authorization", "Authorization"},
	{"Last-Event-Id", "Last-Event-ID"},
}

// consolePrefix is the path Server.Console is served under.
const consolePrefix = "/console"

// isConsolePath reports whether p is /console or under /console/.
func isConsolePath(p string) bool {
	return p == consolePrefix || strings.HasPrefix(p, consolePrefix+"/")
}

// recoverPanics turns a handler panic into a 500 with the contract's body.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.Error(w, r, fmt.Errorf("panic: %v", v))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// listParams are, per path, the query parameters the contract declares as
// lists (style form, explode): given once per value, so repeating them is
// not ambiguous.
var listParams = map[string][]string{
	"/plants": {"tag"},
}

// repeatedParam returns the first parameter name that the raw query gives
// more than once (names compared as decoded), lists aside. A query of one
// parameter costs nothing; a name that does not decode is left to the
// generated decoder.
func repeatedParam(rawQuery string, lists []string) (string, bool) {
	if strings.IndexByte(rawQuery, '&') < 0 {
		return "", false
	}
	seen := make(map[string]bool)
	for pair := range strings.SplitSeq(rawQuery, "&") {
		key, _, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(key)
		if err != nil || pair == "" {
			continue
		}
		if seen[name] && !slices.Contains(lists, name) {
			return name, true
		}
		seen[name] = true
	}
	return "", false
}
