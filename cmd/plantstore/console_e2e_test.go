package main

import (
	"net/http"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/plantstore/plantstore/internal/console"
)

// TestServeConsole: plantstore serve answers /console from the embedded
// build with the security headers on every console answer (the page, an
// asset, a client route, a missing asset), without CORS headers even when
// --cors-origins allows any origin and --public-url is set (the console is
// same-origin only); --console=false turns it off (404).
func TestServeConsole(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "plantstore.db")
	s := startServer(t, db, "--create-db", "--no-bootstrap-admin", "--cors-origins", "*", "--public-url", "https://plants.example.com")
	get := func(path string) (int, http.Header, string) {
		t.Helper()
		req, err := http.NewRequest("GET", s.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", "https://elsewhere.example")
		res, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body [4096]byte
		n, _ := res.Body.Read(body[:])
		return res.StatusCode, res.Header, string(body[:n])
	}
	_, _, index := get("/console")
	m := regexp.MustCompile(`src="(/console/assets/app-[A-Z0-9]+\.js)"`).FindStringSubmatch(index)
	if m == nil {
		t.Fatalf("GET /console: no script asset in:\n%s", index)
	}
	for _, tt := range []struct {
		path   string
		status int
		cache  string
	}{
		{"/console", 200, "no-cache"},
		{m[1], 200, "public, max-age=31536000, immutable"},
		{"/console/webhooks/whk_0123456789abcdef", 200, "no-cache"},
		{"/console/assets/app-NOPE.css", 404, "no-store"},
	} {
		status, h, _ := get(tt.path)
		if status != tt.status {
			t.Errorf("GET %s: %d, want %d", tt.path, status, tt.status)
		}
		for k, want := range map[string]string{
			"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "no-referrer",
			"Cache-Control":           tt.cache,
		} {
			if got := h.Values(k); len(got) != 1 || got[0] != want {
				t.Errorf("GET %s: %s %q, want exactly %q", tt.path, k, got, want)
			}
		}
		if got := h.Get("Access-Control-Allow-Origin"); got != "" {
			t.Errorf("GET %s: Access-Control-Allow-Origin %q: the console is same-origin only", tt.path, got)
		}
	}
	if got := console.CSP; got != "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'" {
		t.Errorf("console.CSP = %q", got)
	}
	// The API keeps its CORS answers (the flag is in force).
	if _, h, _ := get("/healthz"); h.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("GET /healthz: Access-Control-Allow-Origin %q, want * (--cors-origins '*')", h.Get("Access-Control-Allow-Origin"))
	}

	t.Run("Off", func(t *testing.T) {
		for _, flag := range []string{"--console=false", "--no-console"} {
			off := startServer(t, filepath.Join(t.TempDir(), "plantstore.db"), "--create-db", "--no-bootstrap-admin", flag)
			for _, p := range []string{"/console", "/console/plants", m[1]} {
				status, h, _ := do(t, testClient, "GET", off.url+p, "", "")
				if status != http.StatusNotFound {
					t.Errorf("%s: GET %s: %d, want 404", flag, p, status)
				}
				if h.Get("Content-Security-Policy") != "" {
					t.Errorf("%s: GET %s answered by the console", flag, p)
				}
			}
		}
	})
}
