package console_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/console"
)

// assetNames returns the asset paths index.html names (its script and
// stylesheet), failing the test when there are not exactly one of each.
func assetNames(t *testing.T, index string) (js, css string) {
	t.Helper()
	scripts := regexp.MustCompile(`<script type="module" src="(/console/assets/app-[A-Z0-9]+\.js)"></script>`).FindAllStringSubmatch(index, -1)
	styles := regexp.MustCompile(`<link rel="stylesheet" href="(/console/assets/app-[A-Z0-9]+\.css)">`).FindAllStringSubmatch(index, -1)
	if len(scripts) != 1 || len(styles) != 1 {
		t.Fatalf("index.html names %d scripts and %d stylesheets, want one fingerprinted each:\n%s", len(scripts), len(styles), index)
	}
	return scripts[0][1], styles[0][1]
}

func get(t *testing.T, h http.Handler, method, path string, header ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// TestHandler: every answer, errors included, carries the security headers
// exactly; the page is served for /console and every client route with
// no-cache; fingerprinted assets are immutable; a missing asset is a 404,
// never the page; other methods are 405.
func TestHandler(t *testing.T) {
	h, err := console.New()
	if err != nil {
		t.Fatal(err)
	}
	index := get(t, h, "GET", "/console")
	body, _ := io.ReadAll(index.Body)
	js, css := assetNames(t, string(body))

	for _, tt := range []struct {
		name, method, path string
		status             int
		ctype, cache       string
		page               bool // the body is index.html
	}{
		{"Index", "GET", "/console", 200, "text/html; charset=utf-8", "no-cache", true},
		{"IndexSlash", "GET", "/console/", 200, "text/html; charset=utf-8", "no-cache", true},
		{"ClientRoute", "GET", "/console/plants/7", 200, "text/html; charset=utf-8", "no-cache", true},
		{"ClientRouteWebhook", "GET", "/console/webhooks/whk_0123456789abcdef", 200, "text/html; charset=utf-8", "no-cache", true},
		{"ClientRouteTokens", "GET", "/console/tokens", 200, "text/html; charset=utf-8", "no-cache", true},
		{"Script", "GET", js, 200, "text/javascript; charset=utf-8", "public, max-age=31536000, immutable", false},
		{"Stylesheet", "GET", css, 200, "text/css; charset=utf-8", "public, max-age=31536000, immutable", false},
		{"HeadScript", "HEAD", js, 200, "text/javascript; charset=utf-8", "public, max-age=31536000, immutable", false},
		{"MissingAsset", "GET", "/console/assets/app-MISSING.js", 404, "text/plain; charset=utf-8", "no-store", false},
		{"AssetTraversal", "GET", "/console/assets/../index.html", 404, "text/plain; charset=utf-8", "no-store", false},
		{"Post", "POST", "/console", 405, "text/plain; charset=utf-8", "no-store", false},
		{"Delete", "DELETE", js, 405, "text/plain; charset=utf-8", "no-store", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := get(t, h, tt.method, tt.path)
			got, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.status {
				t.Fatalf("%s %s: status %d, want %d: %s", tt.method, tt.path, res.StatusCode, tt.status, got)
			}
			for k, v := range map[string]string{
				"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
				"X-Content-Type-Options":  "nosniff",
				"Referrer-Policy":         "no-referrer",
				"Content-Type":            tt.ctype,
				"Cache-Control":           tt.cache,
			} {
				if got := res.Header.Values(k); len(got) != 1 || got[0] != v {
					t.Errorf("%s: %q, want exactly %q", k, got, v)
				}
			}
			if tt.status == 405 {
				if got, want := res.Header.Get("Allow"), "GET, HEAD"; got != want {
					t.Errorf("Allow: %q, want %q", got, want)
				}
			}
			if tt.method == "GET" && tt.page != (string(got) == string(body)) {
				t.Errorf("%s: body is the page: %v, want %v", tt.path, !tt.page, tt.page)
			}
		})
	}

	t.Run("Revalidate", func(t *testing.T) {
		etag := index.Header.Get("ETag")
		if etag == "" {
			t.Fatal("index.html has no ETag")
		}
		res := get(t, h, "GET", "/console/events", "If-None-Match", etag)
		if res.StatusCode != http.StatusNotModified {
			t.Errorf("If-None-Match %s: status %d, want 304", etag, res.StatusCode)
		}
		if got := res.Header.Get("Content-Security-Policy"); got != console.CSP {
			t.Errorf("304 Content-Security-Policy %q", got)
		}
	})
}

// TestBuildOutput: the committed build is what the CSP allows and the
// issue's budget: index.html has no inline script, inline style or style
// attribute and loads nothing from elsewhere; every file under dist/ is
// named by index.html; the total is at most 300 KB.
func TestBuildOutput(t *testing.T) {
	index, err := os.ReadFile(filepath.Join("dist", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(index)
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`<script(\s[^>]*)?>[^<]`), // a script with content
		regexp.MustCompile(`<style`),
		regexp.MustCompile(`\sstyle=`),
		regexp.MustCompile(`\son[a-z]+=`),
		regexp.MustCompile(`(?i)(src|href)="(https?:)?//`),
	} {
		if m := bad.FindString(page); m != "" {
			t.Errorf("index.html has %q (%s)", m, bad)
		}
	}
	js, css := assetNames(t, page) // the one script: external, empty
	if n := strings.Count(page, "<script"); n != 1 {
		t.Errorf("index.html has %d script elements, want the one external module", n)
	}
	named := map[string]bool{"index.html": true, strings.TrimPrefix(js, "/console/"): true, strings.TrimPrefix(css, "/console/"): true}
	total := 0
	err = filepath.WalkDir("dist", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel("dist", p)
		if !named[filepath.ToSlash(rel)] {
			t.Errorf("dist/%s is not named by index.html (a stale build?)", rel)
		}
		info, err := d.Info()
		total += int(info.Size())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if total > 300*1024 {
		t.Errorf("dist/ is %d bytes, over 300 KB", total)
	}
	t.Logf("dist/: %d bytes", total)
}

// TestDir: the development mode serves a build directory, read again on
// each request, with the same headers.
func TestDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "assets"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("index.html", "one")
	write("assets/app-A.js", "1")
	h, err := console.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	write("index.html", "two")
	res := get(t, h, "GET", "/console/plants")
	if body, _ := io.ReadAll(res.Body); string(body) != "two" || res.Header.Get("Content-Security-Policy") != console.CSP {
		t.Errorf("dev mode: body %q, CSP %q", body, res.Header.Get("Content-Security-Policy"))
	}
	if _, err := console.Dir(t.TempDir()); err == nil {
		t.Error("Dir of an empty directory: no error")
	}
}
