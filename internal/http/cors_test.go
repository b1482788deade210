package http_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	plantstorehttp "github.com/plantstore/plantstore/internal/http"
)

const appOrigin = "https://app.example"

// corsHeaders returns the response's Access-Control-* headers.
func corsHeaders(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		if strings.HasPrefix(k, "Access-Control-") {
			out[k] = v
		}
	}
	return out
}

// headerList splits a comma-separated header value.
func headerList(v string) []string {
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func preflight(path, origin, method string) Request {
	return Request{Method: http.MethodOptions, Path: path, Header: map[string]string{
		"Origin":                         origin,
		"Access-Control-Request-Method":  method,
		"Access-Control-Request-Headers": "authorization,content-type",
	}}
}

func mustVaryOrigin(t *testing.T, resp *Response) {
	t.Helper()
	if !slices.ContainsFunc(resp.Header.Values("Vary"), func(v string) bool {
		return slices.Contains(headerList(v), "Origin")
	}) {
		t.Errorf("Vary %q, want it to name Origin", resp.Header.Values("Vary"))
	}
}

// Without --cors-origins no answer carries a CORS header, a preflight
// included (the generated router's own Access-Control-Allow-Methods is
// dropped): the default is no CORS at all.
func TestCORSOff(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	resp := ts.Do(t, preflight("/plants", appOrigin, "POST"))
	mustError(t, resp, http.StatusMethodNotAllowed, 40501)
	if h := corsHeaders(resp.Header); len(h) != 0 {
		t.Errorf("preflight without CORS: headers %v, want none", h)
	}
	token := ts.Token(t, "alice")
	resp = ts.Do(t, Request{Method: "GET", Path: "/plants", Token: token, Header: map[string]string{"Origin": appOrigin}})
	if resp.Status != http.StatusOK {
		t.Fatalf("GET /plants: %d %s", resp.Status, resp.Body)
	}
	if h := corsHeaders(resp.Header); len(h) != 0 {
		t.Errorf("GET without CORS: headers %v, want none", h)
	}
}

// An allowed origin's preflight is answered 204 before authentication
// (no token: not a 401) with the path's methods, the API's request headers
// and a Max-Age; never with credentials.
func TestCORSPreflightAllowed(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, func(s *TestServer) {
		s.CORSOrigins = []string{appOrigin, "http://localhost:5173"}
	})
	for _, tc := range []struct {
		path, method  string
		want, notWant []string
	}{
		{"/plants", "POST", []string{"GET", "POST"}, []string{"DELETE", "PUT"}},
		{"/plants/7", "DELETE", []string{"GET", "DELETE"}, []string{"POST", "PUT"}},
		{"/webhooks/whk_0123456789abcdef/rotate-secret", "POST", []string{"POST"}, []string{"GET", "DELETE"}},
		{"/healthz", "GET", []string{"GET", "HEAD"}, []string{"POST"}},
		{"/openapi.json", "GET", []string{"GET", "HEAD"}, []string{"POST"}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp := ts.Do(t, preflight(tc.path, appOrigin, tc.method))
			if got, want := resp.Status, http.StatusNoContent; got != want {
				t.Fatalf("status %d, want %d: %s", got, want, resp.Body)
			}
			if len(resp.Body) != 0 {
				t.Errorf("body %q, want none", resp.Body)
			}
			h := resp.Header
			if got := h.Get("Access-Control-Allow-Origin"); got != appOrigin {
				t.Errorf("Allow-Origin %q, want %q", got, appOrigin)
			}
			mustVaryOrigin(t, resp)
			methods := headerList(h.Get("Access-Control-Allow-Methods"))
			for _, m := range tc.want {
				if !slices.Contains(methods, m) {
					t.Errorf("Allow-Methods %v lacks %s", methods, m)
				}
			}
			for _, m := range tc.notWant {
				if slices.Contains(methods, m) {
					t.Errorf("Allow-Methods %v has %s, which the path does not", methods, m)
				}
			}
			allowed := headerList(h.Get("Access-Control-Allow-Headers"))
			for _, name := range []string{"Authorization", "Content-Type", "If-Match", "If-None-Match", "X-Request-Id"} {
				if !slices.Contains(allowed, name) {
					t.Errorf("Allow-Headers %v lacks %s", allowed, name)
				}
			}
			if got := h.Get("Access-Control-Max-Age"); got != "7200" {
				t.Errorf("Max-Age %q, want 7200", got)
			}
			if v, ok := h["Access-Control-Allow-Credentials"]; ok {
				t.Errorf("Allow-Credentials %q, want none", v)
			}
		})
	}
	// A preflight for a path the API does not have gets its 404, readable.
	resp := ts.Do(t, preflight("/nope", appOrigin, "GET"))
	mustError(t, resp, http.StatusNotFound, 40402)
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != appOrigin {
		t.Errorf("404 preflight: Allow-Origin %q, want %q", got, appOrigin)
	}
}

// A preflight from an origin not listed gets no CORS header: the usual 405,
// before authentication. A differently written listed origin matches as a
// browser sends it.
func TestCORSPreflightDenied(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, func(s *TestServer) {
		s.CORSOrigins = []string{"HTTPS://App.Example:443"}
	})
	for _, origin := range []string{"https://evil.example", "http://app.example", "https://app.example:8443", "null"} {
		resp := ts.Do(t, preflight("/plants", origin, "POST"))
		mustError(t, resp, http.StatusMethodNotAllowed, 40501)
		if h := corsHeaders(resp.Header); len(h) != 0 {
			t.Errorf("origin %s: CORS headers %v, want none", origin, h)
		}
		mustVaryOrigin(t, resp)
	}
	resp := ts.Do(t, preflight("/plants", appOrigin, "POST"))
	if resp.Status != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != appOrigin {
		t.Errorf("normalized origin: status %d, Allow-Origin %q", resp.Status, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}

// An allowed origin's answers, the errors included, carry Allow-Origin and
// expose the API's headers, so that the page can read a 401's
// WWW-Authenticate, a 429's Retry-After or the request id; another origin's
// carry none.
func TestCORSActualRequests(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, func(s *TestServer) {
		s.CORSOrigins = []string{appOrigin}
	})
	token := ts.Token(t, "alice")
	withOrigin := func(r Request, origin string) Request {
		if r.Header == nil {
			r.Header = map[string]string{}
		}
		r.Header["Origin"] = origin
		return r
	}
	for _, tc := range []struct {
		name   string
		req    Request
		status int
	}{
		{"create", Request{Method: "POST", Path: "/plants", Token: token, Body: `{"id":1,"name":"Fern"}`}, http.StatusOK},
		{"list", Request{Method: "GET", Path: "/plants", Token: token}, http.StatusOK},
		{"no token", Request{Method: "GET", Path: "/plants"}, http.StatusUnauthorized},
		{"not found", Request{Method: "GET", Path: "/plants/404", Token: token}, http.StatusNotFound},
		{"no route", Request{Method: "GET", Path: "/nope", Token: token}, http.StatusNotFound},
		{"method", Request{Method: "PUT", Path: "/plants", Token: token}, http.StatusMethodNotAllowed},
		{"ops", Request{Method: "GET", Path: "/healthz"}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := ts.Do(t, withOrigin(tc.req, appOrigin))
			if resp.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.Status, tc.status, resp.Body)
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != appOrigin {
				t.Errorf("Allow-Origin %q, want %q", got, appOrigin)
			}
			mustVaryOrigin(t, resp)
			exposed := headerList(resp.Header.Get("Access-Control-Expose-Headers"))
			for _, name := range []string{"ETag", "Link", "Location", "RateLimit", "RateLimit-Policy", "Retry-After", "WWW-Authenticate", "X-Request-Id"} {
				if !slices.Contains(exposed, name) {
					t.Errorf("Expose-Headers %v lacks %s", exposed, name)
				}
			}
			if _, ok := resp.Header["Access-Control-Allow-Methods"]; ok {
				t.Errorf("an actual request's answer has Allow-Methods")
			}

			other := ts.Do(t, withOrigin(tc.req, "https://evil.example"))
			if h := corsHeaders(other.Header); len(h) != 0 {
				t.Errorf("another origin: CORS headers %v, want none", h)
			}
		})
	}
}

// "*" allows every origin, with Allow-Origin * and no Vary: Origin.
func TestCORSAnyOrigin(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, func(s *TestServer) { s.CORSOrigins = []string{"*"} })
	resp := ts.Do(t, preflight("/plants", "https://anything.example", "POST"))
	if resp.Status != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("preflight: status %d, Allow-Origin %q, want 204 *", resp.Status, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	if _, ok := resp.Header["Access-Control-Allow-Credentials"]; ok {
		t.Errorf("Allow-Credentials with *")
	}
	resp = ts.Do(t, Request{Method: "GET", Path: "/plants", Header: map[string]string{"Origin": "http://localhost:3000"}})
	if resp.Status != http.StatusUnauthorized || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("401: status %d, Allow-Origin %q, want 401 *", resp.Status, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	if v := resp.Header.Values("Vary"); slices.Contains(v, "Origin") {
		t.Errorf("Vary %q with *: the answer does not depend on Origin", v)
	}
}

func TestCheckCORSOrigins(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		origins []string
		ok      bool
	}{
		{nil, true},
		{[]string{"https://app.example"}, true},
		{[]string{"http://localhost:5173", "https://app.example:8443"}, true},
		{[]string{"http://[::1]:8080"}, true},
		{[]string{"capacitor://localhost"}, true},
		{[]string{"*"}, true},
		{[]string{"*", "https://app.example"}, false},
		{[]string{"https://app.example/"}, false},
		{[]string{"https://app.example/app"}, false},
		{[]string{"https://app.example?x=1"}, false},
		{[]string{"https://user@app.example"}, false},
		{[]string{"https://*.example"}, false},
		{[]string{"app.example"}, false},
		{[]string{"null"}, false},
		{[]string{""}, false},
		{[]string{"https://app.example:"}, false},
	} {
		err := plantstorehttp.CheckCORSOrigins(tc.origins)
		if (err == nil) != tc.ok {
			t.Errorf("CheckCORSOrigins(%q) = %v, want ok %v", tc.origins, err, tc.ok)
		}
	}
}
