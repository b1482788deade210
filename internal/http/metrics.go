package http

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/internal/http/oapi"
)

type metrics struct {
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	rateLimited prometheus.Counter
	// resends counts the deliveries re-queued by resend and recover.
	resends *prometheus.CounterVec

	// The route labels' metric children, made once (routeStats); the
	// operational paths' are in Server.route's table.
	byOp   map[oapi.OperationName]*routeStats // by operation of the contract
	routes sync.Map                           // label -> *routeStats, every label seen
}

// newMetrics makes the metrics, with the route labels of the contract's
// operations (ops) made beforehand.
func newMetrics(reg prometheus.Registerer, ops map[oapi.OperationName]operation) *metrics {
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
		resends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plantstore_webhook_resends_total",
			Help: "Webhook deliveries re-queued by hand, by operation (resend, recover).",
		}, []string{"operation"}),
		byOp: make(map[oapi.OperationName]*routeStats, len(ops)),
	}
	m.resends.WithLabelValues("resend")
	m.resends.WithLabelValues("recover")
	reg.MustRegister(m.requests, m.duration, m.rateLimited, m.resends)
	for name, op := range ops {
		m.byOp[name] = m.route(op.route)
	}
	return m
}

// route returns the routeStats of a route label, made on first use.
func (m *metrics) route(label string) *routeStats {
	if rs, ok := m.routes.Load(label); ok {
		return rs.(*routeStats)
	}
	rs, _ := m.routes.LoadOrStore(label, &routeStats{m: m, label: label})
	return rs.(*routeStats)
}

// methodLabels are the method label values; any other method is "OTHER".
var methodLabels = [...]string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions, "OTHER",
}

// methodIndex is the index of m's label in methodLabels.
func methodIndex(m string) int {
	switch m {
	case http.MethodGet:
		return 0
	case http.MethodHead:
		return 1
	case http.MethodPost:
		return 2
	case http.MethodPut:
		return 3
	case http.MethodPatch:
		return 4
	case http.MethodDelete:
		return 5
	case http.MethodOptions:
		return 6
	}
	return 7
}

// routeStats holds the metric children of one route label: per method the
// duration histogram's and, per status code, the request counter's. They
// are made once, so that recording a request neither hashes label values
// nor takes the vectors' locks.
type routeStats struct {
	m       *metrics
	label   string
	mu      sync.Mutex // held while a child is made
	methods [len(methodLabels)]atomic.Pointer[methodStats]
}

// methodStats is one route and method's children.
type methodStats struct {
	duration prometheus.Observer
	codes    atomic.Pointer[[]codeCounter] // replaced (copied) when a code is added
}

// codeCounter is the request counter of one status code.
type codeCounter struct {
	code    int
	counter prometheus.Counter
}

// observe records one request answered with status after d.
func (rs *routeStats) observe(method string, status int, d time.Duration) {
	i := methodIndex(method)
	ms := rs.methods[i].Load()
	if ms == nil {
		ms = rs.newMethod(i)
	}
	ms.duration.Observe(d.Seconds())
	if codes := ms.codes.Load(); codes != nil {
		for _, c := range *codes {
			if c.code == status {
				c.counter.Inc()
				return
			}
		}
	}
	rs.newCode(ms, i, status).Inc()
}

func (rs *routeStats) newMethod(i int) *methodStats {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if ms := rs.methods[i].Load(); ms != nil {
		return ms
	}
	ms := &methodStats{duration: rs.m.duration.WithLabelValues(rs.label, methodLabels[i])}
	rs.methods[i].Store(ms)
	return ms
}

func (rs *routeStats) newCode(ms *methodStats, i, status int) prometheus.Counter {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var codes []codeCounter
	if p := ms.codes.Load(); p != nil {
		codes = *p
	}
	for _, c := range codes {
		if c.code == status {
			return c.counter
		}
	}
	c := rs.m.requests.WithLabelValues(rs.label, methodLabels[i], strconv.Itoa(status))
	codes = append(codes[:len(codes):len(codes)], codeCounter{status, c})
	ms.codes.Store(&codes)
	return c
}

// statusRecorder remembers the status a handler wrote. As the header goes
// out it also settles
//   - Access-Control-Expose-Headers, which the generated encoders set on
//     every answer with headers in the contract: the CORS policy's list for
//     an allowed origin (expose, set by Server.cors), else none (cors.go);
//   - Cache-Control, when the answer sets none: cache, set once the
//     request's token is accepted (HandleBearerAuth);
//   - Connection: close when the request's body has not been read to its
//     end (see requestBody).
type statusRecorder struct {
	http.ResponseWriter
	status int
	expose []string     // Access-Control-Expose-Headers; nil: none
	cache  []string     // Cache-Control unless the answer has one; nil: none
	body   *requestBody // the request's body; nil: it has none
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		w.settleHeader()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
		w.settleHeader()
	}
	return w.ResponseWriter.Write(b)
}

// settleHeader sets or removes Access-Control-Expose-Headers (no
// allocation either way), sets Cache-Control when the answer has none, and
// Connection: close when the body is unread.
func (w *statusRecorder) settleHeader() {
	h := w.ResponseWriter.Header()
	if w.expose != nil {
		h["Access-Control-Expose-Headers"] = w.expose
	} else if _, ok := h["Access-Control-Expose-Headers"]; ok {
		delete(h, "Access-Control-Expose-Headers")
	}
	if w.cache != nil {
		if _, ok := h["Cache-Control"]; !ok {
			h["Cache-Control"] = w.cache
		}
	}
	if w.body != nil && !w.body.eof {
		h["Connection"] = connectionClose
		// What the client has sent of the body is still read (up to
		// 256 KiB) before the connection closes, so that closing does
		// not reset it under the answer; what it has not sent within
		// unreadBodyDrain is not waited for.
		http.NewResponseController(w.ResponseWriter).SetReadDeadline(time.Now().Add(unreadBodyDrain))
	}
}

// connectionClose is the Connection header's value of an answer whose
// request body is left unread (never modified).
var connectionClose = []string{"close"}

// unreadBodyDrain bounds how long a connection whose request body was left
// unread waits, after the answer, for the rest of that body.
const unreadBodyDrain = time.Second

// requestBody wraps a request's body to note when it has been read to its
// end. An answer written before that (a request refused before its body
// is read: 401, 403, 404, 405, 413, 415, 429...) says Connection: close,
// which makes net/http write it at once and then close the connection;
// without it net/http first reads what is left of the body (up to
// 256 KiB), which holds the answer back until the client has sent it all
// or ReadTimeout ends: a client that announces more than it sends would
// get no answer at all.
type requestBody struct {
	io.ReadCloser
	eof bool
}

func (b *requestBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// instrument counts and times every request by its route pattern (never the
// raw path, which would make unbounded label values) and logs one line per
// request. The log line never includes the Authorization header.
//
// Per request it makes one requestInfo (the context, the status recorder,
// the body reader and what the log line says) and one shallow copy of the
// request (for the context); the metric children are made once and the log
// line is only queued (accesslog.go).
func (s *Server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &requestInfo{Context: r.Context()}
		info.rec.ResponseWriter = w
		info.id = requestID(r.Header.Get("X-Request-Id"))
		info.idHeader[0] = info.id
		w.Header()["X-Request-Id"] = info.idHeader[:]
		req := r.WithContext(info)
		if r.Body != nil && r.Body != http.NoBody { // a body, of known or unknown (chunked) length
			info.reqBody.ReadCloser = r.Body
			req.Body = &info.reqBody
			info.rec.body = &info.reqBody
		}
		next.ServeHTTP(&info.rec, req)
		status := info.rec.status
		if status == 0 {
			// Nothing written: net/http writes a 200 now.
			info.rec.settleHeader()
			status = http.StatusOK
		}
		end := time.Now()
		d := end.Sub(start)
		rs := info.route
		if rs == nil {
			rs = s.metrics.route(s.routeLabel(r))
		}
		rs.observe(r.Method, status, d)
		if s.access.enabled(r.Context()) {
			s.access.log(&accessRecord{
				time:     end,
				duration: d,
				method:   r.Method,
				route:    rs.label,
				owner:    info.owner,
				id:       info.id,
				status:   status,
			})
		}
	})
}

// routeLabel routes r again to find its route label, for the requests
// whose route no layer has set (Server.route sets the operational paths',
// HandleBearerAuth the operations'): those that failed before
// authentication, for example without a token or on an unknown path.
func (s *Server) routeLabel(r *http.Request) string {
	if route, ok := s.api.FindPath(r.Method, r.URL); ok {
		return route.PathPattern()
	}
	return "unmatched"
}
