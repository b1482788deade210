package plantstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Scopes a token can carry.
const (
	ScopePlantsRead  = "plants:read"
	ScopePlantsWrite = "plants:write"
	// ScopeTokensManage grants the token API (/tokens) over the owner's
	// opaque tokens, within the caller's own scopes and expiry.
	ScopeTokensManage = "tokens:manage"
)

// KnownScopes lists every scope the service checks.
var KnownScopes = []string{ScopePlantsRead, ScopePlantsWrite, ScopeWebhooksManage, ScopeTokensManage}

// DefaultScopes are given to a new token when none are named.
var DefaultScopes = []string{ScopePlantsRead, ScopePlantsWrite}

// TokenPrefix starts every bearer token, so secret scanners can find leaked ones.
const TokenPrefix = "pst_"

// A token secret is TokenPrefix, 64 hex digits (32 random bytes, 256 bits) and
// 8 hex digits of CRC-32 over those 64, which lets the service reject a
// mistyped or truncated token without a database lookup.
const (
	tokenRandomBytes = 32
	tokenSecretLen   = len(TokenPrefix) + 2*tokenRandomBytes + 8
)

// Token is an issued bearer token. Only a SHA-256 hash of its secret is
// stored; the secret itself is shown once, when it is created.
type Token struct {
	ID        string // public identifier, "tok_" + 16 hex digits
	Owner     string
	Scopes    []string
	Hash      []byte // SHA-256 of the secret
	CreatedAt time.Time
	ExpiresAt *time.Time // nil: never expires
	RevokedAt *time.Time // nil: not revoked
	// Last4 is the secret's last four characters (of its checksum: they
	// reveal nothing usable), to tell tokens apart in a list; "" when
	// unknown or the secret was supplied by an operator.
	Last4 string
}

// HasScope reports whether the token carries scope.
func (t *Token) HasScope(scope string) bool { return slices.Contains(t.Scopes, scope) }

// Active reports whether the token is neither revoked nor expired at now.
func (t *Token) Active(now time.Time) bool {
	return t.RevokedAt == nil && (t.ExpiresAt == nil || now.Before(*t.ExpiresAt))
}

// Status is "active", "revoked" or "expired" at now.
func (t *Token) Status(now time.Time) string {
	switch {
	case t.RevokedAt != nil:
		return "revoked"
	case t.ExpiresAt != nil && !now.Before(*t.ExpiresAt):
		return "expired"
	}
	return "active"
}

// TokenRequest asks for a new token.
type TokenRequest struct {
	Owner  string
	Scopes []string      // nil: DefaultScopes
	TTL    time.Duration // lifetime; 0: never expires; at most MaxTokenTTL
	Secret string        // an operator's secret (NewTokenFromSecret); "": generated
}

// TokenFilter selects one page of an owner's tokens, oldest first (by
// creation time, then id).
type TokenFilter struct {
	Owner string
	After *string // only tokens after this one (exclusive), a token of Owner
	Limit int     // page size, 1..MaxPageSize (TokenService: 0 means DefaultPageSize)
}

// ValidTokenID reports whether id is "tok_" and 16 lower-case hex digits.
func ValidTokenID(id string) bool {
	if len(id) != 20 || !strings.HasPrefix(id, "tok_") {
		return false
	}
	for _, c := range []byte(id[4:]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// TokenService issues, lists, revokes and checks bearer tokens. Errors a
// client may see are *Error values.
type TokenService interface {
	// CreateToken issues a token and returns it with its secret, shown
	// this once. It is the operator's (`token create`, the bootstrap token):
	// the owner's cap of live tokens does not apply, though its tokens count.
	CreateToken(ctx context.Context, req TokenRequest) (*Token, string, error)
	// CreateFirstToken issues the token only if no token exists at all,
	// atomically (several replicas may start at once).
	CreateFirstToken(ctx context.Context, req TokenRequest) (tok *Token, secret string, created bool, err error)
	// FindTokens returns every token, oldest first.
	FindTokens(ctx context.Context) ([]*Token, error)
	// RevokeToken revokes the token or returns a CodeNotFound error.
	// Revoking a revoked token is a no-op.
	RevokeToken(ctx context.Context, id string) error
	// Authenticate returns the active token whose secret this is, or a
	// CodeTokenInvalid error saying why not.
	Authenticate(ctx context.Context, secret string) (*Token, error)

	// The token API: a caller manages its own owner's opaque tokens.

	// MintToken issues a token for caller's owner with scopes (at least
	// one) and a lifetime (0: none) within what caller holds: its scopes,
	// its expiry (else CodeInsufficientScope), MaxTokenTTL (CodeInvalidBody)
	// and the owner's cap of live tokens (CodeTooManyTokens).
	MintToken(ctx context.Context, caller *Token, scopes []string, ttl time.Duration) (*Token, string, error)
	// FindOwnerTokens returns a page of the owner's tokens and whether more follow.
	FindOwnerTokens(ctx context.Context, f TokenFilter) ([]*Token, bool, error)
	// FindOwnerToken returns the owner's token id, or a CodeTokenNotFound
	// error (also for another owner's token).
	FindOwnerToken(ctx context.Context, owner, id string) (*Token, error)
	// RevokeOwnerToken revokes the owner's token id (again: no change) and
	// returns it. Another owner's token is CodeTokenNotFound.
	RevokeOwnerToken(ctx context.Context, owner, id string) (*Token, error)
}

// TokenStore is a backend's tokens: rows in, rows out, sentinel errors.
type TokenStore interface {
	// InsertToken stores t, or returns ErrExists when its id or hash is taken.
	InsertToken(ctx context.Context, t *Token) error
	// InsertFirstToken stores t only if the table is empty, atomically
	// across processes, and reports whether it did.
	InsertFirstToken(ctx context.Context, t *Token) (inserted bool, err error)
	// FindTokenByHash returns the token whose secret hashes to hash,
	// revoked or expired ones included, or ErrNotFound.
	FindTokenByHash(ctx context.Context, hash []byte) (*Token, error)
	// ListTokens returns every token, oldest first.
	ListTokens(ctx context.Context) ([]*Token, error)
	// RevokeToken sets the token's RevokedAt to at unless it is revoked
	// already, or returns ErrNotFound.
	RevokeToken(ctx context.Context, id string, at time.Time) error
	// PruneTokens deletes at most limit tokens revoked or expired before
	// before and returns how many. It never deletes the newest token, so that
	// InsertFirstToken never takes a database that has had tokens for empty.
	PruneTokens(ctx context.Context, before time.Time, limit int) (int, error)

	// InsertOwnerToken stores t unless t.Owner has max live tokens at
	// t.CreatedAt (ErrLimit) or its id or hash is taken (ErrExists). The
	// count and the insert are one step: concurrent inserts never pass max.
	InsertOwnerToken(ctx context.Context, t *Token, max int) error
	// ListOwnerTokens returns at most f.Limit of f.Owner's tokens, oldest
	// first (created_at, then id); an f.After not of f.Owner is ErrNotFound.
	ListOwnerTokens(ctx context.Context, f TokenFilter) ([]*Token, error)
	// FindOwnerToken returns owner's token id, or ErrNotFound (also when
	// the token is another owner's).
	FindOwnerToken(ctx context.Context, owner, id string) (*Token, error)
	// RevokeOwnerToken sets RevokedAt to at unless set, and returns the
	// token; ErrNotFound when owner has no token id.
	RevokeOwnerToken(ctx context.Context, owner, id string, at time.Time) (*Token, error)
}

// DefaultMaxTokensPerOwner is how many live tokens one owner may hold through
// the token API unless --max-tokens-per-owner says otherwise.
const DefaultMaxTokensPerOwner = 1000

// MaxOwnerLength is the longest owner name a token may have, in bytes.
const MaxOwnerLength = 256

// ValidateOwner checks an owner name: 1 to MaxOwnerLength bytes of UTF-8,
// every character printable (unicode.IsPrint), so that no tab, newline or
// bidirectional override can forge or hide rows of `token list`.
func ValidateOwner(owner string) error {
	switch {
	case owner == "":
		return Errorf(CodeInvalidBody, "owner must not be empty")
	case len(owner) > MaxOwnerLength:
		return Errorf(CodeInvalidBody, "owner must have at most %d bytes, not %d", MaxOwnerLength, len(owner))
	case !utf8.ValidString(owner):
		return Errorf(CodeInvalidBody, "owner must be valid UTF-8")
	}
	for i, r := range owner {
		if !unicode.IsPrint(r) {
			return Errorf(CodeInvalidBody, "owner must have printable characters only, not %U (at byte %d)", r, i)
		}
	}
	return nil
}

// MaxTokenTTL is the longest lifetime a token may have: 100 years. A later
// expiry is refused: nothing needs one, and SQLite keeps times as int64 Unix
// nanoseconds, which overflow in 2262.
const MaxTokenTTL = 36525 * 24 * time.Hour

// ValidateTokenTTL checks a token's lifetime: 0 (never expires) to MaxTokenTTL.
func ValidateTokenTTL(ttl time.Duration) error {
	switch {
	case ttl < 0:
		return Errorf(CodeInvalidBody, "ttl must not be negative")
	case ttl > MaxTokenTTL:
		return Errorf(CodeInvalidBody, "ttl must be at most 100 years (876600h), not %s", ttl)
	}
	return nil
}

// NewToken makes a token for owner (trimmed, then ValidateOwner) with scopes
// and a lifetime (0: none) and returns it with its secret.
func NewToken(owner string, scopes []string, ttl time.Duration, now time.Time) (*Token, string, error) {
	owner = strings.TrimSpace(owner)
	if err := ValidateOwner(owner); err != nil {
		return nil, "", err
	}
	if len(scopes) == 0 {
		scopes = DefaultScopes
	}
	for _, s := range scopes {
		if !slices.Contains(KnownScopes, s) {
			return nil, "", Errorf(CodeInvalidBody, "unknown scope %q (known: %s)", s, strings.Join(KnownScopes, ", "))
		}
	}
	if err := ValidateTokenTTL(ttl); err != nil {
		return nil, "", err
	}
	buf := make([]byte, tokenRandomBytes+8)
	if _, err := rand.Read(buf); err != nil {
		return nil, "", fmt.Errorf("token: random: %w", err)
	}
	random := hex.EncodeToString(buf[:tokenRandomBytes])
	secret := fmt.Sprintf("%s%s%08x", TokenPrefix, random, crc32.ChecksumIEEE([]byte(random)))
	t := &Token{
		ID:        "tok_" + hex.EncodeToString(buf[tokenRandomBytes:]),
		Owner:     owner,
		Scopes:    slices.Compact(slices.Sorted(slices.Values(scopes))),
		Hash:      HashToken(secret),
		CreatedAt: now.UTC(),
		Last4:     secret[len(secret)-4:],
	}
	if ttl > 0 {
		exp := now.Add(ttl).UTC()
		t.ExpiresAt = &exp
	}
	return t, secret, nil
}

// Bounds on the length of an operator-supplied token (see NewTokenFromSecret).
const (
	MinSuppliedTokenLen = 32
	MaxSuppliedTokenLen = 256
)

// PlausibleToken reports whether secret can be a token of this service: one
// it issued (prefix, length and checksum right) or one an operator supplied
// (no prefix). It lets the service refuse garbage without a lookup.
func PlausibleToken(secret string) bool {
	if !strings.HasPrefix(secret, TokenPrefix) {
		return validSuppliedSecret(secret) == nil
	}
	if len(secret) != tokenSecretLen {
		return false
	}
	random, sum := secret[len(TokenPrefix):tokenSecretLen-8], secret[tokenSecretLen-8:]
	want, err := strconv.ParseUint(sum, 16, 32)
	// ParseUint takes upper-case digits too; the issued form is lower-case.
	return err == nil && sum == strings.ToLower(sum) && uint32(want) == crc32.ChecksumIEEE([]byte(random))
}

func validSuppliedSecret(secret string) error {
	if n := len(secret); n < MinSuppliedTokenLen || n > MaxSuppliedTokenLen {
		return Errorf(CodeInvalidBody, "a supplied token must have %d to %d characters", MinSuppliedTokenLen, MaxSuppliedTokenLen)
	}
	for _, c := range []byte(secret) {
		if c <= ' ' || c > '~' {
			return Errorf(CodeInvalidBody, "a supplied token must be visible ASCII characters only")
		}
	}
	return nil
}

// NewTokenFromSecret makes a token for owner with a given secret (an
// operator's, from a secrets manager): one the service generated, or 32 to
// 256 visible ASCII characters without its prefix.
func NewTokenFromSecret(secret, owner string, scopes []string, now time.Time) (*Token, error) {
	if strings.HasPrefix(secret, TokenPrefix) {
		if !PlausibleToken(secret) {
			return nil, Errorf(CodeInvalidBody, "a supplied token that starts with %s must be one plantstore generated", TokenPrefix)
		}
	} else if err := validSuppliedSecret(secret); err != nil {
		return nil, err
	}
	t, _, err := NewToken(owner, scopes, 0, now)
	if err != nil {
		return nil, err
	}
	t.Hash = HashToken(secret)
	t.Last4 = "" // a supplied secret has no checksum to show
	return t, nil
}

// HashToken returns the SHA-256 of a token secret: what is stored and looked
// up. Secrets have 256 random bits, so a fast hash is right (no brute force).
func HashToken(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}
