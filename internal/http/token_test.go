package http_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	plantstorehttp "github.com/plantstore/plantstore/internal/http"
	"github.com/plantstore/plantstore/internal/oidc"
	"github.com/plantstore/plantstore/internal/service"
	"github.com/plantstore/plantstore/internal/testkit/oidctest"
)

// tokenBody is a Token (or TokenWithSecret) as the API answers it; the
// pointers tell null from absent members (absent: the key is not in raw).
type tokenBody struct {
	ID        string     `json:"id"`
	Scopes    []string   `json:"scopes"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at"`
	Last4     *string    `json:"last4"`
	Status    string     `json:"status"`
	Secret    string     `json:"secret"`
	raw       map[string]json.RawMessage
}

// tokenMembers are the members of every Token answer, null or not.
var tokenMembers = []string{"created_at", "expires_at", "id", "last4", "revoked_at", "scopes", "status"}

func decodeTokenBody(t *testing.T, data []byte) tokenBody {
	t.Helper()
	var tok tokenBody
	if err := json.Unmarshal(data, &tok); err != nil {
		t.Fatalf("token %s: %v", data, err)
	}
	if err := json.Unmarshal(data, &tok.raw); err != nil {
		t.Fatal(err)
	}
	return tok
}

// mustToken decodes a Token answer of the given status and checks its
// members: all of them, no other (the secret only with withSecret).
func mustToken(t *testing.T, resp *Response, status int, withSecret bool) tokenBody {
	t.Helper()
	if resp.Status != status {
		t.Fatalf("status = %d, want %d (body %s)", resp.Status, status, resp.Body)
	}
	tok := decodeTokenBody(t, resp.Body)
	checkTokenMembers(t, tok, withSecret)
	return tok
}

func checkTokenMembers(t *testing.T, tok tokenBody, withSecret bool) {
	t.Helper()
	want := slices.Clone(tokenMembers)
	if withSecret {
		want = append(want, "secret")
		slices.Sort(want)
	}
	var got []string
	for k := range tok.raw {
		got = append(got, k)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("members %v, want %v", got, want)
	}
}

// mustTokens decodes a GET /tokens answer.
func mustTokens(t *testing.T, resp *Response) []tokenBody {
	t.Helper()
	if resp.Status != 200 {
		t.Fatalf("status = %d, want 200 (body %s)", resp.Status, resp.Body)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(resp.Body, &raws); err != nil {
		t.Fatalf("list %s: %v", resp.Body, err)
	}
	out := make([]tokenBody, len(raws))
	for i, raw := range raws {
		out[i] = decodeTokenBody(t, raw)
		checkTokenMembers(t, out[i], false)
	}
	return out
}

// mint is POST /tokens with body.
func (ts *TestServer) mint(t *testing.T, token, body string) *Response {
	t.Helper()
	return ts.Do(t, Request{Method: "POST", Path: "/tokens", Token: token, Body: body})
}

// issue makes a token through the service and returns it with its secret.
func (ts *TestServer) issue(t *testing.T, owner string, ttl time.Duration, scopes ...string) (*plantstore.Token, string) {
	t.Helper()
	tok, secret, err := ts.Services.Tokens.CreateToken(context.Background(), plantstore.TokenRequest{Owner: owner, Scopes: scopes, TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return tok, secret
}

// noHashes fails if an answer holds a token hash, in hex or base64.
func noHashes(t *testing.T, ts *TestServer, owner string, bodies [][]byte) {
	t.Helper()
	tokens, err := ts.Services.Tokens.FindTokens(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tok := range tokens {
		for _, form := range []string{hex.EncodeToString(tok.Hash), strings.ToUpper(hex.EncodeToString(tok.Hash)),
			base64.StdEncoding.EncodeToString(tok.Hash), base64.RawURLEncoding.EncodeToString(tok.Hash)} {
			for _, b := range bodies {
				if strings.Contains(string(b), form) {
					t.Fatalf("an answer holds the hash of token %s: %s", tok.ID, b)
				}
			}
		}
		if tok.Owner == owner {
			n++
		}
	}
	if n == 0 || len(bodies) == 0 {
		t.Fatalf("%d tokens of %s, %d answers: nothing checked", n, owner, len(bodies))
	}
}

var secretRE = regexp.MustCompile(`^pst_[0-9a-f]{72}$`)

// TestTokens_Lifecycle: create (the secret once), list, get, use, revoke
// (idempotent), and the revoked token refused at once by this server; no
// answer ever holds a hash or, but for the create, a secret.
func TestTokens_Lifecycle(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, func(ts *TestServer) { ts.Service.TokenCacheTTL = time.Hour })
	admin, adminSecret := ts.issue(t, "alice", 0, plantstore.KnownScopes...)
	var bodies [][]byte
	keep := func(resp *Response) *Response { bodies = append(bodies, resp.Body); return resp }

	before := time.Now()
	resp := keep(ts.mint(t, adminSecret, `{"scopes":["plants:read"],"ttl":3600}`))
	created := mustToken(t, resp, 201, true)
	if !secretRE.MatchString(created.Secret) || !strings.HasPrefix(created.ID, "tok_") {
		t.Fatalf("created %+v: want a tok_ id and a pst_ secret", created)
	}
	if got, want := created.Scopes, []string{plantstore.ScopePlantsRead}; !slices.Equal(got, want) {
		t.Fatalf("scopes %v, want %v", got, want)
	}
	if created.Last4 == nil || *created.Last4 != created.Secret[len(created.Secret)-4:] {
		t.Fatalf("last4 %v, want the secret's last four (%s)", created.Last4, created.Secret[len(created.Secret)-4:])
	}
	if created.ExpiresAt == nil || created.ExpiresAt.Sub(created.CreatedAt) != time.Hour || created.CreatedAt.Before(before.Add(-time.Second)) {
		t.Fatalf("created_at %v, expires_at %v: want now and an hour later", created.CreatedAt, created.ExpiresAt)
	}
	if created.RevokedAt != nil || created.Status != "active" || string(created.raw["revoked_at"]) != "null" {
		t.Fatalf("revoked_at %s, status %q: want null, active", created.raw["revoked_at"], created.Status)
	}

	// The new token works, with its scope only.
	if resp := ts.Get(t, created.Secret, "/plants"); resp.Status != 200 {
		t.Fatalf("GET /plants with the new token: %d %s", resp.Status, resp.Body)
	}
	mustError(t, ts.Post(t, created.Secret, `{"id":1,"name":"Fern"}`), 403, plantstore.CodeInsufficientScope)

	// Listed, oldest first, with the admin token; no secret.
	list := mustTokens(t, keep(ts.Get(t, adminSecret, "/tokens")))
	if len(list) != 2 || list[0].ID != admin.ID || list[1].ID != created.ID {
		t.Fatalf("list %+v, want the admin token, then the new one", list)
	}
	if list[1].Last4 == nil || *list[1].Last4 != *created.Last4 || !list[1].ExpiresAt.Equal(*created.ExpiresAt) {
		t.Fatalf("listed %+v, created %+v", list[1], created)
	}
	if string(list[0].raw["expires_at"]) != "null" {
		t.Fatalf("expires_at of a token that never expires: %s, want null", list[0].raw["expires_at"])
	}
	got := mustToken(t, keep(ts.Get(t, adminSecret, "/tokens/"+created.ID)), 200, false)
	if got.ID != created.ID || got.Status != "active" || !got.CreatedAt.Equal(created.CreatedAt) {
		t.Fatalf("GET /tokens/{id} = %+v, want %+v", got, created)
	}
	if resp := ts.Do(t, Request{Method: "HEAD", Path: "/tokens/" + created.ID, Token: adminSecret}); resp.Status != 200 || len(resp.Body) != 0 {
		t.Fatalf("HEAD /tokens/{id}: %d %q", resp.Status, resp.Body)
	}

	// Revoke: refused at once here, although the cache would keep it an
	// hour; a second revoke answers the same.
	revoked := mustToken(t, keep(ts.Do(t, Request{Method: "DELETE", Path: "/tokens/" + created.ID, Token: adminSecret})), 200, false)
	if revoked.Status != "revoked" || revoked.RevokedAt == nil {
		t.Fatalf("revoked %+v, want status revoked and revoked_at", revoked)
	}
	mustError(t, ts.Get(t, created.Secret, "/plants"), 401, plantstore.CodeTokenInvalid)
	again := mustToken(t, keep(ts.Do(t, Request{Method: "DELETE", Path: "/tokens/" + created.ID, Token: adminSecret})), 200, false)
	if again.RevokedAt == nil || !again.RevokedAt.Equal(*revoked.RevokedAt) || again.Status != "revoked" {
		t.Fatalf("second revoke %+v, want the first revoked_at %v", again, revoked.RevokedAt)
	}
	list = mustTokens(t, keep(ts.Get(t, adminSecret, "/tokens")))
	if len(list) != 2 || list[1].Status != "revoked" {
		t.Fatalf("list after the revoke %+v, want the revoked token listed", list)
	}
	keep(ts.Get(t, adminSecret, "/me"))

	// A token may revoke itself.
	_, selfSecret := ts.issue(t, "alice", 0, plantstore.ScopeTokensManage)
	var me struct {
		TokenID string `json:"token_id"`
	}
	if err := json.Unmarshal(ts.Get(t, selfSecret, "/me").Body, &me); err != nil || me.TokenID == "" {
		t.Fatalf("GET /me: token_id %q, %v", me.TokenID, err)
	}
	mustToken(t, keep(ts.Do(t, Request{Method: "DELETE", Path: "/tokens/" + me.TokenID, Token: selfSecret})), 200, false)
	mustError(t, ts.Get(t, selfSecret, "/me"), 401, plantstore.CodeTokenInvalid)

	for _, b := range bodies[1:] {
		if strings.Contains(string(b), created.Secret) || strings.Contains(string(b), "pst_") {
			t.Fatalf("an answer other than the create holds a secret: %s", b)
		}
	}
	noHashes(t, ts, "alice", bodies)
}

// TestTokens_RevokedElsewhereWithinCacheTTL: a replica that cached the
// token (its own services over the same database) refuses it within its
// cache TTL of a revocation through another.
func TestTokens_RevokedElsewhereWithinCacheTTL(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	const ttl = 500 * time.Millisecond
	other := plantstorehttp.NewServer()
	other.Addr = "127.0.0.1:0"
	other.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := service.New(ts.DB, service.Config{TokenCacheTTL: ttl})
	other.PlantService, other.TokenService, other.WebhookService, other.EventService, other.Storage = svc.Plants, svc.Tokens, svc.Webhooks, svc.Events, ts.DB
	if err := other.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		other.Close(ctx)
	})
	replica := &TestServer{Server: other, URL: other.URL()}

	_, admin := ts.issue(t, "alice", 0, plantstore.KnownScopes...)
	tok, secret := ts.issue(t, "alice", 0, plantstore.ScopePlantsRead)
	if resp := replica.Get(t, secret, "/plants"); resp.Status != 200 { // cached there now
		t.Fatalf("GET /plants on the replica: %d %s", resp.Status, resp.Body)
	}
	mustToken(t, ts.Do(t, Request{Method: "DELETE", Path: "/tokens/" + tok.ID, Token: admin}), 200, false)
	revoked := time.Now()
	for {
		resp := replica.Get(t, secret, "/plants")
		if resp.Status == 401 {
			mustError(t, resp, 401, plantstore.CodeTokenInvalid)
			break
		}
		if resp.Status != 200 {
			t.Fatalf("GET /plants on the replica: %d %s", resp.Status, resp.Body)
		}
		if time.Since(revoked) > ttl+time.Second {
			t.Fatalf("the replica still accepts the revoked token %v after the revocation (cache TTL %v)", time.Since(revoked), ttl)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTokens_Scopes: everything under /tokens needs tokens:manage; a token
// mints only scopes it holds; GET /me needs none.
func TestTokens_Scopes(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	target, _ := ts.issue(t, "alice", 0, plantstore.ScopePlantsRead)
	_, noManage := ts.issue(t, "alice", 0, plantstore.ScopePlantsRead, plantstore.ScopePlantsWrite, plantstore.ScopeWebhooksManage)
	for _, r := range []Request{
		{Method: "GET", Path: "/tokens"},
		{Method: "POST", Path: "/tokens", Body: `{"scopes":["plants:read"]}`},
		{Method: "GET", Path: "/tokens/" + target.ID},
		{Method: "DELETE", Path: "/tokens/" + target.ID},
	} {
		r.Token = noManage
		resp := ts.Do(t, r)
		mustError(t, resp, 403, plantstore.CodeInsufficientScope)
		if got, want := resp.Header.Get("WWW-Authenticate"), `scope="tokens:manage"`; !strings.Contains(got, want) {
			t.Fatalf("%s %s: WWW-Authenticate = %q, want %s", r.Method, r.Path, got, want)
		}
	}
	if got := mustTokens(t, ts.Get(t, mustSecret(t, ts, "alice", plantstore.ScopeTokensManage), "/tokens")); len(got) != 3 {
		t.Fatalf("%d tokens: the 403s changed something", len(got))
	}

	_, reader := ts.issue(t, "alice", 0, plantstore.ScopePlantsRead, plantstore.ScopeTokensManage)
	for _, scopes := range []string{`["plants:write"]`, `["plants:read","webhooks:manage"]`} {
		resp := ts.mint(t, reader, `{"scopes":`+scopes+`}`)
		mustError(t, resp, 403, plantstore.CodeInsufficientScope)
		if !strings.Contains(string(resp.Body), "lacks the") {
			t.Fatalf("minting %s: %s, want the scope the token lacks named", scopes, resp.Body)
		}
	}
	tok := mustToken(t, ts.mint(t, reader, `{"scopes":["tokens:manage","plants:read","plants:read"]}`), 201, true)
	if got, want := tok.Scopes, []string{plantstore.ScopePlantsRead, plantstore.ScopeTokensManage}; !slices.Equal(got, want) {
		t.Fatalf("scopes %v, want %v (sorted, once each)", got, want)
	}
	// A token it minted may mint in turn, within the same bounds.
	mustToken(t, ts.mint(t, tok.Secret, `{"scopes":["plants:read"],"ttl":60}`), 201, true)
	mustError(t, ts.mint(t, tok.Secret, `{"scopes":["plants:write"]}`), 403, plantstore.CodeInsufficientScope)
}

// mustSecret issues a token of owner with scopes and returns its secret.
func mustSecret(t *testing.T, ts *TestServer, owner string, scopes ...string) string {
	t.Helper()
	_, secret := ts.issue(t, owner, 0, scopes...)
	return secret
}

// TestTokens_Expiry: a token mints no expiry later than its own (and none
// without one); a token that never expires mints any up to 100 years.
func TestTokens_Expiry(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	parent, expiring := ts.issue(t, "alice", time.Hour, plantstore.KnownScopes...)
	for _, body := range []string{
		`{"scopes":["plants:read"]}`,
		`{"scopes":["plants:read"],"ttl":3601}`,
		`{"scopes":["plants:read"],"ttl":3155760000}`,
	} {
		resp := ts.mint(t, expiring, body)
		mustError(t, resp, 403, plantstore.CodeInsufficientScope)
		if !strings.Contains(string(resp.Body), parent.ExpiresAt.UTC().Format(time.RFC3339)) {
			t.Fatalf("minting %s: %s, want the token's expiry named", body, resp.Body)
		}
	}
	child := mustToken(t, ts.mint(t, expiring, `{"scopes":["plants:read"],"ttl":3500}`), 201, true)
	if child.ExpiresAt == nil || child.ExpiresAt.After(*parent.ExpiresAt) {
		t.Fatalf("expires_at %v, want by the parent's %v", child.ExpiresAt, parent.ExpiresAt)
	}

	_, forever := ts.issue(t, "bob", 0, plantstore.KnownScopes...)
	for _, tt := range []struct {
		body   string
		status int
		code   int32
	}{
		{`{"scopes":["plants:read"]}`, 201, 0},
		{`{"scopes":["plants:read"],"ttl":3155760000}`, 201, 0},
		{`{"scopes":["plants:read"],"ttl":3155760001}`, 400, plantstore.CodeInvalidBody},
		{`{"scopes":["plants:read"],"ttl":9223372036854775807}`, 400, plantstore.CodeInvalidBody},
		{`{"scopes":["plants:read"],"ttl":0}`, 400, plantstore.CodeInvalidBody},
		{`{"scopes":["plants:read"],"ttl":-1}`, 400, plantstore.CodeInvalidBody},
		{`{"scopes":["plants:read"],"ttl":1.5}`, 400, plantstore.CodeInvalidBody},
		{`{"scopes":["plants:read"],"ttl":"1h"}`, 400, plantstore.CodeInvalidBody},
	} {
		resp := ts.mint(t, forever, tt.body)
		if tt.status == 201 {
			tok := mustToken(t, resp, 201, true)
			if strings.Contains(tt.body, "ttl") != (tok.ExpiresAt != nil) {
				t.Fatalf("%s: expires_at %v", tt.body, tok.ExpiresAt)
			}
			continue
		}
		mustError(t, resp, tt.status, tt.code)
	}
	if got := mustTokens(t, ts.Get(t, forever, "/tokens")); len(got) != 3 {
		t.Fatalf("bob has %d tokens, want 3 (the refused ones made none)", len(got))
	}
}

// TestTokens_InvalidBody: the NewToken schema, strictly.
func TestTokens_InvalidBody(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	admin := mustSecret(t, ts, "alice", plantstore.KnownScopes...)
	for _, tt := range []struct {
		name, body string
		code       int32
	}{
		{"NotJSON", `{"scopes":`, plantstore.CodeMalformedJSON},
		{"NoScopes", `{"ttl":60}`, plantstore.CodeInvalidBody},
		{"EmptyScopes", `{"scopes":[]}`, plantstore.CodeInvalidBody},
		{"UnknownScope", `{"scopes":["plants:eat"]}`, plantstore.CodeInvalidBody},
		{"ScopesNotArray", `{"scopes":"plants:read"}`, plantstore.CodeInvalidBody},
		{"Owner", `{"scopes":["plants:read"],"owner":"bob"}`, plantstore.CodeInvalidBody},
		{"Secret", `{"scopes":["plants:read"],"secret":"pst_chosen"}`, plantstore.CodeInvalidBody},
		{"ExpiresAt", `{"scopes":["plants:read"],"expires_at":"2030-01-01T00:00:00Z"}`, plantstore.CodeInvalidBody},
		{"NullTTL", `{"scopes":["plants:read"],"ttl":null}`, plantstore.CodeInvalidBody},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mustError(t, ts.mint(t, admin, tt.body), 400, tt.code)
		})
	}
	if got := mustTokens(t, ts.Get(t, admin, "/tokens")); len(got) != 1 {
		t.Fatalf("%d tokens after refused bodies, want 1", len(got))
	}
}

// TestTokens_OtherOwner: another owner's token is 404, as an unknown one;
// a malformed id is 400.
func TestTokens_OtherOwner(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t)
	alice := mustSecret(t, ts, "alice", plantstore.KnownScopes...)
	bobTok, bob := ts.issue(t, "bob", 0, plantstore.KnownScopes...)
	for _, id := range []string{bobTok.ID, "tok_0000000000000000"} {
		for _, method := range []string{"GET", "DELETE"} {
			resp := ts.Do(t, Request{Method: method, Path: "/tokens/" + id, Token: alice})
			mustErrorMessage(t, resp, 404, plantstore.CodeTokenNotFound, "token "+id+" not found")
		}
		if resp := ts.Do(t, Request{Method: "HEAD", Path: "/tokens/" + id, Token: alice}); resp.Status != 404 || len(resp.Body) != 0 {
			t.Fatalf("HEAD %s: %d %q, want 404", id, resp.Status, resp.Body)
		}
	}
	if resp := ts.Get(t, bob, "/plants"); resp.Status != 200 {
		t.Fatalf("bob's token after alice's DELETE: %d %s", resp.Status, resp.Body)
	}
	for _, path := range []string{"/tokens/tok_123", "/tokens/whk_0123456789abcdef", "/tokens/tok_0123456789ABCDEF"} {
		mustErrorMessage(t, ts.Get(t, alice, path), 400, plantstore.CodeInvalidPath,
			`invalid path parameter "id": must be a token id: tok_ and 16 lower-case hex digits`)
	}
	if got := mustTokens(t, ts.Get(t, alice, "/tokens")); len(got) != 1 {
		t.Fatalf("alice lists %d tokens, want her 1", len(got))
	}
	mustError(t, ts.Get(t, alice, "/tokens?after="+bobTok.ID), 400, plantstore.CodeInvalidQuery)
}

// TestTokens_Pages: GET /tokens pages oldest first, following Link.
func TestTokens_Pages(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	ts := MustOpenServer(t, func(ts *TestServer) {
		var n int
		ts.Service.Now = func() time.Time { n++; return now.Add(time.Duration(n) * time.Second) }
	})
	var want []string
	for range 5 {
		tok, _ := ts.issue(t, "alice", 0, plantstore.ScopePlantsRead)
		want = append(want, tok.ID)
	}
	adminTok, admin := ts.issue(t, "alice", 0, plantstore.KnownScopes...)
	want = append(want, adminTok.ID)
	ts.issue(t, "bob", 0, plantstore.ScopePlantsRead)

	var got []string
	path := "/tokens?limit=2"
	for range 10 {
		resp := ts.Get(t, admin, path)
		for _, tok := range mustTokens(t, resp) {
			got = append(got, tok.ID)
		}
		link := resp.Header.Get("Link")
		head := ts.Do(t, Request{Method: "HEAD", Path: path, Token: admin})
		if head.Status != 200 || head.Header.Get("Link") != link {
			t.Fatalf("HEAD %s: %d, Link %q; GET's %q", path, head.Status, head.Header.Get("Link"), link)
		}
		if link == "" {
			break
		}
		target, ok := strings.CutPrefix(link, "<")
		target, rel, ok2 := strings.Cut(target, ">")
		if !ok || !ok2 || rel != `; rel="next"` {
			t.Fatalf("Link %q", link)
		}
		u, err := url.Parse(target)
		if err != nil || u.Path != "/tokens" || u.Query().Get("limit") != "2" {
			t.Fatalf("Link %q: want /tokens with limit=2", link)
		}
		path = target
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged %v, want %v (oldest first)", got, want)
	}
	for _, q := range []string{"after=tok_0000000000000000", "after=whk_0123456789abcdef", "after=1", "limit=0", "limit=1001"} {
		mustError(t, ts.Get(t, admin, "/tokens?"+q), 400, plantstore.CodeInvalidQuery)
	}
}

// TestMe: who a token is, for any valid token.
func TestMe(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, func(ts *TestServer) { ts.RateLimit, ts.RateBurst = 100, 100 })
	tok, secret := ts.issue(t, "alice", time.Hour, plantstore.ScopePlantsRead)
	resp := ts.Get(t, secret, "/me")
	if resp.Status != 200 {
		t.Fatalf("GET /me: %d %s", resp.Status, resp.Body)
	}
	var me map[string]any
	if err := json.Unmarshal(resp.Body, &me); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"owner": "alice", "kind": "token", "token_id": tok.ID, "scopes": []any{"plants:read"},
		"expires_at": tok.ExpiresAt.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano), // to the microsecond
	}
	if fmt.Sprint(me) != fmt.Sprint(want) {
		t.Fatalf("GET /me = %v, want %v", me, want)
	}
	if resp.Header.Get("RateLimit") == "" {
		t.Fatal("GET /me: no RateLimit header (the token's bucket is spent like any request's)")
	}
	_, forever := ts.issue(t, "bob", 0, plantstore.ScopeWebhooksManage)
	if body := string(ts.Get(t, forever, "/me").Body); !strings.Contains(body, `"expires_at":null`) || !strings.Contains(body, `"owner":"bob"`) {
		t.Fatalf("GET /me of a token that never expires: %s", body)
	}
	if resp := ts.Do(t, Request{Method: "HEAD", Path: "/me", Token: secret}); resp.Status != 200 || len(resp.Body) != 0 {
		t.Fatalf("HEAD /me: %d %q", resp.Status, resp.Body)
	}
	mustError(t, ts.Get(t, "", "/me"), 401, plantstore.CodeTokenMissing)
	mustError(t, ts.Get(t, "pst_nope", "/me"), 401, plantstore.CodeTokenInvalid)
}

// TestTokens_JWT: a JWT caller manages the opaque tokens of its own
// (namespaced) owner, mints only scopes its JWT carries and no expiry past
// its exp (the verifier's leeway does not extend it); GET /me tells a JWT.
func TestTokens_JWT(t *testing.T) {
	t.Parallel()
	key := oidctest.NewECKey(t, "k1")
	iss := oidctest.NewIssuer(t, key)
	ts := MustOpenServer(t, withJWT(t, oidc.Config{OIDCIssuer: iss.URL}))
	exp := time.Now().Add(10 * time.Minute).Unix()
	jwt := key.Sign(t, claims(iss.URL, "carol", map[string]any{"exp": exp, "scope": "plants:read plants:write tokens:manage openid"}))
	owner := oidc.DefaultOwnerPrefix(iss.URL) + "carol"
	plainCarol, _ := ts.issue(t, "carol", 0, plantstore.KnownScopes...) // not the JWT's owner

	if resp := ts.Post(t, jwt, `{"id":1,"name":"Fern"}`); resp.Status != 200 {
		t.Fatalf("create with the JWT: %d %s", resp.Status, resp.Body)
	}
	minted := mustToken(t, ts.mint(t, jwt, `{"scopes":["plants:read"],"ttl":60}`), 201, true)
	if got := mustPlants(t, ts.Get(t, minted.Secret, "/plants")); len(got) != 1 || got[0]["name"] != "Fern" {
		t.Fatalf("the minted token sees %v, want the JWT owner's plant", got)
	}
	var me map[string]any
	json.Unmarshal(ts.Get(t, minted.Secret, "/me").Body, &me)
	if me["owner"] != owner || me["kind"] != "token" || me["token_id"] != minted.ID {
		t.Fatalf("GET /me of the minted token = %v, want owner %q", me, owner)
	}

	for _, tt := range []struct {
		name, body string
	}{
		{"NoExpiry", `{"scopes":["plants:read"]}`},
		{"PastExp", `{"scopes":["plants:read"],"ttl":601}`},
		{"WithinLeewayPastExp", `{"scopes":["plants:read"],"ttl":620}`},
		{"ScopeNotInJWT", `{"scopes":["webhooks:manage"]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mustError(t, ts.mint(t, jwt, tt.body), 403, plantstore.CodeInsufficientScope)
		})
	}

	list := mustTokens(t, ts.Get(t, jwt, "/tokens"))
	if len(list) != 1 || list[0].ID != minted.ID {
		t.Fatalf("the JWT lists %+v, want only the token it minted", list)
	}
	mustError(t, ts.Get(t, jwt, "/tokens/"+plainCarol.ID), 404, plantstore.CodeTokenNotFound)
	mustError(t, ts.Do(t, Request{Method: "DELETE", Path: "/tokens/" + plainCarol.ID, Token: jwt}), 404, plantstore.CodeTokenNotFound)
	mustToken(t, ts.Do(t, Request{Method: "DELETE", Path: "/tokens/" + minted.ID, Token: jwt}), 200, false)
	mustError(t, ts.Get(t, minted.Secret, "/plants"), 401, plantstore.CodeTokenInvalid)

	resp := ts.Get(t, jwt, "/me")
	me = nil
	if err := json.Unmarshal(resp.Body, &me); err != nil || resp.Status != 200 {
		t.Fatalf("GET /me with the JWT: %d %s", resp.Status, resp.Body)
	}
	want := map[string]any{
		"owner": owner, "kind": "jwt", "token_id": nil,
		"scopes":     []any{"plants:read", "plants:write", "tokens:manage", "openid"},
		"expires_at": time.Unix(exp, 0).UTC().Format(time.RFC3339),
	}
	if fmt.Sprint(me) != fmt.Sprint(want) {
		t.Fatalf("GET /me with the JWT = %v, want %v (expires_at the exp claim, no leeway)", me, want)
	}

	// A JWT without tokens:manage: no token API, GET /me still.
	reader := key.Sign(t, claims(iss.URL, "dave", map[string]any{"scope": "plants:read"}))
	mustError(t, ts.Get(t, reader, "/tokens"), 403, plantstore.CodeInsufficientScope)
	mustError(t, ts.mint(t, reader, `{"scopes":["plants:read"],"ttl":60}`), 403, plantstore.CodeInsufficientScope)
	if resp := ts.Get(t, reader, "/me"); resp.Status != 200 {
		t.Fatalf("GET /me with a JWT of one scope: %d %s", resp.Status, resp.Body)
	}
}

// TestTokens_MaxPerOwner: an owner holds at most Service.MaxTokensPerOwner
// live tokens (here 3; those the operator issued count too): the next
// POST /tokens answers 409 40904 with a message that names the cap, and
// creates nothing; another owner is not concerned, and a revoke makes room.
func TestTokens_MaxPerOwner(t *testing.T) {
	t.Parallel()
	ts := MustOpenServer(t, func(ts *TestServer) { ts.Service.MaxTokensPerOwner = 3 })
	_, admin := ts.issue(t, "eve", 0, plantstore.KnownScopes...)
	var ids []string
	for range 2 {
		ids = append(ids, mustToken(t, ts.mint(t, admin, `{"scopes":["plants:read"]}`), 201, true).ID)
	}
	mustErrorMessage(t, ts.mint(t, admin, `{"scopes":["plants:read"]}`), 409, plantstore.CodeTooManyTokens,
		`owner "eve" has as many live tokens as --max-tokens-per-owner allows (3): revoke one first`)
	if got := mustTokens(t, ts.Get(t, admin, "/tokens")); len(got) != 3 {
		t.Fatalf("eve has %d tokens after the refused mint, want 3", len(got))
	}
	_, bob := ts.issue(t, "bob", 0, plantstore.KnownScopes...)
	mustToken(t, ts.mint(t, bob, `{"scopes":["plants:read"]}`), 201, true)
	mustToken(t, ts.Do(t, Request{Method: "DELETE", Path: "/tokens/" + ids[0], Token: admin}), 200, false)
	mustToken(t, ts.mint(t, admin, `{"scopes":["plants:read"]}`), 201, true)
}

// TestTokens_MintsSpendOwnerRate: every token of an owner spends from one
// bucket, POST /tokens included: a minted token gets no bucket of its own,
// so minting tokens buys no requests. Another owner's bucket is its own.
func TestTokens_MintsSpendOwnerRate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ts := MustOpenServer(t, func(ts *TestServer) {
		ts.RateLimit, ts.RateBurst = 1, 3
		ts.Now = func() time.Time { return now } // the bucket does not refill during the test
	})
	_, admin := ts.issue(t, "eve", 0, plantstore.KnownScopes...)
	minted := mustToken(t, ts.mint(t, admin, `{"scopes":["plants:read"]}`), 201, true)
	mustToken(t, ts.mint(t, admin, `{"scopes":["plants:read"]}`), 201, true)
	resp := ts.Get(t, minted.Secret, "/plants")
	if resp.Status != 200 {
		t.Fatalf("the minted token's first request: %d %s", resp.Status, resp.Body)
	}
	if got, want := resp.Header.Get("RateLimit"), `"token";r=0;t=3`; got != want {
		t.Fatalf("RateLimit = %q, want %q (the owner's bucket, two mints and this request spent)", got, want)
	}
	mustError(t, ts.Get(t, minted.Secret, "/plants"), 429, plantstore.CodeRateLimited)
	mustError(t, ts.mint(t, admin, `{"scopes":["plants:read"]}`), 429, plantstore.CodeRateLimited)
	_, bob := ts.issue(t, "bob", 0, plantstore.KnownScopes...)
	if resp := ts.Get(t, bob, "/plants"); resp.Status != 200 {
		t.Fatalf("another owner: %d %s", resp.Status, resp.Body)
	}
}

// TestTimes_Microseconds: token and webhook times are answered to the
// microsecond, as event times are (RFC 3339 with the fraction), not cut to
// the second.
func TestTimes_Microseconds(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 15, 4, 5, 123456789, time.UTC)
	ts := MustOpenServer(t, func(s *TestServer) { s.Service.Now = func() time.Time { return now } })
	admin := ts.Token(t, "alice", plantstore.ScopePlantsRead, plantstore.ScopeTokensManage, plantstore.ScopeWebhooksManage)
	const created = `"2026-01-02T15:04:05.123456Z"`
	const expires = `"2026-01-02T16:04:05.123456Z"` // created + ttl 3600
	minted := ts.Do(t, Request{Method: "POST", Path: "/tokens", Token: admin, Body: `{"scopes":["plants:read"],"ttl":3600}`})
	var tok struct{ ID, Secret string }
	if err := json.Unmarshal(minted.Body, &tok); err != nil || minted.Status != 201 {
		t.Fatalf("POST /tokens: %d %s", minted.Status, minted.Body)
	}
	hook := ts.Do(t, Request{Method: "POST", Path: "/webhooks", Token: admin, Body: `{"url":"http://127.0.0.1:9/hook"}`})
	var whk struct{ ID string }
	if err := json.Unmarshal(hook.Body, &whk); err != nil || hook.Status != 201 {
		t.Fatalf("POST /webhooks: %d %s", hook.Status, hook.Body)
	}
	disabled := ts.Do(t, Request{Method: "PATCH", Path: "/webhooks/" + whk.ID, Token: admin, Body: `{"enabled":false}`})
	me := ts.Get(t, tok.Secret, "/me")
	revoked := ts.Do(t, Request{Method: "DELETE", Path: "/tokens/" + tok.ID, Token: admin})
	for _, tt := range []struct {
		name string
		resp *Response
		want []string // members and values the body holds
	}{
		{"CreateToken", minted, []string{`"created_at":` + created, `"expires_at":` + expires}},
		{"Me", me, []string{`"expires_at":` + expires}},
		{"RevokeToken", revoked, []string{`"created_at":` + created, `"revoked_at":` + created}},
		{"GetToken", ts.Get(t, admin, "/tokens/"+tok.ID), []string{`"created_at":` + created, `"expires_at":` + expires, `"revoked_at":` + created}},
		{"CreateWebhook", hook, []string{`"created_at":` + created}},
		{"DisableWebhook", disabled, []string{`"created_at":` + created, `"disabled_at":` + created}},
		{"GetWebhook", ts.Get(t, admin, "/webhooks/"+whk.ID), []string{`"created_at":` + created, `"disabled_at":` + created}},
	} {
		for _, want := range tt.want {
			if !strings.Contains(string(tt.resp.Body), want) {
				t.Errorf("%s: %d %s lacks %s", tt.name, tt.resp.Status, tt.resp.Body, want)
			}
		}
	}
}
