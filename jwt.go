package plantstore

import (
	"bytes"
	"encoding/base64"
	"strings"
	"time"
)

// Bearer values come in two shapes: the opaque tokens of the TokenStore
// (token.go) and JWTs, verified against an issuer's keys by the oidc package
// and never stored. The transport tells them apart with LooksLikeJWT; the
// token a verified JWT stands for is a Token with IsJWT.

// JWTTokenIDPrefix starts the ID of a token that stands for a verified JWT
// (the verifier makes those; they are never stored).
const JWTTokenIDPrefix = "jwt:"

// JWTLeeway is the clock skew allowed on a JWT's exp and nbf. The token a
// verified JWT stands for expires at its exp plus JWTLeeway; where the JWT's
// own exp matters (the expiry of a token it mints, GET /me), the transport
// takes JWTLeeway off again.
const JWTLeeway = 30 * time.Second

// IsJWT reports whether the token stands for a verified JWT rather than
// an opaque token of the TokenStore.
func (t *Token) IsJWT() bool { return strings.HasPrefix(t.ID, JWTTokenIDPrefix) }

// LooksLikeJWT reports whether secret has the shape of a JWS in compact
// serialisation: three base64url segments (the signature may be empty, as in
// an unsigned token, which is then refused) whose first is a JSON object.
// Plant store tokens never have that shape.
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
