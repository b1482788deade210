package http_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	plantstorehttp "github.com/plantstore/plantstore/internal/http"
	"github.com/plantstore/plantstore/internal/oidc"
)

func crc32Hex(s string) string { return fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(s))) }

// The fuzz issuer's key is derived from a fixed seed, so that signed JWT
// seeds in testdata/fuzz stay valid (they expire in 2100).
const (
	fuzzIssuer   = "https://idp.fuzz.example"
	fuzzAudience = "plantstore"
)

var fuzzKey = ed25519.NewKeyFromSeed([]byte("plantstore fuzz issuer key seed!"))

// fuzzJWT signs claims with the fuzz issuer's key (EdDSA).
func fuzzJWT(claims map[string]any) string {
	enc := func(v any) string {
		data, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return base64.RawURLEncoding.EncodeToString(data)
	}
	in := enc(map[string]any{"alg": "EdDSA", "kid": "fuzz", "typ": "JWT"}) + "." + enc(claims)
	return in + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(fuzzKey, []byte(in)))
}

func fuzzClaims(scope string) map[string]any {
	return map[string]any{
		"iss": fuzzIssuer, "aud": fuzzAudience, "sub": "fuzz-sub", "owner": fuzzOwner,
		"iat": 1700000000, "exp": 4102444800, "scope": scope,
	}
}

// withClaim returns claims with one more (or another) claim.
func withClaim(claims map[string]any, name string, value any) map[string]any {
	claims[name] = value
	return claims
}

// withFuzzJWT makes the server verify JWT-shaped bearer values against a
// JWKS file holding the fuzz issuer's key.
func withFuzzJWT(tb testing.TB) func(*plantstorehttp.Server) {
	pub := fuzzKey.Public().(ed25519.PublicKey)
	jwks := fmt.Sprintf(`{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"fuzz","alg":"EdDSA","use":"sig","x":%q}]}`,
		base64.RawURLEncoding.EncodeToString(pub))
	path := filepath.Join(tb.TempDir(), "jwks.json")
	if err := os.WriteFile(path, []byte(jwks), 0o600); err != nil {
		tb.Fatal(err)
	}
	v, err := oidc.NewVerifier(context.Background(), oidc.Config{
		JWKSFile: path, Issuer: fuzzIssuer, Audience: fuzzAudience, OwnerClaim: "owner",
	})
	if err != nil {
		tb.Fatal(err)
	}
	return func(s *plantstorehttp.Server) { s.JWT = v }
}

// FuzzAuthorization sends any Authorization header value (opaque tokens,
// issued-format tokens and JWTs among the seeds) to one of the plant
// routes. The answer is 2xx, 404 (no such plant, once authorized), 401 or
// 403 with the contract's Error (or 429 if the failed-auth limiter steps in):
// never a panic, never a 5xx. Each input comes from its own client address.
func FuzzAuthorization(f *testing.F) {
	for _, v := range []string{
		"Bearer " + fuzzSecret,
		"bearer " + fuzzIssued,
		"BEARER  " + fuzzReadOnly + " ",
		"Bearer " + fuzzWebhooks,
		"Bearer " + fuzzJWT(fuzzClaims("plants:read plants:write")),
		"Bearer " + fuzzJWT(fuzzClaims("webhooks:manage")),
		// Owner claims refused by the owner checks: too long once prefixed, a control character.
		"Bearer " + fuzzJWT(withClaim(fuzzClaims("plants:read"), "owner", strings.Repeat("o", 250))),
		"Bearer " + fuzzJWT(withClaim(fuzzClaims("plants:read"), "owner", "fuzz\nforged log line")),
		"Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
		"Bearer " + strings.Repeat("x", 31),
		"Bearer " + strings.Repeat("x", 257),
		"Bearer pst_" + strings.Repeat("0", 72),
		"Bearer ",
		"Bearer",
		"Basic dXNlcjpwYXNz",
		"Bearer a b",
		"Bearer \x00\xff",
		"",
	} {
		for op := range uint8(4) {
			f.Add(v, op)
		}
	}
	fs := newFuzzServer(f, withFuzzJWT(f))
	var client atomic.Uint32
	f.Fuzz(func(t *testing.T, authorization string, op uint8) {
		var req *http.Request
		switch op % 4 {
		case 0:
			req = httptest.NewRequest(http.MethodGet, "/plants?limit=1", nil)
		case 1:
			req = httptest.NewRequest(http.MethodGet, "/plants/424242", nil)
		case 2:
			req = httptest.NewRequest(http.MethodPost, "/plants", strings.NewReader(`{"id":7,"name":"fuzz"}`))
		case 3:
			req = httptest.NewRequest(http.MethodDelete, "/plants/424242", nil)
		}
		n := client.Add(1)
		req.RemoteAddr = fmt.Sprintf("10.%d.%d.%d:1234", byte(n>>16), byte(n>>8), byte(n))
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		w := fs.do(req)
		switch {
		case w.Code == http.StatusOK || w.Code == http.StatusNoContent:
		case w.Code == http.StatusNotFound && op%2 == 1:
			checkErrorBody(t, w)
		case w.Code == http.StatusUnauthorized || w.Code == http.StatusForbidden || w.Code == http.StatusTooManyRequests:
			checkErrorBody(t, w)
			if w.Code != http.StatusTooManyRequests && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer ") {
				t.Fatalf("status %d without a Bearer challenge", w.Code)
			}
		default:
			t.Fatalf("Authorization %q, op %d: status %d: %s", authorization, op%4, w.Code, w.Body.String())
		}
	})
}
