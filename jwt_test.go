package plantstore_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
)

// compactJWS builds a compact JWS of header and claims with sig as its
// signature (the oidc package's tests check a token go-jose signs too).
func compactJWS(t *testing.T, header, claims map[string]any, sig []byte) string {
	t.Helper()
	enc := func(v any) string {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(data)
	}
	return enc(header) + "." + enc(claims) + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func TestLooksLikeJWT(t *testing.T) {
	_, opaque, err := plantstore.NewToken("x", nil, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	jwt := compactJWS(t, map[string]any{"alg": "ES256", "kid": "k", "typ": "JWT"}, map[string]any{"sub": "x"}, make([]byte, 64))
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{jwt, true},
		{compactJWS(t, map[string]any{"alg": "none"}, map[string]any{"sub": "x"}, nil), true},
		{opaque, false},
		{"abc.def.ghi", false}, // header is not JSON
		{"a.b", false},
		{jwt + ".x", false},
		{"eyJhbGciOiJub25lIn0..sig", false},
		{strings.Replace(jwt, ".", ".+", 1), false},
	} {
		if got := plantstore.LooksLikeJWT(tt.in); got != tt.want {
			t.Errorf("LooksLikeJWT(%.40q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
