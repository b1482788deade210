package http_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit/mock"
)

func TestAuth(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice")
	const realm = `Bearer realm="plantstore"`
	const invalid = `Bearer realm="plantstore", error="invalid_token"`

	revoked, revokedID := ts.Token(t, "alice"), ""
	tokens, err := ts.Services.Tokens.FindTokens(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range tokens {
		if string(x.Hash) == string(plantstore.HashToken(revoked)) {
			revokedID = x.ID
		}
	}
	if err := ts.Services.Tokens.RevokeToken(context.Background(), revokedID); err != nil {
		t.Fatal(err)
	}
	expiredTok, expired, err := plantstore.NewToken("alice", nil, time.Minute, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.DB.InsertToken(context.Background(), expiredTok); err != nil {
		t.Fatal(err)
	}
	unknown, _, _ := func() (string, int, error) {
		_, s, err := plantstore.NewToken("x", nil, 0, time.Now())
		return s, 0, err
	}()

	tests := []struct {
		name   string
		header string // Authorization; "-" sends none
		code   int32
		www    string
	}{
		{"ErrNoHeader", "-", plantstore.CodeTokenMissing, realm},
		{"ErrBasic", "Basic YWxpY2U6c2VjcmV0", plantstore.CodeTokenMissing, realm},
		{"ErrEmptyToken", "Bearer ", plantstore.CodeTokenMissing, realm},
		{"ErrSchemeOnly", "Bearer", plantstore.CodeTokenMissing, realm},
		{"ErrBlankToken", "Bearer    ", plantstore.CodeTokenMissing, realm},
		{"ErrGarbage", "Bearer not-a-token", plantstore.CodeTokenInvalid, invalid},
		{"ErrUnknown", "Bearer " + unknown, plantstore.CodeTokenInvalid, invalid},
		{"ErrChecksum", "Bearer " + tok[:len(tok)-1] + flip(tok[len(tok)-1]), plantstore.CodeTokenInvalid, invalid},
		{"ErrRevoked", "Bearer " + revoked, plantstore.CodeTokenInvalid, invalid},
		{"ErrExpired", "Bearer " + expired, plantstore.CodeTokenInvalid, invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []Request{
				{Method: "GET", Path: "/plants"},
				{Method: "GET", Path: "/plants/1"},
				{Method: "DELETE", Path: "/plants/1"},
				{Method: "POST", Path: "/plants", Body: `{"id":1,"name":"Fern"}`},
			} {
				if tt.header != "-" {
					r.Header = map[string]string{"Authorization": tt.header}
				}
				resp := ts.Do(t, r)
				mustError(t, resp, 401, tt.code)
				if got := resp.Header.Get("WWW-Authenticate"); got != tt.www {
					t.Fatalf("%s %s: WWW-Authenticate = %q, want %q", r.Method, r.Path, got, tt.www)
				}
			}
		})
	}
	for _, scheme := range []string{"bearer", "BEARER", "Bearer", "bEaReR"} {
		t.Run("SchemeCaseInsensitive/"+scheme, func(t *testing.T) {
			resp := ts.Do(t, Request{Method: "GET", Path: "/plants", Header: map[string]string{"Authorization": scheme + " " + tok}})
			if resp.Status != 200 {
				t.Fatalf("status = %d %s", resp.Status, resp.Body)
			}
		})
	}
	t.Run("StoredNothing", func(t *testing.T) {
		if got := mustPlants(t, ts.Get(t, tok, "/plants")); len(got) != 0 {
			t.Fatalf("unauthenticated requests stored %v", got)
		}
	})
}

func flip(c byte) string {
	if c == '0' {
		return "1"
	}
	return "0"
}

// TestAuth_BeforeBody: an unauthenticated or unauthorised client gets
// 401/403 whatever its body, so it learns nothing from validation.
func TestAuth_BeforeBody(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	reader := ts.Token(t, "alice", plantstore.ScopePlantsRead)
	for name, r := range map[string]Request{
		"Malformed":   {Body: `{"id":`},
		"Invalid":     {Body: `{"id":"x"}`},
		"TooLarge":    {Body: `{"pad":"` + strings.Repeat("x", 70000) + `"}`},
		"ContentType": {Body: `{"id":1,"name":"x"}`, Header: map[string]string{"Content-Type": "text/plain"}},
	} {
		t.Run(name, func(t *testing.T) {
			r.Method, r.Path = "POST", "/plants"
			mustError(t, ts.Do(t, r), 401, plantstore.CodeTokenMissing)
			r.Token = reader
			mustError(t, ts.Do(t, r), 403, plantstore.CodeInsufficientScope)
		})
	}
}

func TestScopes(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, fixedClock)
	owner := ts.Token(t, "alice")
	reader := ts.Token(t, "alice", plantstore.ScopePlantsRead)
	writer := ts.Token(t, "alice", plantstore.ScopePlantsWrite)
	ts.Post(t, owner, `{"id":1,"name":"Fern"}`)

	forbidden := []struct {
		name  string
		token string
		req   Request
		scope string
	}{
		{"ReaderCannotCreate", reader, Request{Method: "POST", Path: "/plants", Body: `{"id":2,"name":"Moss"}`}, plantstore.ScopePlantsWrite},
		{"ReaderCannotDelete", reader, Request{Method: "DELETE", Path: "/plants/1"}, plantstore.ScopePlantsWrite},
		{"WriterCannotList", writer, Request{Method: "GET", Path: "/plants"}, plantstore.ScopePlantsRead},
		{"WriterCannotGet", writer, Request{Method: "GET", Path: "/plants/1"}, plantstore.ScopePlantsRead},
	}
	for _, tt := range forbidden {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Token = tt.token
			resp := ts.Do(t, tt.req)
			mustError(t, resp, 403, plantstore.CodeInsufficientScope)
			want := `Bearer realm="plantstore", error="insufficient_scope", scope="` + tt.scope + `"`
			if got := resp.Header.Get("WWW-Authenticate"); got != want {
				t.Fatalf("WWW-Authenticate = %q, want %q", got, want)
			}
		})
	}
	t.Run("NothingChanged", func(t *testing.T) {
		if got, want := string(ts.Get(t, owner, "/plants").Body), "["+atFixedNow(`{"id":1,"name":"Fern"}`)+"]"; got != want {
			t.Fatalf("plants = %s, want %s", got, want)
		}
	})
	t.Run("ReaderCanRead", func(t *testing.T) {
		if resp := ts.Get(t, reader, "/plants/1"); resp.Status != 200 {
			t.Fatalf("status = %d", resp.Status)
		}
	})
	t.Run("WriterCanWrite", func(t *testing.T) {
		if resp := ts.Post(t, writer, `{"id":3,"name":"Ivy"}`); resp.Status != 200 {
			t.Fatalf("status = %d", resp.Status)
		}
		if resp := ts.Do(t, Request{Method: "DELETE", Path: "/plants/3", Token: writer}); resp.Status != 204 {
			t.Fatalf("status = %d", resp.Status)
		}
	})
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ts := MustOpenServer(t, func(s *TestServer) {
		s.RateLimit, s.RateBurst = 1, 3
		s.Now = func() time.Time { return now } // the bucket does not refill during the test
	})
	// Tokens are checked against the server's clock: make them unexpiring.
	busy, other := ts.Token(t, "alice"), ts.Token(t, "bob")
	for i := range 3 {
		if resp := ts.Get(t, busy, "/plants"); resp.Status != 200 {
			t.Fatalf("request %d: status = %d", i, resp.Status)
		}
	}
	resp := ts.Post(t, busy, `{"id":1,"name":"Fern"}`)
	mustError(t, resp, 429, plantstore.CodeRateLimited)
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || secs < 1 {
		t.Fatalf("Retry-After = %q", resp.Header.Get("Retry-After"))
	}
	if resp := ts.Get(t, other, "/plants"); resp.Status != 200 {
		t.Fatalf("another token: status = %d", resp.Status)
	}
	if got := string(ts.Get(t, other, "/plants").Body); got != "[]" {
		t.Fatalf("the refused create stored something: %s", got)
	}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice")
	for _, path := range []string{"/", "/nope", "/plants/1/leaves", "/plant", "/plantsx"} {
		t.Run("NotFound"+path, func(t *testing.T) {
			mustError(t, ts.Get(t, tok, path), 404, plantstore.CodeNoRoute)
			mustError(t, ts.Get(t, "", path), 404, plantstore.CodeNoRoute)
		})
	}
	for _, tt := range []struct{ method, path, allow string }{
		{"PUT", "/plants", "GET,HEAD,POST"},
		{"DELETE", "/plants", "GET,HEAD,POST"},
		{"PUT", "/plants/1", "DELETE,GET,HEAD,PATCH"},
		{"POST", "/plants/1", "DELETE,GET,HEAD,PATCH"},
		{"POST", "/healthz", "GET, HEAD"},
		{"DELETE", "/openapi.json", "GET, HEAD"},
	} {
		t.Run("MethodNotAllowed/"+tt.method+tt.path, func(t *testing.T) {
			resp := ts.Do(t, Request{Method: tt.method, Path: tt.path, Token: tok})
			mustError(t, resp, 405, plantstore.CodeMethodNotAllowed)
			if got := resp.Header.Get("Allow"); got != tt.allow {
				t.Fatalf("Allow = %q, want %q", got, tt.allow)
			}
		})
	}
}

// TestInternalErrorSaysNothing: when the plant service fails unexpectedly,
// the 500 must not reveal what failed, and the log must.
func TestInternalErrorSaysNothing(t *testing.T) {
	t.Parallel()
	var fail failures
	cause := errors.New("sqlite: list plants: no such table: plants")
	ts := MustOpenServer(t, withFailingServices(&fail, cause, nil))
	tok := ts.Token(t, "alice")
	if resp := ts.Get(t, tok, "/plants"); resp.Status != 200 {
		t.Fatalf("status = %d", resp.Status)
	}
	fail.plants.Store(true)
	for _, r := range []Request{
		{Method: "GET", Path: "/plants"},
		{Method: "GET", Path: "/plants/1"},
		{Method: "POST", Path: "/plants", Body: `{"id":1,"name":"Fern"}`},
		{Method: "DELETE", Path: "/plants/1"},
	} {
		r.Token = tok
		resp := ts.Do(t, r)
		mustError(t, resp, 500, plantstore.CodeInternal)
		if got, want := string(resp.Body), `{"error":50001,"message":"Internal error."}`+"\n"; got != want {
			t.Fatalf("body = %q, want %q", got, want)
		}
	}
	if logs := ts.logs.String(); strings.Count(logs, "no such table: plants") != 4 {
		t.Fatalf("the log lacks the cause of each 500:\n%s", logs)
	}
}

// TestTokensNeverLogged: the request log has the owner, never a secret.
func TestTokensNeverLogged(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	tok := ts.Token(t, "alice")
	ts.Post(t, tok, `{"id":1,"name":"Fern"}`)
	ts.Get(t, tok, "/plants")
	ts.Get(t, tok+"x", "/plants")
	logs := ts.logs.String()
	if !strings.Contains(logs, `"owner":"alice"`) {
		t.Fatalf("the log lacks the owner:\n%s", logs)
	}
	if strings.Contains(logs, tok) || strings.Contains(logs, tok[len(plantstore.TokenPrefix):20]) {
		t.Fatalf("the log has the token:\n%s", logs)
	}
}

// TestAuth_StorageFailure: when the token lookup itself fails, the answer
// is a logged 500, not a 401 that would tell the client to send a token;
// when the storage is unavailable, a 503 with Retry-After.
func TestAuth_StorageFailure(t *testing.T) {
	t.Parallel()
	var cause atomic.Pointer[error]
	ts := MustOpenServer(t, func(s *TestServer) {
		s.TokenService = &mock.TokenService{AuthenticateFn: func(context.Context, string) (*plantstore.Token, error) {
			return nil, *cause.Load()
		}}
	})
	tok := ts.Token(t, "alice")
	internal := errors.New("sqlite: find token: no such table: tokens")
	cause.Store(&internal)
	mustError(t, ts.Get(t, tok, "/plants"), 500, plantstore.CodeInternal)
	if logs := ts.logs.String(); !strings.Contains(logs, "no such table: tokens") {
		t.Fatalf("the log lacks the cause:\n%s", logs)
	}
	var unavailable error = &plantstore.Error{Code: plantstore.CodeStorageUnavailable, Message: "storage is not available; retry later", Err: errors.New("disk I/O error")}
	cause.Store(&unavailable)
	resp := ts.Get(t, tok, "/plants")
	mustError(t, resp, 503, plantstore.CodeStorageUnavailable)
	if got := resp.Header.Get("Retry-After"); got != "1" {
		t.Fatalf("Retry-After = %q, want 1", got)
	}
}

// TestTokenCache: a verified token is trusted for TokenCacheTTL, so a
// revocation takes effect within that bound (and no later); expiry is
// checked on every request.
func TestTokenCache(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func(d time.Duration) {
		mu.Lock()
		now = now.Add(d)
		mu.Unlock()
	}
	ts := MustOpenServer(t, func(s *TestServer) {
		s.Service.TokenCacheTTL = 2 * time.Second
		s.Service.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	})
	tok := ts.Token(t, "alice")
	if resp := ts.Get(t, tok, "/plants"); resp.Status != 200 {
		t.Fatalf("status = %d", resp.Status)
	}
	tokens, err := ts.Services.Tokens.FindTokens(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Services.Tokens.RevokeToken(context.Background(), tokens[0].ID); err != nil {
		t.Fatal(err)
	}
	clock(time.Second)
	if resp := ts.Get(t, tok, "/plants"); resp.Status != 200 {
		t.Fatalf("within the TTL: status = %d, want the cached 200", resp.Status)
	}
	clock(1100 * time.Millisecond)
	mustError(t, ts.Get(t, tok, "/plants"), 401, plantstore.CodeTokenInvalid)

	t.Run("ExpiryNotCached", func(t *testing.T) {
		short, secret, err := plantstore.NewToken("alice", nil, time.Second, now)
		if err != nil {
			t.Fatal(err)
		}
		if err := ts.DB.InsertToken(context.Background(), short); err != nil {
			t.Fatal(err)
		}
		if resp := ts.Get(t, secret, "/plants"); resp.Status != 200 {
			t.Fatalf("status = %d", resp.Status)
		}
		clock(1500 * time.Millisecond) // past expiry, within the cache TTL
		mustError(t, ts.Get(t, secret, "/plants"), 401, plantstore.CodeTokenInvalid)
	})
	t.Run("Metrics", func(t *testing.T) {
		body := string(ts.Metrics(t).Body)
		for _, want := range []string{`plantstore_token_cache_total{result="hit"}`, `plantstore_token_cache_total{result="miss"}`} {
			if !strings.Contains(body, want) {
				t.Fatalf("metrics lack %s", want)
			}
		}
	})
}
