// Command baseline is the ceiling every benchmark figure is divided by: the
// plantstore API's plant routes served by net/http and encoding/json behind a
// bearer check, with no storage at all. It does what any Go JSON server does
// per request (route, check the token, decode and validate the body, encode
// the answer) and nothing more, so plantstore's ratio to it shows what its
// storage, validation, logging and metrics cost.
//
//	baseline --addr 127.0.0.1:8081 --token SECRET
//
// Routes: POST /plants, GET /plants/{id}, GET /plants?limit=N (a synthetic
// page of N plants, built per request), GET /healthz (no token), and
// GET /debug/mallocs (no token): the process's cumulative heap allocation
// count, which bench/run.sh reads before and after each wrk run for its
// allocs/req column (plantstore's /metrics gives the same count as
// go_memstats_mallocs_total).
package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

const maxBodyBytes = 64 << 10

// plant is the answer's shape, as in plantstore's contract.
type plant struct {
	ID   int64   `json:"id"`
	Name string  `json:"name"`
	Tag  *string `json:"tag,omitempty"`
}

// newPlant is the request body; pointers tell a missing field from a zero.
type newPlant struct {
	ID   *int64  `json:"id"`
	Name *string `json:"name"`
	Tag  *string `json:"tag"`
}

type server struct {
	token []byte
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "address to listen on")
	token := flag.String("token", "", "bearer token every plant request must carry (required)")
	flag.Parse()
	if *token == "" {
		fmt.Fprintln(os.Stderr, "baseline: --token is required")
		os.Exit(2)
	}
	s := &server{token: []byte(*token)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /plants", s.auth(s.addPlant))
	mux.HandleFunc("GET /plants/{id}", s.auth(s.getPlant))
	mux.HandleFunc("GET /plants", s.auth(s.listPlants))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /debug/mallocs", handleMallocs)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("baseline: listen: %v", err)
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
	fmt.Fprintf(os.Stderr, "baseline: serving on http://%s\n", ln.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("baseline: serve: %v", err)
	}
}

// auth checks "Authorization: Bearer <token>" in constant time.
func (s *server) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		const prefix = "Bearer "
		if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) ||
			subtle.ConstantTimeCompare([]byte(h[len(prefix):]), s.token) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="baseline"`)
			writeError(w, http.StatusUnauthorized, 40102, "the bearer token is not valid")
			return
		}
		next(w, r)
	}
}

func (s *server) addPlant(w http.ResponseWriter, r *http.Request) {
	var req newPlant
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, 40001, "request body is not valid JSON")
		return
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, 40001, "data after the JSON value")
		return
	}
	if req.ID == nil || req.Name == nil {
		writeError(w, http.StatusBadRequest, 40002, "invalid NewPlant: id and name are required")
		return
	}
	if n := utf8.RuneCountInString(*req.Name); n < 1 || n > 256 {
		writeError(w, http.StatusBadRequest, 40002, "invalid NewPlant: name must have 1 to 256 characters")
		return
	}
	writeJSON(w, http.StatusOK, plant{ID: *req.ID, Name: *req.Name, Tag: req.Tag})
}

func (s *server) getPlant(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, 40004, "path id is not an int64")
		return
	}
	tag := "bench"
	writeJSON(w, http.StatusOK, plant{ID: id, Name: "plant " + strconv.FormatInt(id, 10), Tag: &tag})
}

func (s *server) listPlants(w http.ResponseWriter, r *http.Request) {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, http.StatusBadRequest, 40003, "limit must be from 1 to 1000")
			return
		}
		limit = n
	}
	tag := "bench"
	page := make([]plant, limit)
	for i := range page {
		id := int64(i + 1)
		page[i] = plant{ID: id, Name: "plant " + strconv.FormatInt(id, 10), Tag: &tag}
	}
	writeJSON(w, http.StatusOK, page)
}

// handleMallocs answers the heap allocations since the process started, as
// a decimal number: runtime/metrics' /gc/heap/allocs:objects plus
// /gc/heap/tiny/allocs:objects, the sum runtime.MemStats.Mallocs (so
// testing's allocs/op) and Prometheus's go_memstats_mallocs_total report,
// read without stopping the world.
func handleMallocs(w http.ResponseWriter, _ *http.Request) {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/tiny/allocs:objects"}}
	metrics.Read(s)
	var n uint64
	for _, v := range s {
		if v.Value.Kind() == metrics.KindUint64 {
			n += v.Value.Uint64()
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintf(w, "%d\n", n)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, struct {
		Error   int    `json:"error"`
		Message string `json:"message"`
	}{code, msg})
}
