// Package console serves the browser console: a single-page
// application built from the TypeScript sources beside this file (src/,
// build.mjs) into dist/, which is committed like generated code and
// embedded here, so building the binary needs no Node.
//
// The console calls only the public API, on the origin that served it; the
// handler serves its files at /console:
//
//   - /console/assets/NAME: a fingerprinted asset (its name carries a hash
//     of its content), cached for a year as immutable; a name that is not
//     one of the assets is 404, never the page;
//   - /console and every other /console/... path: index.html (the client
//     router reads the path), revalidated on every load (no-cache, ETag);
//   - a method other than GET or HEAD: 405 with Allow.
//
// Every answer, errors included, carries SecurityHeaders: a strict Content
// Security Policy (scripts, styles and connections from this origin only,
// no inline script or style, no framing), nosniff and no-referrer.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"strings"
	"time"
)

// Prefix is the path the console is served under.
const Prefix = "/console"

// CSP is the Content-Security-Policy of every console answer.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// SecurityHeaders are set on every console answer.
var SecurityHeaders = map[string]string{
	"Content-Security-Policy": CSP,
	"X-Content-Type-Options":  "nosniff",
	"Referrer-Policy":         "no-referrer",
}

// Cache-Control values: fingerprinted assets never change under their name;
// the page is revalidated on every load so a new binary's page (naming its
// new assets) is seen at once.
const (
	cacheAsset = "public, max-age=31536000, immutable"
	cacheIndex = "no-cache"
	cacheError = "no-store"
)

//go:embed all:dist
var dist embed.FS

// file is one servable file.
type file struct {
	data  []byte
	ctype string
	etag  string
}

// Handler serves the console's files from fsys (the build output: index.html
// and assets/). When reload is set, every request reads fsys again (the
// development mode, serving a directory that `npm run build` rewrites);
// otherwise the files are read once, at construction.
type Handler struct {
	fsys   fs.FS
	reload bool
	files  map[string]*file // "index.html", "assets/NAME"
}

// New returns the handler of the console embedded in the binary.
func New() (*Handler, error) {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	return newHandler(sub, false)
}

// Dir returns a handler that serves the console from dir on disk, read
// again on every request (development: rebuild and reload the page).
func Dir(dir string) (*Handler, error) {
	if _, err := os.Stat(path.Join(dir, "index.html")); err != nil {
		return nil, fmt.Errorf("console: %s is not a console build (no index.html): %w", dir, err)
	}
	return newHandler(os.DirFS(dir), true)
}

func newHandler(fsys fs.FS, reload bool) (*Handler, error) {
	h := &Handler{fsys: fsys, reload: reload}
	if reload {
		return h, nil
	}
	files, err := load(fsys)
	if err != nil {
		return nil, err
	}
	h.files = files
	return h, nil
}

// load reads index.html and every file under assets/.
func load(fsys fs.FS) (map[string]*file, error) {
	files := make(map[string]*file)
	add := func(name string) error {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return fmt.Errorf("console: %w", err)
		}
		ctype := mime.TypeByExtension(path.Ext(name))
		switch path.Ext(name) { // not left to the system's MIME table
		case ".html":
			ctype = "text/html; charset=utf-8"
		case ".js":
			ctype = "text/javascript; charset=utf-8"
		case ".css":
			ctype = "text/css; charset=utf-8"
		case ".svg":
			ctype = "image/svg+xml"
		case ".png":
			ctype = "image/png"
		}
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		sum := sha256.Sum256(data)
		files[name] = &file{data: data, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
		return nil
	}
	if err := add("index.html"); err != nil {
		return nil, err
	}
	assets, err := fs.ReadDir(fsys, "assets")
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	for _, e := range assets {
		if !e.IsDir() {
			if err := add("assets/" + e.Name()); err != nil {
				return nil, err
			}
		}
	}
	return files, nil
}

// Match reports whether a request path is the console's: /console or under
// /console/.
func Match(p string) bool {
	return p == Prefix || strings.HasPrefix(p, Prefix+"/")
}

// ServeHTTP serves /console and everything under it (see the package
// comment).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	for k, v := range SecurityHeaders {
		hd.Set(k, v)
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		plain(w, http.StatusMethodNotAllowed, "method not allowed: the console answers GET and HEAD")
		return
	}
	files := h.files
	if h.reload {
		var err error
		if files, err = load(h.fsys); err != nil {
			plain(w, http.StatusInternalServerError, "Internal error.")
			return
		}
	}
	rest := strings.TrimPrefix(r.URL.Path, Prefix)
	name, cache := "index.html", cacheIndex
	if strings.HasPrefix(rest, "/assets/") {
		name, cache = "assets/"+strings.TrimPrefix(rest, "/assets/"), cacheAsset
	}
	f, ok := files[name]
	if !ok {
		plain(w, http.StatusNotFound, "not found: no such console asset")
		return
	}
	hd.Set("Content-Type", f.ctype)
	hd.Set("Cache-Control", cache)
	hd.Set("ETag", f.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.data))
}

// plain writes a short text/plain error that cannot be cached.
func plain(w http.ResponseWriter, status int, msg string) {
	hd := w.Header()
	hd.Set("Content-Type", "text/plain; charset=utf-8")
	hd.Set("Cache-Control", cacheError)
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
}
