// Package oidc verifies JWT bearer tokens (JWS compact serialisation)
// against an OpenID Connect issuer's keys (discovery, then its JWKS, cached
// and fetched again on an unknown key id, throttled) or a local JWKS file, and
// turns them into plantstore.Tokens. It is the one package that imports
// go-oidc and go-jose; the transport reaches it through an interface of its
// own (http.JWTVerifier), and tells a JWT from an opaque token with
// plantstore.LooksLikeJWT.
package oidc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/plantstore/plantstore"
)

// JWT verification settings.
const (
	// DefaultOwnerClaim is the claim that names the owner by default.
	DefaultOwnerClaim = "sub"
	// DefaultKeyRefreshInterval is the least time between two JWKS fetches
	// caused by tokens signed with a key the cached set lacks, so a flood of
	// forged key ids cannot turn into a flood of requests to the issuer.
	DefaultKeyRefreshInterval = 10 * time.Second
	// KeyMaxAge is how long fetched keys are used before the JWKS is fetched
	// again, so that a key the issuer removed stops being trusted.
	KeyMaxAge = time.Hour
	// maxJWKSBytes bounds a JWKS or discovery document.
	maxJWKSBytes = 1 << 20
	// MaxOwnerBytes bounds the owner a JWT names, its prefix included,
	// and its sub claim; a longer one is refused (401), never cut.
	MaxOwnerBytes = 256
	// MaxOwnerPrefixBytes bounds the owner prefix, so that at least
	// MaxOwnerBytes-MaxOwnerPrefixBytes bytes are left for the claim.
	MaxOwnerPrefixBytes = 192
)

// ErrOwnerPrefix is wrapped by NewVerifier's error when the owner
// prefix (Config.OwnerPrefix, or the default one made of the issuer) is
// not usable: empty, too long, not printable UTF-8, or set together with
// Config.SharedOwners.
var ErrOwnerPrefix = errors.New("jwt: owner prefix")

// DefaultOwnerPrefix is the owner prefix of a JWT from issuer when none is
// configured: "jwt:" + issuer + "#", so that the owner of a JWT is
// "jwt:<issuer>#<claim>" (for the default claim, the pair (iss, sub) that
// OpenID Connect guarantees unique). No owner of an opaque token can be
// confused with it unless an operator creates a token for such a name.
func DefaultOwnerPrefix(issuer string) string { return "jwt:" + issuer + "#" }

// algorithms are the only signature algorithms accepted: asymmetric ones,
// so never "none" and never an HMAC keyed with a public key.
var algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.PS256, jose.EdDSA}

// Config configures a Verifier. Exactly one of OIDCIssuer and JWKSFile
// is set; Audience is required.
type Config struct {
	// OIDCIssuer is the issuer's URL: its discovery document
	// (OIDCIssuer + "/.well-known/openid-configuration") names the JWKS, which
	// is cached and fetched again when a token names an unknown key.
	OIDCIssuer string
	// JWKSFile is a local JWKS file, for offline setups; Issuer must be set.
	JWKSFile string
	// Issuer is the expected iss; with OIDCIssuer it defaults to (and must
	// equal) OIDCIssuer.
	Issuer string
	// Audience must be one of the token's aud values.
	Audience string
	// OwnerClaim names the claim whose (non-empty string) value, after
	// OwnerPrefix, is the owner; "" means DefaultOwnerClaim.
	OwnerClaim string
	// OwnerPrefix is put before the owner claim's value to make the owner,
	// so that JWT owners live in a namespace of their own, apart from the
	// owners of opaque tokens; "" means DefaultOwnerPrefix(Issuer). At
	// most MaxOwnerPrefixBytes of printable UTF-8.
	OwnerPrefix string
	// SharedOwners makes the owner the claim's value as is: JWTs then share
	// the owners' namespace with opaque tokens, and a JWT whose claim is
	// "admin" reads and changes everything of the opaque tokens' owner admin
	// (plants, webhook subscriptions and their secrets). Only for an issuer
	// trusted to name any owner of this store. Excludes OwnerPrefix.
	SharedOwners bool
	// HTTPClient fetches the discovery document and the JWKS; nil: a client
	// with a 10 s timeout.
	HTTPClient *http.Client
	// KeyRefreshInterval overrides DefaultKeyRefreshInterval when positive.
	KeyRefreshInterval time.Duration
	// Now returns the current time; nil: time.Now.
	Now func() time.Time
}

// Verifier verifies JWT bearer tokens (JWS compact serialisation) against
// an issuer's keys and turns them into tokens: the owner from a claim (after
// the owner prefix), the scopes from scope or scp.
type Verifier struct {
	verifier    *gooidc.IDTokenVerifier
	keys        *keySet
	issuer      string
	ownerClaim  string
	ownerPrefix string // "" with SharedOwners
	now         func() time.Time
}

// NewVerifier checks cfg and loads the keys: the JWKS file, or the
// discovery document and then the JWKS; ctx bounds that start-up work.
func NewVerifier(ctx context.Context, cfg Config) (*Verifier, error) {
	if (cfg.OIDCIssuer == "") == (cfg.JWKSFile == "") {
		return nil, errors.New("jwt: set exactly one of an OIDC issuer and a JWKS file")
	}
	if cfg.Audience == "" {
		return nil, errors.New("jwt: the audience is required")
	}
	if cfg.OwnerClaim == "" {
		cfg.OwnerClaim = DefaultOwnerClaim
	}
	issuer := cfg.Issuer
	if issuer == "" {
		issuer = cfg.OIDCIssuer
	}
	prefix := cfg.OwnerPrefix
	if cfg.SharedOwners {
		if prefix != "" {
			return nil, fmt.Errorf("%w: a prefix and shared owners exclude each other", ErrOwnerPrefix)
		}
	} else {
		if prefix == "" {
			prefix = DefaultOwnerPrefix(issuer)
		}
		if err := checkOwnerPrefix(prefix); err != nil {
			return nil, err
		}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	ks := &keySet{client: client, now: cfg.Now, minRefresh: DefaultKeyRefreshInterval}
	if cfg.KeyRefreshInterval > 0 {
		ks.minRefresh = cfg.KeyRefreshInterval
	}
	if cfg.JWKSFile != "" {
		if cfg.Issuer == "" {
			return nil, errors.New("jwt: a JWKS file needs the expected issuer")
		}
		data, err := os.ReadFile(cfg.JWKSFile)
		if err != nil {
			return nil, fmt.Errorf("jwt: %w", err)
		}
		if ks.keys, err = parseJWKS(data); err != nil {
			return nil, fmt.Errorf("jwt: %s: %w", cfg.JWKSFile, err)
		}
	} else {
		if err := checkIssuerURL(cfg.OIDCIssuer); err != nil {
			return nil, err
		}
		if cfg.Issuer == "" {
			cfg.Issuer = cfg.OIDCIssuer
		} else if cfg.Issuer != cfg.OIDCIssuer {
			return nil, fmt.Errorf("jwt: the expected issuer %q differs from the OIDC issuer %q", cfg.Issuer, cfg.OIDCIssuer)
		}
		provider, err := gooidc.NewProvider(gooidc.ClientContext(ctx, client), cfg.OIDCIssuer)
		if err != nil {
			return nil, fmt.Errorf("jwt: OIDC discovery at %s: %w", cfg.OIDCIssuer, err)
		}
		var meta struct {
			JWKSURI string `json:"jwks_uri"`
		}
		if err := provider.Claims(&meta); err != nil || meta.JWKSURI == "" {
			return nil, fmt.Errorf("jwt: the discovery document of %s names no jwks_uri", cfg.OIDCIssuer)
		}
		ks.url = meta.JWKSURI
		if err := ks.fetch(ctx); err != nil {
			return nil, fmt.Errorf("jwt: %w", err)
		}
	}
	if len(ks.keys) == 0 {
		return nil, errors.New("jwt: the JWKS has no usable signing key (RS256, ES256, PS256 or EdDSA)")
	}
	algs := make([]string, len(algorithms))
	for i, a := range algorithms {
		algs[i] = string(a)
	}
	v := gooidc.NewVerifier(cfg.Issuer, ks, &gooidc.Config{
		ClientID:             cfg.Audience,
		SupportedSigningAlgs: algs,
		// go-oidc compares exp with no leeway: move its clock back instead.
		Now: func() time.Time { return cfg.Now().Add(-plantstore.JWTLeeway) },
	})
	return &Verifier{verifier: v, keys: ks, issuer: cfg.Issuer, ownerClaim: cfg.OwnerClaim, ownerPrefix: prefix, now: cfg.Now}, nil
}

// checkOwnerPrefix requires 1 to MaxOwnerPrefixBytes bytes of printable
// UTF-8.
func checkOwnerPrefix(prefix string) error {
	switch {
	case len(prefix) > MaxOwnerPrefixBytes:
		return fmt.Errorf("%w %.40q... is %d bytes, more than %d (the owner is at most %d bytes): choose a shorter one",
			ErrOwnerPrefix, prefix, len(prefix), MaxOwnerPrefixBytes, MaxOwnerBytes)
	case !printable(prefix):
		return fmt.Errorf("%w %q is empty or not printable UTF-8", ErrOwnerPrefix, prefix)
	}
	return nil
}

// printable reports whether s is non-empty UTF-8 of graphic characters
// (letters, marks, numbers, punctuation, symbols, spaces): no control or
// format characters, so an owner cannot forge log lines or hide its text.
func printable(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsGraphic(r) {
			return false
		}
	}
	return true
}

// checkIssuerURL requires an absolute http(s) URL without query or fragment.
func checkIssuerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("jwt: the OIDC issuer %q is not an absolute http(s) URL", s)
	}
	return nil
}

// Verify checks raw's signature, issuer, audience, expiry and not-before,
// and returns the token it stands for: ID "jwt:" + issuer + "#" + the
// subject (so the rate limit follows the subject across token renewals, in
// the issuer's namespace like the owner), the owner prefix followed by the
// owner claim, the scopes from scope or scp, ExpiresAt its exp plus
// plantstore.JWTLeeway. Every failure is an error that unwraps to a
// CodeTokenInvalid *plantstore.Error, the answer, whose message says what
// was wrong, never the token; the error's own text is the detail to log (go-oidc's
// refusal, or that message). An owner or subject longer than MaxOwnerBytes is
// refused, not cut.
func (v *Verifier) Verify(ctx context.Context, raw string) (*plantstore.Token, error) {
	idt, err := v.verifier.Verify(ctx, raw)
	if err != nil {
		var expired *gooidc.TokenExpiredError
		if errors.As(err, &expired) {
			return nil, &jwtError{plantstore.Errorf(plantstore.CodeTokenInvalid, "the bearer token has expired"), err}
		}
		return nil, &jwtError{plantstore.Errorf(plantstore.CodeTokenInvalid, "the bearer token is not valid: %s", jwtReason(err)), err}
	}
	var claims map[string]json.RawMessage
	if err := idt.Claims(&claims); err != nil {
		return nil, invalidJWT("its claims are not a JSON object")
	}
	now := v.now()
	var nbf *jsonNumericDate
	if c, ok := claims["nbf"]; ok {
		if err := json.Unmarshal(c, &nbf); err != nil {
			return nil, invalidJWT("nbf is not a number")
		}
		if nbf != nil && now.Add(plantstore.JWTLeeway).Before(time.Unix(int64(*nbf), 0)) {
			return nil, invalidJWT("it is not valid yet (nbf)")
		}
	}
	var name string
	if err := json.Unmarshal(claims[v.ownerClaim], &name); err != nil || strings.TrimSpace(name) == "" {
		return nil, invalidJWT(fmt.Sprintf("the %s claim is not a non-empty string", v.ownerClaim))
	}
	if !printable(name) {
		return nil, invalidJWT(fmt.Sprintf("the %s claim is not printable UTF-8", v.ownerClaim))
	}
	owner := v.ownerPrefix + name
	if len(owner) > MaxOwnerBytes {
		if v.ownerPrefix == "" {
			return nil, invalidJWT(fmt.Sprintf("the %s claim is longer than %d bytes", v.ownerClaim, MaxOwnerBytes))
		}
		return nil, invalidJWT(fmt.Sprintf("the owner, a %d-byte prefix and the %s claim, is longer than %d bytes",
			len(v.ownerPrefix), v.ownerClaim, MaxOwnerBytes))
	}
	subject := idt.Subject
	if subject == "" {
		subject = name
	}
	if len(subject) > MaxOwnerBytes {
		return nil, invalidJWT(fmt.Sprintf("the sub claim is longer than %d bytes", MaxOwnerBytes))
	}
	scopes, err := jwtScopes(claims)
	if err != nil {
		return nil, invalidJWT(err.Error())
	}
	tok := &plantstore.Token{
		ID:     plantstore.JWTTokenIDPrefix + v.issuer + "#" + subject,
		Owner:  owner,
		Scopes: scopes,
	}
	if !idt.IssuedAt.IsZero() {
		tok.CreatedAt = idt.IssuedAt.UTC()
	}
	exp := idt.Expiry.Add(plantstore.JWTLeeway).UTC()
	tok.ExpiresAt = &exp
	return tok, nil
}

// jsonNumericDate is a JWT NumericDate (seconds, possibly fractional).
type jsonNumericDate float64

// jwtScopes reads scope (a space-separated string) and scp (an array of
// strings or a space-separated string); both may be present.
func jwtScopes(claims map[string]json.RawMessage) ([]string, error) {
	var scopes []string
	if c, ok := claims["scope"]; ok {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return nil, errors.New("scope is not a string")
		}
		scopes = append(scopes, strings.Fields(s)...)
	}
	if c, ok := claims["scp"]; ok {
		var s string
		var list []string
		if err := json.Unmarshal(c, &s); err == nil {
			scopes = append(scopes, strings.Fields(s)...)
		} else if err := json.Unmarshal(c, &list); err == nil {
			scopes = append(scopes, list...)
		} else {
			return nil, errors.New("scp is neither a string nor an array of strings")
		}
	}
	return scopes, nil
}

// jwtReason says in a few words why go-oidc refused a token. go-oidc v3
// types only TokenExpiredError (handled before this); the other refusals
// (issuer, audience, signature, malformed) are plain fmt errors, so their
// text is all there is to tell them apart. Nothing depends on it but this
// message: an unrecognised refusal is still a 401, "rejected".
func jwtReason(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "malformed jwt"):
		return "malformed JWT or an algorithm other than RS256, ES256, PS256, EdDSA"
	case strings.Contains(msg, "different provider"):
		return "wrong issuer"
	case strings.Contains(msg, "expected audience"):
		return "wrong audience"
	case strings.Contains(msg, "verifies the signature"), strings.Contains(msg, "malformed"):
		return "no key of the issuer verifies its signature"
	case strings.Contains(msg, "JWKS"):
		return "the issuer's keys could not be fetched"
	case strings.Contains(msg, "nbf"):
		return "it is not valid yet (nbf)"
	}
	return "rejected"
}

func invalidJWT(reason string) error {
	e := plantstore.Errorf(plantstore.CodeTokenInvalid, "the bearer token is not valid: %s", reason)
	return &jwtError{e, e}
}

// jwtError is a refusal: the detail to log (Error) and the answer to show
// the client (Unwrap).
type jwtError struct {
	public *plantstore.Error
	detail error
}

func (e *jwtError) Error() string { return e.detail.Error() }
func (e *jwtError) Unwrap() error { return e.public }
