package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	plantstorehttp "github.com/plantstore/plantstore/internal/http"
	plantstoreprometheus "github.com/plantstore/plantstore/internal/prometheus"
	"github.com/plantstore/plantstore/internal/service"
	"github.com/plantstore/plantstore/internal/sqlite"
)

// TestServer is a real server on 127.0.0.1 over the real services and a
// real SQLite file. Before it opens, a configure function may set any
// Server field (a mock service, a limit, a clock), Service (the services'
// configuration), Wrap (to wrap the row stores) or OpTimeout.
type TestServer struct {
	*plantstorehttp.Server
	DB       *sqlite.DB
	Services *service.Services
	URL      string

	// Service configures the services built over DB.
	Service service.Config
	// Wrap, if set, wraps DB's row stores under the services.
	Wrap func(db *sqlite.DB) service.Stores
	// OpTimeout is DB's (0: its default).
	OpTimeout time.Duration
	// Durability is DB's ("": full).
	Durability sqlite.Durability

	logs *syncBuffer
}

// syncBuffer is a bytes.Buffer safe for the server's concurrent logging.
// The server queues its request log lines: String first calls flush (the
// server's FlushLogs), so that it shows every line of the requests answered.
type syncBuffer struct {
	flush func()
	mu    sync.Mutex
	buf   bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	if b.flush != nil {
		b.flush()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// MustOpenServer starts a server; configure, if given, adjusts it before
// the database and the services are made and the server opens. Services a
// configure function set (mocks) are kept.
func MustOpenServer(tb testing.TB, configure ...func(*TestServer)) *TestServer {
	tb.Helper()
	ts := &TestServer{Server: plantstorehttp.NewServer(), logs: &syncBuffer{}}
	ts.Addr = "127.0.0.1:0"
	ts.MetricsAddr = "127.0.0.1:0"
	ts.Logger = slog.New(slog.NewJSONHandler(ts.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, c := range configure {
		c(ts)
	}
	db := sqlite.NewDB(filepath.Join(tb.TempDir(), "plantstore.db"))
	db.OpTimeout = ts.OpTimeout
	db.TracerProvider = ts.TracerProvider // the server's: batch spans link to request spans
	if ts.Durability != "" {
		db.Durability = ts.Durability
	}
	if err := db.Open(context.Background()); err != nil {
		tb.Fatal(err)
	}
	if _, err := db.Migrate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	ts.DB = db
	if ts.Registry == nil {
		ts.Registry = plantstoreprometheus.NewRegistry()
	}
	if ts.Service.OnTokenCache == nil {
		ts.Service.OnTokenCache = plantstoreprometheus.TokenCacheObserver(ts.Registry) // as serve wires it
	}
	if ts.Service.OnEvent == nil {
		ts.Service.OnEvent = plantstoreprometheus.EventObserver(ts.Registry) // as serve wires it
	}
	var backend service.Stores = db
	if ts.Wrap != nil {
		backend = ts.Wrap(db)
	}
	ts.Services = service.New(backend, ts.Service)
	if ts.PlantService == nil {
		ts.PlantService = ts.Services.Plants
	}
	if ts.TokenService == nil {
		ts.TokenService = ts.Services.Tokens
	}
	if ts.WebhookService == nil {
		ts.WebhookService = ts.Services.Webhooks
	}
	if ts.EventService == nil {
		ts.EventService = ts.Services.Events
	}
	if ts.EventNotifier == nil {
		ts.EventNotifier = ts.Services.Notifier
	}
	if ts.Storage == nil {
		ts.Storage = db
	}
	if err := ts.Open(); err != nil {
		tb.Fatal(err)
	}
	ts.URL = ts.Server.URL()
	ts.logs.flush = ts.FlushLogs
	tb.Cleanup(func() {
		// A connection the client dialled but never used stays "new" on the
		// server, and Shutdown waits 5 s before it counts as idle: close
		// the client's idle connections first.
		http.DefaultClient.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := ts.Close(ctx); err != nil {
			tb.Errorf("close server: %v", err)
		}
		if err := db.Close(); err != nil {
			tb.Errorf("close db: %v", err)
		}
	})
	return ts
}

// Token issues a token for owner with scopes (default: read and write).
func (ts *TestServer) Token(tb testing.TB, owner string, scopes ...string) string {
	tb.Helper()
	_, secret, err := ts.Services.Tokens.CreateToken(context.Background(), plantstore.TokenRequest{Owner: owner, Scopes: scopes})
	if err != nil {
		tb.Fatal(err)
	}
	return secret
}

// Response is an answer with its body read.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Request describes one HTTP request of a test.
type Request struct {
	Method string
	Path   string
	Token  string // sent as "Bearer <Token>" unless empty
	Body   string
	Header map[string]string // set after the defaults; "" deletes
}

// Do sends r and reads the whole answer.
func (ts *TestServer) Do(tb testing.TB, r Request) *Response {
	tb.Helper()
	var body io.Reader
	if r.Body != "" {
		body = strings.NewReader(r.Body)
	}
	req, err := http.NewRequest(r.Method, ts.URL+r.Path, body)
	if err != nil {
		tb.Fatal(err)
	}
	if r.Body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	for k, v := range r.Header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

// Post creates a plant from a raw JSON body.
func (ts *TestServer) Post(tb testing.TB, token, body string) *Response {
	tb.Helper()
	return ts.Do(tb, Request{Method: "POST", Path: "/plants", Token: token, Body: body})
}

// Get sends GET path.
func (ts *TestServer) Get(tb testing.TB, token, path string) *Response {
	tb.Helper()
	return ts.Do(tb, Request{Method: "GET", Path: path, Token: token})
}

// Metrics scrapes GET /metrics on the metrics listener (MetricsAddr).
func (ts *TestServer) Metrics(tb testing.TB) *Response {
	tb.Helper()
	if ts.MetricsURL() == "" {
		tb.Fatal("the server has no metrics listener")
	}
	resp, err := http.Get(ts.MetricsURL() + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

// apiError is the contract's Error body.
type apiError struct {
	Error   *int32  `json:"error"`
	Message *string `json:"message"`
}

// mustError checks that resp is an Error with the status and code, in the
// contract's shape and content type.
func mustError(tb testing.TB, resp *Response, status int, code int32) {
	tb.Helper()
	if resp.Status != status {
		tb.Fatalf("status = %d, want %d (body %s)", resp.Status, status, resp.Body)
	}
	if got, want := resp.Header.Get("Content-Type"), "application/json"; !strings.HasPrefix(got, want) {
		tb.Fatalf("Content-Type = %q, want %s", got, want)
	}
	var e apiError
	dec := json.NewDecoder(bytes.NewReader(resp.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		tb.Fatalf("body %s is not an Error: %v", resp.Body, err)
	}
	if e.Error == nil || e.Message == nil {
		tb.Fatalf("body %s lacks error or message", resp.Body)
	}
	if got, want := *e.Error, code; got != want {
		tb.Fatalf("error = %d, want %d (message %q)", got, want, *e.Message)
	}
	if int(*e.Error/100) != resp.Status {
		tb.Fatalf("error %d does not match status %d", *e.Error, resp.Status)
	}
	if strings.TrimSpace(*e.Message) == "" {
		tb.Fatalf("empty message")
	}
}

func mustPlants(tb testing.TB, resp *Response) []map[string]any {
	tb.Helper()
	if resp.Status != http.StatusOK {
		tb.Fatalf("status = %d, want 200 (body %s)", resp.Status, resp.Body)
	}
	var out []map[string]any
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		tb.Fatalf("body %s: %v", resp.Body, err)
	}
	if out == nil {
		tb.Fatalf("body %s is not an array", resp.Body)
	}
	return out
}

// fixedNow is the services' clock under fixedClock: every plant a test
// creates or changes is at this instant, which answers show as fixedNowJSON
// (microseconds, UTC).
var fixedNow = time.Date(2026, 11, 2, 10, 0, 0, 123456789, time.FixedZone("CET", 3600))

const fixedNowJSON = "2026-11-02T09:00:00.123456Z"

// fixedClock is a MustOpenServer configure function: the services' clock
// stands still at fixedNow.
func fixedClock(ts *TestServer) { ts.Service.Now = func() time.Time { return fixedNow } }

// atFixedNow returns the answer for the plant obj (a JSON object without
// times, such as `{"id":1,"name":"Fern"}`) created under fixedClock.
func atFixedNow(obj string) string { return timed(obj, fixedNowJSON, fixedNowJSON) }

// timed returns the answer for the plant obj (a JSON object without times)
// created and last changed at the given times, as the server writes them.
func timed(obj, createdAt, updatedAt string) string {
	return strings.TrimSuffix(obj, "}") + `,"created_at":"` + createdAt + `","updated_at":"` + updatedAt + `"}`
}

// testClock is a services' clock (configure it with its configure method)
// that moves only when the test sets it.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) configure(ts *TestServer) { ts.Service.Now = c.Now }

// Now returns the time last set.
func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set sets the clock to at, an RFC 3339 time.
func (c *testClock) Set(tb testing.TB, at string) {
	tb.Helper()
	now, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		tb.Fatal(err)
	}
	c.mu.Lock()
	c.now = now
	c.mu.Unlock()
}

// apiTimeRE is a time as plant answers carry it: RFC 3339, UTC, exactly
// six fraction digits.
var apiTimeRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

// checkTimes checks that createdAt and updatedAt, a plant's times as an
// answer carries them, are well-formed and updatedAt is not before
// createdAt.
func checkTimes(tb testing.TB, createdAt, updatedAt string) {
	tb.Helper()
	if !apiTimeRE.MatchString(createdAt) || !apiTimeRE.MatchString(updatedAt) {
		tb.Fatalf("created_at %q, updated_at %q: want RFC 3339 UTC times with 6 fraction digits", createdAt, updatedAt)
	}
	// The fixed width makes string order time order.
	if updatedAt < createdAt {
		tb.Fatalf("updated_at %s is before created_at %s", updatedAt, createdAt)
	}
}

// plantTimesRE matches the times of a plant answer, as the server writes
// them: after the plant's other members, created_at then updated_at.
var plantTimesRE = regexp.MustCompile(`,"created_at":("[^"]*"),"updated_at":("[^"]*")}`)

// withoutTimes checks the times of each plant in body (a plant or an array
// of plants, as the server writes them) with checkTimes and returns body
// without them, for tests that do not control the clock.
func withoutTimes(tb testing.TB, body []byte) string {
	tb.Helper()
	var objects int
	out := plantTimesRE.ReplaceAllStringFunc(string(body), func(m string) string {
		sub := plantTimesRE.FindStringSubmatch(m)
		var createdAt, updatedAt string
		if json.Unmarshal([]byte(sub[1]), &createdAt) != nil || json.Unmarshal([]byte(sub[2]), &updatedAt) != nil {
			tb.Fatalf("times %s in %s", m, body)
		}
		checkTimes(tb, createdAt, updatedAt)
		objects++
		return "}"
	})
	if want := strings.Count(string(body), `"id":`); objects != want {
		tb.Fatalf("%d plants with times in %s, want %d", objects, body, want)
	}
	return out
}

// skipUnlessCI skips a test whose precondition this machine lacks, but fails
// it in CI (CI=true), where .ci/run provides every precondition: a skipped
// test proves nothing there.
func skipUnlessCI(t *testing.T, reason string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI must run this test)", reason)
	}
	t.Skip(reason)
}
