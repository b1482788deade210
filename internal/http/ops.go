package http

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/api"
)

// assets holds the API reference page, its script, the Redoc bundle that
// renders it and the logo the bundle shows, so /docs works offline (no CDN),
// and the site's icon.
//
//go:embed assets/docs.html assets/docs.js assets/redoc.standalone.js assets/redocly.svg assets/favicon.ico
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
// backend checks). Probes come every few seconds: failing ones are logged
// as an outage (once when they start failing, once when one succeeds).
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := s.Storage.Ping(ctx); err != nil {
		s.readyFailures.Fail(r.Context(), err, "request_id", RequestID(r.Context()))
		s.Error(w, r, plantstore.Errorf(plantstore.CodeStorageUnavailable, "storage is not available"))
		return
	}
	s.readyFailures.OK(r.Context())
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(okBody)
}

// metricsHandler is the metrics listener's handler (MetricsAddr): it
// handles the "GET /metrics" route (Prometheus text format) and answers
// 404 to every other path. The API listener has no /metrics.
func (s *Server) metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.Registry, promhttp.HandlerOpts{}))
	return s.recoverPanics(mux)
}

// handleOpenAPI handles the "GET /openapi.json" route: the contract, whose
// servers entry is relative ("/": the server that served it) or PublicURL.
func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	doc := s.openapiDoc
	if doc == nil {
		doc = api.JSON
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	http.ServeContent(w, r, "openapi.json", time.Time{}, bytes.NewReader(doc))
}

// CheckPublicURL reports whether u can be a Server's PublicURL: an absolute
// http or https URL with a host and no user, query or fragment.
func CheckPublicURL(u string) error {
	p, err := url.Parse(u)
	switch {
	case err != nil:
		return fmt.Errorf("must be an absolute http(s) URL: %w", err)
	case p.Scheme != "http" && p.Scheme != "https":
		return errors.New("must be an absolute http:// or https:// URL")
	case p.Host == "" || p.Opaque != "":
		return errors.New("must be an absolute http(s) URL with a host")
	case p.User != nil:
		return errors.New("must not carry a user or password")
	case p.RawQuery != "" || p.ForceQuery:
		return errors.New("must not have a query")
	case p.Fragment != "" || strings.Contains(u, "#"):
		return errors.New("must not have a fragment")
	}
	return nil
}

// publicDocument returns the contract (api.JSON) with its servers set to
// the one entry publicURL (without a trailing slash, so that clients appending
// "/plants" get one slash), the other top-level keys in their order.
func publicDocument(publicURL string) ([]byte, error) {
	if err := CheckPublicURL(publicURL); err != nil {
		return nil, fmt.Errorf("http: public URL %q: %w", publicURL, err)
	}
	servers, err := json.Marshal([]map[string]string{{
		"url":         strings.TrimRight(publicURL, "/"),
		"description": "This deployment (plantstore serve --public-url)",
	}})
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(api.JSON))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("http: the contract is not a JSON object: %v", err)
	}
	var out bytes.Buffer
	out.WriteByte('{')
	replaced := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("http: read the contract: %w", err)
		}
		key, _ := t.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, fmt.Errorf("http: read the contract: %w", err)
		}
		if key == "servers" {
			value, replaced = servers, true
		}
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		out.Write(k)
		out.WriteByte(':')
		out.Write(value)
	}
	if !replaced {
		return nil, errors.New("http: the contract has no servers")
	}
	out.WriteByte('}')
	var indented bytes.Buffer
	if err := json.Indent(&indented, out.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	indented.WriteByte('\n')
	return indented.Bytes(), nil
}

// docsCSP is the Content-Security-Policy of the /docs page: everything from
// this origin only (Redoc's telemetry and its logo on Redocly's CDN
// included: see redocScript), inline styles (Redoc's styled components),
// data: and blob: images, fonts and workers (Redoc makes them), and no
// framing of the page by any other.
const docsCSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; " +
	"object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// handleDocs handles the "GET /docs" route: a human API reference rendered
// from /openapi.json.
func (s *Server) handleDocs(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", docsCSP)
	serveAsset(w, r, "assets/docs.html", "text/html; charset=utf-8")
}

// handleDocsInit handles the "GET /docs/docs.js" route: the page's script,
// which renders the reference with Redoc.
func (s *Server) handleDocsInit(w http.ResponseWriter, r *http.Request) {
	serveAsset(w, r, "assets/docs.js", "text/javascript; charset=utf-8")
}

// handleDocsScript handles the "GET /docs/redoc.standalone.js" route.
func (s *Server) handleDocsScript(w http.ResponseWriter, r *http.Request) {
	data, err := redocScript()
	if err != nil {
		s.Error(w, r, err)
		return
	}
	serveBytes(w, r, "redoc.standalone.js", "text/javascript; charset=utf-8", docsCacheControl, data)
}

// handleDocsLogo handles the "GET /docs/redocly.svg" route: the logo the
// Redoc bundle shows ("API docs by Redocly"), from this origin.
func (s *Server) handleDocsLogo(w http.ResponseWriter, r *http.Request) {
	serveAsset(w, r, "assets/redocly.svg", "image/svg+xml")
}

// redocLogoURLs are the URLs of the logo the Redoc bundle shows, on
// Redocly's CDN, which the page's policy refuses (a blocked image, and a
// request to another site): the bundle is served with redocLogoPath instead.
var redocLogoURLs = []string{
	"https://cdn.redoc.ly/redoc/logo-mini-full.svg",
	"https://cdn.redoc.ly/redoc/logo-mini.svg",
}

// redocLogoPath is where the server serves the logo (handleDocsLogo).
const redocLogoPath = "/docs/redocly.svg"

// redocScript is the Redoc bundle with its logo's URLs replaced by
// redocLogoPath, made once; an error when the bundle no longer holds them
// (a new Redoc version: look at where its logo comes from).
var redocScript = sync.OnceValues(func() ([]byte, error) {
	data, err := assets.ReadFile("assets/redoc.standalone.js")
	if err != nil {
		return nil, err
	}
	for _, u := range redocLogoURLs {
		if !bytes.Contains(data, []byte(u)) {
			return nil, fmt.Errorf("http: the Redoc bundle does not load its logo from %s", u)
		}
		data = bytes.ReplaceAll(data, []byte(u), []byte(redocLogoPath))
	}
	return data, nil
})

// handleFavicon handles the "GET /favicon.ico" route, which browsers ask
// for by themselves: a leaf, 32x32 (one PNG image in an ICO file), which
// they may keep a day.
func (s *Server) handleFavicon(w http.ResponseWriter, r *http.Request) {
	data, err := assets.ReadFile("assets/favicon.ico")
	if err != nil {
		s.Error(w, r, err)
		return
	}
	serveBytes(w, r, "favicon.ico", "image/x-icon", "public, max-age=86400", data)
}

func serveAsset(w http.ResponseWriter, r *http.Request, name, ctype string) {
	data, err := assets.ReadFile(name)
	if err != nil {
		http.Error(w, "Internal error.", http.StatusInternalServerError)
		return
	}
	serveBytes(w, r, name, ctype, docsCacheControl, data)
}

// docsCacheControl lets browsers keep a file of the docs an hour.
const docsCacheControl = "public, max-age=3600"

// serveBytes serves data, a static file, with the Cache-Control cache.
func serveBytes(w http.ResponseWriter, r *http.Request, name, ctype, cache string, data []byte) {
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", cache)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}
