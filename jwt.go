package plantstore

import (
	"bytes"
	"encoding/base64"
	"strings"
	"time"
)

// Bearer values are opaque tokens (token.go) or JWTs, verified by
// internal/oidc and never stored; the Token a JWT stands for has IsJWT.

// JWTTokenIDPrefix starts the ID of a token that stands for a verified JWT.
const JWTTokenIDPrefix = "jwt:"

// JWTLeeway is the clock skew allowed on a JWT's exp and nbf; its token
// expires at exp plus JWTLeeway (the transport takes it off where the JWT's
// own exp matters: a token it mints, GET /me).
const JWTLeeway = 30 * time.Second

// IsJWT reports whether the token stands for a verified JWT.
func (t *Token) IsJWT() bool { return strings.HasPrefix(t.ID, JWTTokenIDPrefix) }

// LooksLikeJWT reports whether secret has the shape of a compact JWS: three
// base64url segments (an empty signature is then refused) whose first is a
// JSON object. Opaque tokens never have that shape.
func LooksLikeJWT(secret string) bool {
	header, rest, ok := strings.Cut(secret, ".")
	if !ok || header == "" {
		return false
	}
	payload, sig, ok := strings.Cut(rest, ".")
	if !ok || payload == "" || strings.Contains(sig, ".") {
		return false
	}
	if !isBase64URL(payload) || !isBase64URL(sig) {
		return false
	}
	h, err := base64.RawURLEncoding.DecodeString(header)
	return err == nil && bytes.HasPrefix(bytes.TrimSpace(h), []byte("{"))
}

func isBase64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
