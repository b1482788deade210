package http_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/slogbuf"
	"github.com/plantstore/plantstore/internal/sqlite"
)

// BenchmarkHandler drives the server's whole handler in-process (no
// network, no net/http server): the instrumentation, the routing, auth
// (a token cache hit), decoding, the service, a SQLite file with relaxed
// durability (so that ns/op shows CPU rather than fsync), encoding and the
// request log (as serve writes it, discarded). Requests and the ResponseWriter are
// reused, so allocs/op counts the server's allocations plus those of the
// harness, which sub-benchmark "harness" measures alone (a handler that
// does nothing).
func BenchmarkHandler(b *testing.B) {
	ts := MustOpenServer(b, func(s *TestServer) {
		s.Logger = slog.New(slogbuf.New(io.Discard, false, nil)) // as serve logs, discarded
		s.Service.TokenCacheTTL = 2 * time.Second                // the serve default
		s.Durability = sqlite.DurabilityRelaxed
	})
	h, err := ts.Server.Handler()
	if err != nil {
		b.Fatal(err)
	}
	auth := "Bearer " + ts.Token(b, "bench", plantstore.KnownScopes...)
	if resp := ts.Post(b, auth[len("Bearer "):], `{"id":1,"name":"Monstera deliciosa","tag":"tropical"}`); resp.Status != http.StatusOK {
		b.Fatalf("create plant 1: status %d: %s", resp.Status, resp.Body)
	}

	run := func(b *testing.B, h http.Handler, method, path string, body func(i int) []byte) {
		b.Helper()
		runWant(b, h, auth, http.StatusOK, method, path, body)
	}
	var buf []byte
	newPlant := func(i int) []byte {
		buf = append(buf[:0], `{"id":`...)
		buf = strconv.AppendInt(buf, int64(1000+i), 10)
		buf = append(buf, `,"name":"Monstera deliciosa","tag":"tropical"}`...)
		return buf
	}
	b.Run("POST_plants", func(b *testing.B) {
		// Every b.Run round creates new ids: continue after the last.
		off := 0
		run(b, h, http.MethodPost, "/plants", func(i int) []byte { off++; return newPlant(int(time.Now().UnixNano()%1e12) + off) })
	})
	b.Run("GET_plant", func(b *testing.B) {
		run(b, h, http.MethodGet, "/plants/1", nil)
	})
	// The error path of a body the generated decoder refuses: the 400
	// says what in it does not match the contract (one fault, several).
	for _, tt := range []struct{ name, body string }{
		{"POST_plants_refused_one", `{"id":"1","name":"Monstera deliciosa","tag":"tropical"}`},
		{"POST_plants_refused_four", `{"id":1.5,"name":"","tag":null,"color":"green","owner":{"name":"alice"}}`},
		{"PATCH_webhook_refused", `{"url":"not a uri","enabled":"yes","types":["plant.created","x"],"secret":"s"}`},
	} {
		method, path := http.MethodPost, "/plants"
		if tt.name == "PATCH_webhook_refused" {
			method, path = http.MethodPatch, "/webhooks/whk_0123456789abcdef"
		}
		b.Run(tt.name, func(b *testing.B) {
			runWant(b, h, auth, http.StatusBadRequest, method, path, func(int) []byte { return []byte(tt.body) })
		})
	}
	b.Run("harness", func(b *testing.B) {
		nop := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
		run(b, nop, http.MethodPost, "/plants", newPlant)
	})
}

// runWant sends method path (with body(i) as the i-th request's body, when
// body is not nil) to h until the benchmark ends, each answered want.
func runWant(b *testing.B, h http.Handler, auth string, want int, method, path string, body func(i int) []byte) {
	base, err := http.NewRequestWithContext(context.Background(), method, "http://plantstore"+path, nil)
	if err != nil {
		b.Fatal(err)
	}
	base.Header.Set("Authorization", auth)
	if body != nil {
		base.Header.Set("Content-Type", "application/json")
	}
	w := &benchWriter{header: http.Header{}}
	rb := &benchBody{}
	req := new(http.Request)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		*req = *base
		if body != nil {
			rb.reset(body(i))
			req.Body, req.ContentLength = rb, int64(len(rb.data))
		}
		w.reset()
		h.ServeHTTP(w, req)
		if w.status != want {
			b.Fatalf("%s %s: status %d, want %d", method, path, w.status, want)
		}
	}
}

// benchWriter is a reusable http.ResponseWriter that discards the body.
type benchWriter struct {
	header http.Header
	status int
	n      int
}

func (w *benchWriter) Header() http.Header { return w.header }

func (w *benchWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *benchWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(p)
	return len(p), nil
}

func (w *benchWriter) reset() {
	clear(w.header)
	w.status, w.n = 0, 0
}

// benchBody is a reusable request body.
type benchBody struct {
	data []byte
	off  int
}

func (b *benchBody) reset(data []byte) { b.data, b.off = data, 0 }

func (b *benchBody) Read(p []byte) (int, error) {
	if b.off >= len(b.data) {
		return 0, io.EOF
	}
	n := copy(p, b.data[b.off:])
	b.off += n
	return n, nil
}

func (b *benchBody) Close() error { return nil }
