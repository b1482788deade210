package plantstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit/oidctest"
)

func TestLooksLikeJWT(t *testing.T) {
	_, opaque, err := plantstore.NewToken("x", nil, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	jwt := oidctest.HandMade(t, map[string]any{"alg": "ES256", "kid": "k", "typ": "JWT"}, map[string]any{"sub": "x"}, func([]byte) []byte { return make([]byte, 64) })
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{jwt, true},
		{oidctest.HandMade(t, map[string]any{"alg": "none"}, map[string]any{"sub": "x"}, nil), true},
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
