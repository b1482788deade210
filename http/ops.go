package http

import (
	"bytes"
	"context"
	"embed"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/api"
)

// assets holds the API reference page and the Redoc bundle that renders it,
// so /docs works offline (no CDN).
//
//go:embed assets/docs.html assets/redoc.standalone.js
var assets embed.FS

// readyTimeout bounds the storage check of /readyz.
const readyTimeout = 2 * time.Second

var okBody = []byte(`{"status":"ok"}` + "\n")

// handleHealthz handles the "GET /healthz" route: the process is alive.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(okBody)
}

// handleReadyz handles the "GET /readyz" route: the storage can serve
// reads and writes now (Storage.Ping; docs/observability.md says what each
// backend checks).
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := s.Storage.Ping(ctx); err != nil {
		s.logger().WarnContext(r.Context(), "readyz: storage does not answer", "request_id", RequestID(r.Context()), "err", err)
		s.Error(w, r, plantstore.Errorf(plantstore.CodeStorageUnavailable, "storage is not available"))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(okBody)
}

// handleMetrics handles the "GET /metrics" route (Prometheus text format).
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	promhttp.HandlerFor(s.Registry, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

// handleOpenAPI handles the "GET /openapi.json" route: the contract.
func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	http.ServeContent(w, r, "openapi.json", time.Time{}, bytes.NewReader(api.JSON))
}

// handleDocs handles the "GET /docs" route: a human API reference rendered
// from /openapi.json.
func (s *Server) handleDocs(w http.ResponseWriter, r *http.Request) {
	serveAsset(w, r, "assets/docs.html", "text/html; charset=utf-8")
}

// handleDocsScript handles the "GET /docs/redoc.standalone.js" route.
func (s *Server) handleDocsScript(w http.ResponseWriter, r *http.Request) {
	serveAsset(w, r, "assets/redoc.standalone.js", "text/javascript; charset=utf-8")
}

func serveAsset(w http.ResponseWriter, r *http.Request, name, ctype string) {
	data, err := assets.ReadFile(name)
	if err != nil {
		http.Error(w, "Internal error.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "public, max-age=3600")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}
