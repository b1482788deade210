// Package oidctest is a JWT issuer for tests: signing keys (ES256 on P-256,
// RS256 on RSA 2048, EdDSA on Ed25519) that sign compact JWS tokens, their
// JWK sets as bytes or as a JWKS file, and Issuer, an OpenID Connect issuer
// on 127.0.0.1 that serves its discovery document and its JWKS, whose
// published keys a test can change (key rotation) and whose JWKS fetches it
// can count.
//
// It does not import package oidc, whose own tests use it, as do those of
// http and cmd/plantstore.
package oidctest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Key is a signing key of a test issuer.
type Key struct {
	// ID is the key id: the kid of its JWK and of the tokens it signs.
	ID string
	// Alg is the algorithm it signs with (ES256, RS256 or EdDSA).
	Alg jose.SignatureAlgorithm
	// Private is the private key (*ecdsa.PrivateKey, *rsa.PrivateKey or
	// ed25519.PrivateKey); Private.Public() is the public key a verifier
	// holds.
	Private crypto.Signer
}

// NewECKey returns a new ES256 key (P-256) with key id kid.
func NewECKey(t testing.TB, kid string) *Key {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &Key{ID: kid, Alg: jose.ES256, Private: priv}
}

// NewRSAKey returns a new RS256 key (RSA, 2048 bits) with key id kid.
func NewRSAKey(t testing.TB, kid string) *Key {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &Key{ID: kid, Alg: jose.RS256, Private: priv}
}

// NewEdKey returns a new EdDSA key (Ed25519) with key id kid.
func NewEdKey(t testing.TB, kid string) *Key {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &Key{ID: kid, Alg: jose.EdDSA, Private: priv}
}

// JWK is the public JWK of k: its public key, kid, alg and use "sig".
func (k *Key) JWK() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.Private.Public(), KeyID: k.ID, Algorithm: string(k.Alg), Use: "sig"}
}

// Sign returns the compact JWS of claims signed with k, with the header's
// alg, kid and typ "JWT".
func (k *Key) Sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: k.Alg, Key: jose.JSONWebKey{Key: k.Private, KeyID: k.ID}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// HandMade builds a compact JWS of header and claims whose signature is
// sign's over the signing input (sign nil: an empty signature), for tokens
// no JOSE library would make (alg none, HS256 with a public key, a bad
// signature).
func HandMade(t testing.TB, header, claims map[string]any, sign func(input []byte) []byte) string {
	t.Helper()
	enc := func(v any) string {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(data)
	}
	input := enc(header) + "." + enc(claims)
	var sig []byte
	if sign != nil {
		sig = sign([]byte(input))
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// Claims returns the claims of a token of issuer iss for subject sub,
// issued now and valid for five minutes (iss, sub, iat, exp), with the
// claims of each of changes set over them in turn; a nil value deletes
// that claim.
func Claims(iss, sub string, changes ...map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{
		"iss": iss,
		"sub": sub,
		"iat": now.Unix(),
		"exp": now.Add(5 * time.Minute).Unix(),
	}
	for _, change := range changes {
		for k, v := range change {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
	}
	return c
}

// JWKS returns the JSON of the JWK set of keys (Key.JWK, or any other JWK,
// such as a symmetric one a verifier must ignore).
func JWKS(t testing.TB, keys ...jose.JSONWebKey) []byte {
	t.Helper()
	data, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	if err != nil {
		t.Error(err) // not Fatal: Issuer calls it from its handler
	}
	return data
}

// WriteJWKS writes the JWKS of keys to jwks.json (mode 0600) in a new
// temporary directory of t and returns its path.
func WriteJWKS(t testing.TB, keys ...jose.JSONWebKey) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, JWKS(t, keys...), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Issuer is an OpenID Connect issuer on 127.0.0.1, closed when the test
// ends: its discovery document at /.well-known/openid-configuration names
// the issuer URL and the JWKS at /jwks, which holds the public JWKs of the
// published keys.
type Issuer struct {
	// URL is the issuer's URL ("http://127.0.0.1:<port>"), its iss.
	URL string

	jwksFetches atomic.Int32
	mu          sync.Mutex
	published   []*Key
}

// NewIssuer starts an issuer on a free port of 127.0.0.1 that publishes
// keys.
func NewIssuer(t testing.TB, keys ...*Key) *Issuer {
	t.Helper()
	iss := &Issuer{published: keys}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                iss.URL,
			"jwks_uri":                              iss.URL + "/jwks",
			"authorization_endpoint":                iss.URL + "/authorize",
			"token_endpoint":                        iss.URL + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256", "EdDSA"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		iss.jwksFetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(iss.jwks(t))
	})
	// 127.0.0.1 only: httptest's own listener may fall back to [::1] or
	// follow the -httptest.serve flag.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(mux)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	iss.URL = srv.URL
	return iss
}

// jwks is the JWKS of the published keys.
func (iss *Issuer) jwks(t testing.TB) []byte {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	var set []jose.JSONWebKey
	for _, k := range iss.published {
		set = append(set, k.JWK())
	}
	return JWKS(t, set...)
}

// Publish replaces the published keys: the JWKS served from now on holds
// exactly keys.
func (iss *Issuer) Publish(keys ...*Key) {
	iss.mu.Lock()
	iss.published = keys
	iss.mu.Unlock()
}

// JWKSFetches is how many times the JWKS has been fetched.
func (iss *Issuer) JWKSFetches() int { return int(iss.jwksFetches.Load()) }
