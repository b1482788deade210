package http

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// CORS (Cross-Origin Resource Sharing) lets a web page served from another
// origin call the API from a browser. It is off unless Server.CORSOrigins
// lists origins: then, and only for a request whose Origin is listed,
//
//   - a preflight (OPTIONS with Access-Control-Request-Method) is answered
//     204 here, before authentication and routing, with the methods the
//     contract has for the path (GET, HEAD for the operational paths), the
//     request headers the API reads, and a Max-Age;
//   - every other answer, errors (401, 404, 429...) included so that the
//     page can read them, carries Access-Control-Allow-Origin and
//     Access-Control-Expose-Headers with the response headers the API sets.
//
// A request from an origin not listed is served as if CORS were off: no
// CORS header, and its preflight gets the usual 405 (the browser then
// refuses the call). Access-Control-Allow-Credentials is never sent: the API
// authenticates with a bearer token the page sets itself, not with cookies,
// so a page needs no credentials mode, and "*" (any origin) is therefore as
// safe as a list: a page can only use a token it already has.
//
// The console (Server.Console, /console) is same-origin only: its requests
// pass this layer untouched, with no CORS header and no preflight answer.

// corsMaxAge is how long (seconds) a browser may cache a preflight's
// answer; Chromium caps it at 7200.
const corsMaxAge = "7200"

// corsAllowHeaders are the request headers a page may send: the ones the
// API reads (the conditional request headers included) and the W3C trace
// context, for pages that trace their calls.
const corsAllowHeaders = "Authorization, Content-Type, If-Match, If-None-Match, X-Request-Id, traceparent, tracestate"

// corsExposeHeaders are the response headers the API sets that a page may
// read (those CORS safelists, like Content-Type, need not be listed).
const corsExposeHeaders = "ETag, Link, Location, RateLimit, RateLimit-Policy, Retry-After, WWW-Authenticate, X-Request-Id"

// corsMethods are the methods a preflight may be answered with, in the
// order they are listed.
var corsMethods = [...]string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
}

// Header values shared by every answer (never modified: a header that
// gains a value gets a new slice).
var (
	corsExposeValue = []string{corsExposeHeaders}
	corsVaryValue   = []string{"Origin"}
	corsAnyValue    = []string{"*"}
)

// corsPolicy is a checked CORS allow-list.
type corsPolicy struct {
	any     bool                // "*": every origin
	origins map[string][]string // allowed Origin values -> the Access-Control-Allow-Origin value
}

// CheckCORSOrigins checks a CORS allow-list (Server.CORSOrigins): each entry
// is an origin as browsers send it in the Origin header, scheme://host or
// scheme://host:port with no path, query or user info (e.g.
// https://app.example or http://localhost:5173), or the list is the one
// entry "*" (any origin). Scheme and host are compared case-insensitively
// and a default port (80 for http, 443 for https) may be written or not.
func CheckCORSOrigins(origins []string) error {
	_, err := newCORSPolicy(origins)
	return err
}

// newCORSPolicy checks the allow-list and returns its policy, nil when the
// list is empty (CORS off).
func newCORSPolicy(origins []string) (*corsPolicy, error) {
	if len(origins) == 0 {
		return nil, nil
	}
	p := &corsPolicy{origins: make(map[string][]string, len(origins))}
	for _, o := range origins {
		o = strings.TrimSpace(o)
		if o == "*" {
			if len(origins) > 1 {
				return nil, fmt.Errorf("cors origin *: means any origin, list it alone")
			}
			p.any = true
			return p, nil
		}
		origin, err := normalizeOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("cors origin %q: %w", o, err)
		}
		p.origins[origin] = []string{origin}
	}
	return p, nil
}

// normalizeOrigin returns o as a browser serializes an origin: lower-case
// scheme and host, no default port.
func normalizeOrigin(o string) (string, error) {
	if o == "" {
		return "", fmt.Errorf("empty: give scheme://host[:port]")
	}
	if strings.EqualFold(o, "null") {
		return "", fmt.Errorf("the opaque origin null (sandboxed frames, file: pages) cannot be allowed: any page can send it")
	}
	u, err := url.Parse(o)
	switch {
	case err != nil:
		return "", fmt.Errorf("not a URL: %v", err)
	case u.Scheme == "" || u.Host == "" || u.Opaque != "":
		return "", fmt.Errorf("give scheme://host[:port], e.g. https://app.example")
	case u.User != nil:
		return "", fmt.Errorf("an origin has no user info")
	case u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(o, "?#"):
		return "", fmt.Errorf("an origin has no path, query or fragment: give scheme://host[:port] only")
	case strings.Contains(u.Host, "*"):
		return "", fmt.Errorf("no wildcards within an origin: list each origin, or give * alone")
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if u.Host != u.Hostname() && port == "" {
		return "", fmt.Errorf("empty port")
	}
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, nil
}

// allowOrigin returns the Access-Control-Allow-Origin value for origin, or
// nil when it is not allowed.
func (p *corsPolicy) allowOrigin(origin string) []string {
	if p.any {
		return corsAnyValue
	}
	return p.origins[origin]
}

// cors answers the preflights of the allowed origins and adds the CORS
// headers to the answers to their other requests (see the comment at the
// top of this file). next is Server.route.
func (s *Server) cors(p *corsPolicy, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Console != nil && isConsolePath(r.URL.Path) {
			next.ServeHTTP(w, r) // same origin only: no CORS header, no preflight
			return
		}
		h := w.Header()
		if !p.any {
			// The answer depends on Origin: caches must keep them apart.
			if v, ok := h["Vary"]; ok {
				h["Vary"] = append(v, "Origin")
			} else {
				h["Vary"] = corsVaryValue
			}
		}
		origins := r.Header["Origin"]
		if len(origins) != 1 {
			next.ServeHTTP(w, r)
			return
		}
		allow := p.allowOrigin(origins[0])
		if allow == nil {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			if methods, pattern := s.corsMethods(r.URL); methods != "" {
				if info := requestInfoFrom(r.Context()); info != nil {
					info.route = s.metrics.route(pattern) // its metrics' and log line's route
				}
				h["Access-Control-Allow-Origin"] = allow
				h.Set("Access-Control-Allow-Methods", methods)
				h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
				h.Set("Access-Control-Max-Age", corsMaxAge)
				w.WriteHeader(http.StatusNoContent)
				return
			}
			// A path the API does not have: its 404, readable.
		}
		h["Access-Control-Allow-Origin"] = allow
		h["Access-Control-Expose-Headers"] = corsExposeValue
		if info := requestInfoFrom(r.Context()); info != nil {
			// The generated encoders replace it with their own list: the
			// status recorder puts this one back as the header goes out.
			info.rec.expose = corsExposeValue
		}
		next.ServeHTTP(w, r)
	})
}

// corsMethods returns the methods a preflight for u's path is answered
// with, and the path's route pattern: those of the contract's operations on
// the path, GET, HEAD on an operational path, "" on a path that is neither.
func (s *Server) corsMethods(u *url.URL) (methods, pattern string) {
	if allow, ok := s.opsAllow[u.Path]; ok {
		return allow, u.Path
	}
	var b strings.Builder
	for _, m := range corsMethods {
		if route, ok := s.api.FindPath(m, u); ok {
			if b.Len() > 0 {
				b.WriteString(", ")
			}
			b.WriteString(m)
			pattern = route.PathPattern()
		}
	}
	return b.String(), pattern
}
