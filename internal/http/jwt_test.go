package http_test

import (
	"context"
	"crypto"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/oidc"
	"github.com/plantstore/plantstore/internal/testkit/oidctest"
)

const testAudience = "plantstore-api"

// claims returns valid claims of issuer iss for sub, changed by the extra
// ones (nil deletes).
func claims(iss, sub string, extra map[string]any) map[string]any {
	return oidctest.Claims(iss, sub, map[string]any{
		"aud":   []string{"other-api", testAudience},
		"jti":   "j-" + sub,
		"scope": "plants:read plants:write",
	}, extra)
}

// withJWT configures a server to verify JWTs with cfg.
func withJWT(t *testing.T, cfg oidc.Config) func(*TestServer) {
	t.Helper()
	if cfg.Audience == "" {
		cfg.Audience = testAudience
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := oidc.NewVerifier(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return func(s *TestServer) { s.JWT = v }
}

const invalidTokenChallenge = `Bearer realm="plantstore", error="invalid_token"`

// mustInvalidToken checks a 401 for an invalid token.
func mustInvalidToken(t *testing.T, resp *Response) {
	t.Helper()
	mustError(t, resp, 401, plantstore.CodeTokenInvalid)
	if got := resp.Header.Get("WWW-Authenticate"); got != invalidTokenChallenge {
		t.Fatalf("WWW-Authenticate = %q, want %q", got, invalidTokenChallenge)
	}
}

func TestJWT_OwnerFromClaim(t *testing.T) {
	t.Parallel()
	key := oidctest.NewECKey(t, "k1")
	iss := oidctest.NewIssuer(t, key)
	ts := MustOpenServer(t, withJWT(t, oidc.Config{OIDCIssuer: iss.URL}))
	jwt := key.Sign(t, claims(iss.URL, "carol", nil))
	opaque := ts.Token(t, "dave")

	if resp := ts.Post(t, jwt, `{"id":1,"name":"Fern"}`); resp.Status != 200 {
		t.Fatalf("create with a JWT: %d %s", resp.Status, resp.Body)
	}
	got := mustPlants(t, ts.Get(t, jwt, "/plants"))
	if len(got) != 1 || got[0]["name"] != "Fern" {
		t.Fatalf("carol lists %v, want her Fern", got)
	}
	// The same subject in another JWT (renewed) is the same owner.
	renewed := key.Sign(t, claims(iss.URL, "carol", map[string]any{"jti": "renewed"}))
	if got := mustPlants(t, ts.Get(t, renewed, "/plants")); len(got) != 1 {
		t.Fatalf("carol's renewed JWT lists %v, want her Fern", got)
	}
	// The owner is "jwt:<issuer>#carol": the opaque tokens of owner carol
	// (or of any other) do not see the plant; one made for that very name by
	// an operator does.
	owner := "jwt:" + iss.URL + "#carol"
	if got, want := owner, oidc.DefaultOwnerPrefix(iss.URL)+"carol"; got != want {
		t.Fatalf("default owner = %q, want %q", want, got)
	}
	for _, name := range []string{"dave", "carol"} {
		if got := mustPlants(t, ts.Get(t, ts.Token(t, name), "/plants")); len(got) != 0 {
			t.Fatalf("%s's opaque token lists %v, want nothing", name, got)
		}
	}
	if got := mustPlants(t, ts.Get(t, ts.Token(t, owner), "/plants")); len(got) != 1 {
		t.Fatalf("an opaque token of owner %s lists %v, want the Fern", owner, got)
	}
	// Opaque tokens keep working alongside.
	if resp := ts.Post(t, opaque, `{"id":2,"name":"Moss"}`); resp.Status != 200 {
		t.Fatalf("create with an opaque token: %d %s", resp.Status, resp.Body)
	}
	logs := ts.logs.String()
	if strings.Contains(logs, jwt) || strings.Contains(logs, strings.Split(jwt, ".")[2]) {
		t.Fatal("the log holds the token")
	}
	if !strings.Contains(logs, `"owner":"`+owner+`"`) {
		t.Fatalf("no request log line names owner %s:\n%s", owner, logs)
	}
}

// TestJWT_OwnerNamespace: a JWT whose sub is the
// name of an opaque token's owner (admin) must not reach that owner's
// plants or webhook subscriptions, over real HTTP on a real SQLite file;
// with SharedOwners (--jwt-shared-owners) it does, by the operator's choice.
func TestJWT_OwnerNamespace(t *testing.T) {
	t.Parallel()
	key := oidctest.NewECKey(t, "k1")
	iss := oidctest.NewIssuer(t, key)
	all := plantstore.ScopePlantsRead + " " + plantstore.ScopePlantsWrite + " " + plantstore.ScopeWebhooksManage
	for _, shared := range []bool{false, true} {
		name := "Namespaced"
		if shared {
			name = "SharedOwners"
		}
		t.Run(name, func(t *testing.T) {
			ts := MustOpenServer(t, withJWT(t, oidc.Config{OIDCIssuer: iss.URL, SharedOwners: shared}))
			admin := ts.Token(t, "admin", plantstore.ScopePlantsRead, plantstore.ScopePlantsWrite, plantstore.ScopeWebhooksManage)
			if resp := ts.Post(t, admin, `{"id":1,"name":"Admin's Fern"}`); resp.Status != 200 {
				t.Fatalf("admin's create: %d %s", resp.Status, resp.Body)
			}
			hook := decodeWebhook(t, ts.Do(t, Request{Method: "POST", Path: "/webhooks", Token: admin, Body: `{"url":"http://127.0.0.1:9/hook"}`}), 201)
			jwt := key.Sign(t, claims(iss.URL, "admin", map[string]any{"scope": all}))

			list := mustPlants(t, ts.Get(t, jwt, "/plants"))
			rotate := ts.Do(t, Request{Method: "POST", Path: "/webhooks/" + hook.ID + "/rotate-secret", Token: jwt})
			if !shared {
				if len(list) != 0 {
					t.Fatalf("the JWT of sub admin lists %v, want nothing", list)
				}
				mustError(t, ts.Get(t, jwt, "/plants/1"), 404, plantstore.CodeNotFound)
				mustError(t, ts.Do(t, Request{Method: "DELETE", Path: "/plants/1", Token: jwt}), 404, plantstore.CodeNotFound)
				mustError(t, rotate, 404, plantstore.CodeWebhookNotFound)
				mustError(t, ts.Get(t, jwt, "/webhooks/"+hook.ID), 404, plantstore.CodeWebhookNotFound)
				if resp := ts.Get(t, jwt, "/webhooks"); resp.Status != 200 || string(resp.Body) != "[]" {
					t.Fatalf("the JWT of sub admin lists webhooks: %d %s", resp.Status, resp.Body)
				}
				// Its own plant 1 is another row: admin's stays as it was.
				if resp := ts.Post(t, jwt, `{"id":1,"name":"Impostor"}`); resp.Status != 200 {
					t.Fatalf("the JWT's own create: %d %s", resp.Status, resp.Body)
				}
				if got := mustPlants(t, ts.Get(t, admin, "/plants")); len(got) != 1 || got[0]["name"] != "Admin's Fern" {
					t.Fatalf("admin lists %v, want only its Fern", got)
				}
				// The secret admin got still verifies: nothing was rotated.
				if got := decodeWebhook(t, ts.Do(t, Request{Method: "POST", Path: "/webhooks/" + hook.ID + "/rotate-secret", Token: admin}), 200); got.Secret == nil {
					t.Fatalf("admin's rotate: %+v", got)
				}
				return
			}
			if len(list) != 1 || list[0]["name"] != "Admin's Fern" {
				t.Fatalf("with shared owners, the JWT of sub admin lists %v, want admin's Fern", list)
			}
			if got := decodeWebhook(t, rotate, 200); got.Secret == nil || *got.Secret == *hook.Secret {
				t.Fatalf("with shared owners, the JWT's rotate = %+v, want a new secret", got)
			}
		})
	}
}

func TestJWT_OwnerPrefix(t *testing.T) {
	t.Parallel()
	key := oidctest.NewECKey(t, "k1")
	iss := oidctest.NewIssuer(t, key)
	ts := MustOpenServer(t, withJWT(t, oidc.Config{OIDCIssuer: iss.URL, OwnerPrefix: "idp:"}))
	if resp := ts.Post(t, key.Sign(t, claims(iss.URL, "carol", nil)), `{"id":1,"name":"Fern"}`); resp.Status != 200 {
		t.Fatalf("create: %d %s", resp.Status, resp.Body)
	}
	if got := mustPlants(t, ts.Get(t, ts.Token(t, "idp:carol"), "/plants")); len(got) != 1 {
		t.Fatalf("owner idp:carol lists %v, want the Fern", got)
	}
	if got := mustPlants(t, ts.Get(t, ts.Token(t, "carol"), "/plants")); len(got) != 0 {
		t.Fatalf("owner carol lists %v, want nothing", got)
	}
}

// TestJWT_OwnerLength: owners are at most 256 bytes, prefix included; a
// longer one is refused (401), never cut (two long subjects would then
// share an owner).
func TestJWT_OwnerLength(t *testing.T) {
	t.Parallel()
	key := oidctest.NewECKey(t, "k1")
	iss := oidctest.NewIssuer(t, key)
	prefix := oidc.DefaultOwnerPrefix(iss.URL)
	for _, tt := range []struct {
		name string
		cfg  oidc.Config
		room int // bytes left for the claim
	}{
		{"DefaultPrefix", oidc.Config{OIDCIssuer: iss.URL}, oidc.MaxOwnerBytes - len(prefix)},
		{"LongPrefix", oidc.Config{OIDCIssuer: iss.URL, OwnerPrefix: strings.Repeat("p", oidc.MaxOwnerPrefixBytes)},
			oidc.MaxOwnerBytes - oidc.MaxOwnerPrefixBytes},
		{"SharedOwners", oidc.Config{OIDCIssuer: iss.URL, SharedOwners: true}, oidc.MaxOwnerBytes},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := MustOpenServer(t, withJWT(t, tt.cfg))
			mustPlants(t, ts.Get(t, key.Sign(t, claims(iss.URL, strings.Repeat("s", tt.room), nil)), "/plants"))
			resp := ts.Get(t, key.Sign(t, claims(iss.URL, strings.Repeat("s", tt.room+1), nil)), "/plants")
			mustInvalidToken(t, resp)
			if !strings.Contains(string(resp.Body), "longer than 256 bytes") {
				t.Fatalf("body %s does not say why", resp.Body)
			}
		})
	}
	t.Run("LongSubWithOtherOwnerClaim", func(t *testing.T) {
		ts := MustOpenServer(t, withJWT(t, oidc.Config{OIDCIssuer: iss.URL, OwnerClaim: "email"}))
		resp := ts.Get(t, key.Sign(t, claims(iss.URL, strings.Repeat("s", 257), map[string]any{"email": "erin@example.com"})), "/plants")
		mustInvalidToken(t, resp)
		if !strings.Contains(string(resp.Body), "sub claim is longer than 256 bytes") {
			t.Fatalf("body %s does not say why", resp.Body)
		}
	})
	t.Run("NotPrintable", func(t *testing.T) {
		ts := MustOpenServer(t, withJWT(t, oidc.Config{OIDCIssuer: iss.URL}))
		for _, sub := range []string{"carol\nFAKE LOG LINE", "carol\u202egnp.exe", "\u0000", "car\u0085ol"} {
			resp := ts.Get(t, key.Sign(t, claims(iss.URL, sub, nil)), "/plants")
			mustInvalidToken(t, resp)
			if !strings.Contains(string(resp.Body), "not printable") {
				t.Fatalf("sub %q: body %s does not say why", sub, resp.Body)
			}
		}
	})
}

// TestJWT_RateLimitPerSubject: the rate limit follows the subject in the
// issuer's namespace: renewed JWTs of one subject share a bucket, another
// subject has its own, and so has an opaque token of owner admin when a
// JWT's sub is admin.
func TestJWT_RateLimitPerSubject(t *testing.T) {
	t.Parallel()
	key := oidctest.NewECKey(t, "k1")
	iss := oidctest.NewIssuer(t, key)
	ts := MustOpenServer(t, withJWT(t, oidc.Config{OIDCIssuer: iss.URL}), func(ts *TestServer) {
		ts.RateLimit, ts.RateBurst = 0.001, 1
	})
	jwt := key.Sign(t, claims(iss.URL, "admin", nil))
	mustPlants(t, ts.Get(t, jwt, "/plants"))
	mustError(t, ts.Get(t, jwt, "/plants"), 429, plantstore.CodeRateLimited)
	renewed := key.Sign(t, claims(iss.URL, "admin", map[string]any{"jti": "renewed"}))
	mustError(t, ts.Get(t, renewed, "/plants"), 429, plantstore.CodeRateLimited)
	mustPlants(t, ts.Get(t, key.Sign(t, claims(iss.URL, "carol", nil)), "/plants"))
	mustPlants(t, ts.Get(t, ts.Token(t, "admin"), "/plants"))
}

func TestJWT_OwnerClaimConfigurable(t *testing.T) {
	t.Parallel()
	key := oidctest.NewRSAKey(t, "rsa1")
	iss := oidctest.NewIssuer(t, key)
	ts := MustOpenServer(t, withJWT(t, oidc.Config{OIDCIssuer: iss.URL, OwnerClaim: "email"}))
	jwt := key.Sign(t, claims(iss.URL, "u-123", map[string]any{"email": "erin@example.com"}))
	if resp := ts.Post(t, jwt, `{"id":1,"name":"Fern"}`); resp.Status != 200 {
		t.Fatalf("create: %d %s", resp.Status, resp.Body)
	}
	// The owner is the claim's value in the issuer's namespace: another
	// subject with the same email is the same owner.
	if got := mustPlants(t, ts.Get(t, key.Sign(t, claims(iss.URL, "u-456", map[string]any{"email": "erin@example.com"})), "/plants")); len(got) != 1 {
		t.Fatalf("erin@example.com lists %v, want the Fern", got)
	}
	if got := mustPlants(t, ts.Get(t, ts.Token(t, "jwt:"+iss.URL+"#erin@example.com"), "/plants")); len(got) != 1 {
		t.Fatalf("jwt:<issuer>#erin@example.com lists %v, want the Fern", got)
	}
	for name, v := range map[string]any{"Missing": nil, "Empty": "", "NotString": 42} {
		t.Run(name, func(t *testing.T) {
			extra := map[string]any{"email": v}
			mustInvalidToken(t, ts.Get(t, key.Sign(t, claims(iss.URL, "u-123", extra)), "/plants"))
		})
	}
}

func TestJWT_Scopes(t *testing.T) {
	t.Parallel()
	key := oidctest.NewECKey(t, "k1")
	iss := oidctest.NewIssuer(t, key)
	ts := MustOpenServer(t, withJWT(t, oidc.Config{OIDCIssuer: iss.URL}))
	tests := []struct {
		name        string
		scopes      map[string]any
		read, write bool
	}{
		{"ScopeBoth", map[string]any{"scope": "plants:read plants:write"}, true, true},
		{"ScopeRead", map[string]any{"scope": "plants:read"}, true, false},
		{"ScopeWrite", map[string]any{"scope": "openid plants:write"}, false, true},
		{"ScpArray", map[string]any{"scope": nil, "scp": []string{"plants:read", "plants:write"}}, true, true},
		{"ScpArrayRead", map[string]any{"scope": nil, "scp": []string{"plants:read"}}, true, false},
		{"ScpString", map[string]any{"scope": nil, "scp": "plants:write"}, false, true},
		{"None", map[string]any{"scope": nil}, false, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jwt := key.Sign(t, claims(iss.URL, "sub-"+tt.name, tt.scopes))
			if resp := ts.Get(t, jwt, "/plants"); tt.read {
				mustPlants(t, resp)
			} else {
				mustError(t, resp, 403, plantstore.CodeInsufficientScope)
			}
			body := `{"id":` + string(rune('1'+i)) + `,"name":"Fern"}`
			if resp := ts.Post(t, jwt, body); tt.write {
				if resp.Status != 200 {
					t.Fatalf("create: %d %s", resp.Status, resp.Body)
				}
			} else {
				mustError(t, resp, 403, plantstore.CodeInsufficientScope)
			}
		})
	}
	t.Run("ScopeNotString", func(t *testing.T) {
		mustInvalidToken(t, ts.Get(t, key.Sign(t, claims(iss.URL, "x", map[string]any{"scope": []string{"plants:read"}})), "/plants"))
	})
}

// publicKeyPEM is the PEM of pub, the bytes an HS256 forgery keys its MAC with.
func publicKeyPEM(t *testing.T, pub crypto.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func TestJWT_Refused(t *testing.T) {
	t.Parallel()
	key := oidctest.NewRSAKey(t, "rsa1")
	stranger := oidctest.NewECKey(t, "stranger")
	impostor := oidctest.NewECKey(t, "rsa1") // a key not published, claiming a published kid
	iss := oidctest.NewIssuer(t, key)
	ts := MustOpenServer(t, withJWT(t, oidc.Config{OIDCIssuer: iss.URL}))
	now := time.Now()
	valid := claims(iss.URL, "mallory", nil)
	hs256 := func(input []byte) []byte {
		m := hmac.New(sha256.New, publicKeyPEM(t, key.Private.Public()))
		m.Write(input)
		return m.Sum(nil)
	}
	tests := []struct {
		name string
		jwt  string
		want string // in the message
	}{
		{"Expired", key.Sign(t, claims(iss.URL, "mallory", map[string]any{"exp": now.Add(-2 * time.Minute).Unix(), "iat": now.Add(-time.Hour).Unix()})), "expired"},
		{"NoExpiry", key.Sign(t, claims(iss.URL, "mallory", map[string]any{"exp": nil})), "expired"},
		{"NotYetValid", key.Sign(t, claims(iss.URL, "mallory", map[string]any{"nbf": now.Add(5 * time.Minute).Unix()})), "nbf"},
		{"WrongAudience", key.Sign(t, claims(iss.URL, "mallory", map[string]any{"aud": "other-api"})), "wrong audience"},
		{"NoAudience", key.Sign(t, claims(iss.URL, "mallory", map[string]any{"aud": nil})), "wrong audience"},
		{"WrongIssuer", key.Sign(t, claims(iss.URL, "mallory", map[string]any{"iss": "https://evil.example"})), "wrong issuer"},
		{"IssuerTrailingSlash", key.Sign(t, claims(iss.URL, "mallory", map[string]any{"iss": iss.URL + "/"})), "wrong issuer"},
		{"UnknownKid", stranger.Sign(t, valid), "signature"},
		{"ImpostorKey", impostor.Sign(t, valid), "signature"},
		{"AlgNone", oidctest.HandMade(t, map[string]any{"alg": "none", "typ": "JWT"}, valid, nil), "algorithm"},
		{"AlgNoneWithKid", oidctest.HandMade(t, map[string]any{"alg": "none", "kid": "rsa1"}, valid, nil), "algorithm"},
		{"HS256WithPublicKey", oidctest.HandMade(t, map[string]any{"alg": "HS256", "typ": "JWT", "kid": "rsa1"}, valid, hs256), "algorithm"},
		{"TamperedPayload", func() string {
			parts := strings.Split(key.Sign(t, valid), ".")
			other := strings.Split(key.Sign(t, claims(iss.URL, "admin", nil)), ".")
			return parts[0] + "." + other[1] + "." + parts[2]
		}(), "signature"},
		{"NoSub", key.Sign(t, claims(iss.URL, "", map[string]any{"sub": nil})), "sub claim"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := ts.Get(t, tt.jwt, "/plants")
			mustInvalidToken(t, resp)
			if !strings.Contains(string(resp.Body), tt.want) {
				t.Fatalf("body %s does not say %q", resp.Body, tt.want)
			}
			if strings.Contains(ts.logs.String(), tt.jwt) {
				t.Fatal("the log holds the token")
			}
		})
	}
	t.Run("WithinLeeway", func(t *testing.T) {
		jwt := key.Sign(t, claims(iss.URL, "mallory", map[string]any{"exp": now.Add(-5 * time.Second).Unix(), "nbf": now.Add(5 * time.Second).Unix()}))
		mustPlants(t, ts.Get(t, jwt, "/plants"))
	})
}

func TestJWT_KeyRotation(t *testing.T) {
	t.Parallel()
	old, next := oidctest.NewECKey(t, "2026-01"), oidctest.NewECKey(t, "2026-02")
	iss := oidctest.NewIssuer(t, old)
	// The verifier's clock moves only when the test says: a refresh
	// interval passes without waiting for it.
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	refreshed := func() { mu.Lock(); defer mu.Unlock(); now = now.Add(oidc.DefaultKeyRefreshInterval) }
	ts := MustOpenServer(t, withJWT(t, oidc.Config{OIDCIssuer: iss.URL, Now: clock}))
	mustPlants(t, ts.Get(t, old.Sign(t, claims(iss.URL, "carol", nil)), "/plants"))
	if got := iss.JWKSFetches(); got != 1 {
		t.Fatalf("JWKS fetched %d times, want 1 (cached)", got)
	}
	iss.Publish(old, next)
	refreshed()
	mustPlants(t, ts.Get(t, next.Sign(t, claims(iss.URL, "carol", nil)), "/plants"))
	if got := iss.JWKSFetches(); got != 2 {
		t.Fatalf("JWKS fetched %d times, want 2 (again for the new kid)", got)
	}
	mustPlants(t, ts.Get(t, old.Sign(t, claims(iss.URL, "carol", nil)), "/plants"))
	mustPlants(t, ts.Get(t, next.Sign(t, claims(iss.URL, "carol", nil)), "/plants"))
	if got := iss.JWKSFetches(); got != 2 {
		t.Fatalf("JWKS fetched %d times, want still 2", got)
	}
	// The old key retired: once fetched again, tokens it signs are refused.
	iss.Publish(next)
	refreshed()
	mustInvalidToken(t, ts.Get(t, oidctest.NewECKey(t, "2026-03").Sign(t, claims(iss.URL, "carol", nil)), "/plants")) // forces a fetch
	mustInvalidToken(t, ts.Get(t, old.Sign(t, claims(iss.URL, "carol", nil)), "/plants"))
}

// TestJWT_RefetchThrottled: tokens naming unknown keys cannot make the
// server fetch the JWKS more than once per refresh interval.
func TestJWT_RefetchThrottled(t *testing.T) {
	t.Parallel()
	key := oidctest.NewECKey(t, "k1")
	iss := oidctest.NewIssuer(t, key)
	ts := MustOpenServer(t, withJWT(t, oidc.Config{OIDCIssuer: iss.URL}))
	for i := range 20 {
		forged := oidctest.NewECKey(t, "forged-"+string(rune('a'+i)))
		mustInvalidToken(t, ts.Get(t, forged.Sign(t, claims(iss.URL, "carol", nil)), "/plants"))
	}
	if got := iss.JWKSFetches(); got > 2 {
		t.Fatalf("JWKS fetched %d times for 20 unknown kids, want at most 2", got)
	}
	mustPlants(t, ts.Get(t, key.Sign(t, claims(iss.URL, "carol", nil)), "/plants"))
}

func TestJWT_JWKSFile(t *testing.T) {
	t.Parallel()
	key, rsaKey := oidctest.NewECKey(t, "offline-1"), oidctest.NewRSAKey(t, "offline-2")
	path := oidctest.WriteJWKS(t,
		key.JWK(),
		rsaKey.JWK(),
		jose.JSONWebKey{Key: []byte("a symmetric key is never used"), KeyID: "oct", Algorithm: "HS256"},
	)
	const issuer = "https://idp.internal.example"
	ts := MustOpenServer(t, withJWT(t, oidc.Config{JWKSFile: path, Issuer: issuer}))
	frank := func(extra map[string]any) map[string]any { return claims(issuer, "frank", extra) }
	mustPlants(t, ts.Get(t, key.Sign(t, frank(nil)), "/plants"))
	mustPlants(t, ts.Get(t, rsaKey.Sign(t, frank(nil)), "/plants"))
	mustInvalidToken(t, ts.Get(t, key.Sign(t, frank(map[string]any{"iss": "https://other.example"})), "/plants"))
	mustInvalidToken(t, ts.Get(t, oidctest.NewECKey(t, "offline-1").Sign(t, frank(nil)), "/plants"))
	hs := oidctest.HandMade(t, map[string]any{"alg": "HS256", "kid": "oct"}, frank(nil), func(in []byte) []byte {
		m := hmac.New(sha256.New, []byte("a symmetric key is never used"))
		m.Write(in)
		return m.Sum(nil)
	})
	mustInvalidToken(t, ts.Get(t, hs, "/plants"))
	mustPlants(t, ts.Get(t, ts.Token(t, "frank"), "/plants"))
}
