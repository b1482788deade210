package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/prune"
)

// TokenService implements plantstore.TokenService over a TokenStore.
type TokenService struct {
	store   plantstore.TokenStore
	now     func() time.Time
	ttl     time.Duration
	onCache func(hit bool)
	cache   tokenCache
	// maxPerOwner bounds the live tokens MintToken leaves an owner.
	maxPerOwner int
}

// issue makes the token req asks for, with its secret.
func (s *TokenService) issue(req plantstore.TokenRequest) (*plantstore.Token, string, error) {
	now := s.now()
	if req.Secret == "" {
		return plantstore.NewToken(req.Owner, req.Scopes, req.TTL, now)
	}
	if err := plantstore.ValidateTokenTTL(req.TTL); err != nil {
		return nil, "", err
	}
	t, err := plantstore.NewTokenFromSecret(req.Secret, req.Owner, req.Scopes, now)
	if err != nil {
		return nil, "", err
	}
	if req.TTL > 0 {
		exp := now.Add(req.TTL).UTC()
		t.ExpiresAt = &exp
	}
	return t, req.Secret, nil
}

// CreateToken issues a token and stores its hash.
func (s *TokenService) CreateToken(ctx context.Context, req plantstore.TokenRequest) (*plantstore.Token, string, error) {
	t, secret, err := s.issue(req)
	if err != nil {
		return nil, "", err
	}
	if err := s.store.InsertToken(ctx, t); err != nil {
		return nil, "", storeError("create token", err)
	}
	return t, secret, nil
}

// CreateFirstToken issues a token only if none exists at all.
func (s *TokenService) CreateFirstToken(ctx context.Context, req plantstore.TokenRequest) (*plantstore.Token, string, bool, error) {
	t, secret, err := s.issue(req)
	if err != nil {
		return nil, "", false, err
	}
	created, err := s.store.InsertFirstToken(ctx, t)
	if err != nil {
		return nil, "", false, storeError("create first token", err)
	}
	if !created {
		return nil, "", false, nil
	}
	return t, secret, true, nil
}

// FindTokens returns every token, oldest first.
func (s *TokenService) FindTokens(ctx context.Context) ([]*plantstore.Token, error) {
	tokens, err := s.store.ListTokens(ctx)
	if err != nil {
		return nil, storeError("find tokens", err)
	}
	return tokens, nil
}

// RevokeToken revokes the token as of now.
func (s *TokenService) RevokeToken(ctx context.Context, id string) error {
	err := s.store.RevokeToken(ctx, id, s.now().UTC())
	if errors.Is(err, plantstore.ErrNotFound) {
		return plantstore.Errorf(plantstore.CodeNotFound, "token %s not found", id)
	} else if err != nil {
		return storeError("revoke token", err)
	}
	return nil
}

// MintToken issues a token for caller's owner, within what caller holds:
// scopes it has, an expiry no later than its own, at most
// plantstore.MaxTokenTTL. The checks and the new token's times use one
// reading of the clock, so a token minted for exactly the time caller has
// left expires with it.
func (s *TokenService) MintToken(ctx context.Context, caller *plantstore.Token, scopes []string, ttl time.Duration) (*plantstore.Token, string, error) {
	if caller == nil {
		return nil, "", errors.New("service: mint token: no caller")
	}
	if len(scopes) == 0 {
		return nil, "", plantstore.Errorf(plantstore.CodeInvalidBody, "scopes must name at least one scope (known: %s)", strings.Join(plantstore.KnownScopes, ", "))
	}
	for _, scope := range scopes {
		if !slices.Contains(plantstore.KnownScopes, scope) {
			return nil, "", plantstore.Errorf(plantstore.CodeInvalidBody, "unknown scope %q (known: %s)", scope, strings.Join(plantstore.KnownScopes, ", "))
		}
	}
	switch {
	case ttl < 0:
		return nil, "", plantstore.Errorf(plantstore.CodeInvalidBody, "ttl must not be negative")
	case ttl > plantstore.MaxTokenTTL:
		return nil, "", plantstore.Errorf(plantstore.CodeInvalidBody, "ttl must be at most 100 years (%d seconds)", plantstore.MaxTokenTTL/time.Second)
	}
	for _, scope := range scopes {
		if !caller.HasScope(scope) {
			return nil, "", plantstore.Errorf(plantstore.CodeInsufficientScope, "this token lacks the %s scope: a token can mint only scopes it holds", scope)
		}
	}
	now := s.now()
	if exp := caller.ExpiresAt; exp != nil {
		left := max(0, exp.Sub(now)/time.Second)
		if ttl == 0 {
			return nil, "", plantstore.Errorf(plantstore.CodeInsufficientScope,
				"this token expires at %s: a token it mints must expire too, by then (a ttl of at most %d seconds)", exp.UTC().Format(time.RFC3339), left)
		}
		if now.Add(ttl).After(*exp) {
			return nil, "", plantstore.Errorf(plantstore.CodeInsufficientScope,
				"this token expires at %s: a token it mints cannot outlive it (a ttl of at most %d seconds)", exp.UTC().Format(time.RFC3339), left)
		}
	}
	// The owner as it is: NewToken trims it, and a name that is not a
	// valid owner must not become another one.
	if owner := caller.Owner; strings.TrimSpace(owner) != owner || plantstore.ValidateOwner(owner) != nil {
		return nil, "", plantstore.Errorf(plantstore.CodeInsufficientScope, "the owner %q cannot hold opaque tokens", owner)
	}
	t, secret, err := plantstore.NewToken(caller.Owner, scopes, ttl, now)
	if err != nil {
		return nil, "", err
	}
	switch err := s.store.InsertOwnerToken(ctx, t, s.maxPerOwner); {
	case errors.Is(err, plantstore.ErrLimit):
		return nil, "", &plantstore.Error{Code: plantstore.CodeTooManyTokens, Err: err,
			Message: fmt.Sprintf("owner %q has as many live tokens as --max-tokens-per-owner allows (%d): revoke one first", t.Owner, s.maxPerOwner)}
	case err != nil:
		return nil, "", storeError("mint token", err)
	}
	return t, secret, nil
}

// PruneTokens deletes at most limit tokens revoked or expired before the
// service's now minus retention (never the newest token), and returns how
// many (fewer than limit: none is left).
func (s *TokenService) PruneTokens(ctx context.Context, retention time.Duration, limit int) (int, error) {
	n, err := s.store.PruneTokens(ctx, s.now().Add(-retention), limit)
	if err != nil {
		return n, storeError("prune tokens", err)
	}
	return n, nil
}

// RunPruner deletes the tokens revoked or expired for longer than
// retention off the request path, as EventService.RunPruner deletes
// events: a pass at once and then every EventPruneInterval (or retention,
// if shorter), EventPruneBatch rows a statement, until ctx ends; failing
// passes are logged as an outage. retention 0 keeps every token: it
// returns at once.
func (s *TokenService) RunPruner(ctx context.Context, retention time.Duration, logger *slog.Logger) {
	runPruner(ctx, retention, logger, "tokens", func(ctx context.Context) (int, error) {
		return prune.Pass(ctx, EventPruneBatch, eventPrunePause, func(ctx context.Context, limit int) (int, error) {
			return s.PruneTokens(ctx, retention, limit)
		})
	})
}

// FindOwnerTokens returns one page of the owner's tokens, oldest first.
func (s *TokenService) FindOwnerTokens(ctx context.Context, f plantstore.TokenFilter) ([]*plantstore.Token, bool, error) {
	if f.Limit == 0 {
		f.Limit = plantstore.DefaultPageSize
	}
	if f.Limit < 1 || f.Limit > plantstore.MaxPageSize {
		return nil, false, plantstore.Errorf(plantstore.CodeInvalidQuery, "limit must be from 1 to %d", plantstore.MaxPageSize)
	}
	if f.After != nil && !plantstore.ValidTokenID(*f.After) {
		return nil, false, plantstore.Errorf(plantstore.CodeInvalidQuery, "after must be a token id (tok_ and 16 hex digits)")
	}
	want := f.Limit
	f.Limit++
	tokens, err := s.store.ListOwnerTokens(ctx, f)
	if errors.Is(err, plantstore.ErrNotFound) {
		return nil, false, plantstore.Errorf(plantstore.CodeInvalidQuery, "after must be the id of one of the owner's tokens; %s is not", *f.After)
	} else if err != nil {
		return nil, false, storeError("find owner tokens", err)
	}
	if len(tokens) > want {
		return tokens[:want], true, nil
	}
	return tokens, false, nil
}

// FindOwnerToken returns the owner's token id.
func (s *TokenService) FindOwnerToken(ctx context.Context, owner, id string) (*plantstore.Token, error) {
	t, err := s.store.FindOwnerToken(ctx, owner, id)
	if err != nil {
		return nil, tokenError("find owner token", id, err)
	}
	return t, nil
}

// RevokeOwnerToken revokes the owner's token id as of now, unless it is
// revoked already, and forgets it from this process's token cache, so it
// stops working here at once (in other processes within the cache TTL).
func (s *TokenService) RevokeOwnerToken(ctx context.Context, owner, id string) (*plantstore.Token, error) {
	t, err := s.store.RevokeOwnerToken(ctx, owner, id, s.now().UTC())
	if err != nil {
		return nil, tokenError("revoke owner token", id, err)
	}
	s.cache.evict(id)
	return t, nil
}

// tokenError is the error of a token the owner may not have.
func tokenError(op, id string, err error) error {
	if errors.Is(err, plantstore.ErrNotFound) {
		return plantstore.Errorf(plantstore.CodeTokenNotFound, "token %s not found", id)
	}
	return storeError(op, err)
}

// Authenticate returns the active token whose secret this is. A secret that
// cannot be one of ours (plantstore.PlausibleToken) is refused without a
// lookup. A token found active is remembered for the cache TTL, so most
// requests cost no lookup; revocation therefore takes effect within that
// TTL, expiry on every request.
func (s *TokenService) Authenticate(ctx context.Context, secret string) (*plantstore.Token, error) {
	if !plantstore.PlausibleToken(secret) {
		return nil, plantstore.Errorf(plantstore.CodeTokenInvalid, "the bearer token is not valid")
	}
	sum := plantstore.HashToken(secret) // inlined: on the stack, no allocation on a cache hit
	now := s.now()
	if s.ttl > 0 {
		tok := s.cache.get(sum, now)
		if s.onCache != nil {
			s.onCache(tok != nil)
		}
		if tok != nil {
			return tok, nil
		}
	}
	hash := append([]byte(nil), sum...)
	tok, err := s.store.FindTokenByHash(ctx, hash)
	if errors.Is(err, plantstore.ErrNotFound) {
		return nil, plantstore.Errorf(plantstore.CodeTokenInvalid, "the bearer token is not valid")
	} else if err != nil {
		return nil, storeError("find token", err)
	}
	switch tok.Status(now) {
	case "revoked":
		return nil, plantstore.Errorf(plantstore.CodeTokenInvalid, "the bearer token has been revoked")
	case "expired":
		return nil, plantstore.Errorf(plantstore.CodeTokenInvalid, "the bearer token has expired")
	}
	if s.ttl > 0 {
		s.cache.put(hash, tok, now, now.Add(s.ttl))
	}
	return tok, nil
}

// maxCachedTokens bounds the token cache.
const maxCachedTokens = 10000

// tokenCache remembers recently verified tokens by the hash of their
// secret, at most maxCachedTokens. When it is full, put forgets the
// entries past their time (a few seconds: the cache TTL) and, if it is
// still over three quarters full, arbitrary ones down to three quarters,
// so that no caller can empty it: keeping it full needs more than
// maxCachedTokens distinct tokens verified within one cache TTL, ten
// owners at the default cap of live tokens, and even then three quarters
// of the entries stay.
type tokenCache struct {
	mu sync.RWMutex
	m  map[string]cachedToken
}

type cachedToken struct {
	tok   *plantstore.Token
	until time.Time
}

// get returns the token if it is cached, fresh and still active at now.
func (c *tokenCache) get(hash []byte, now time.Time) *plantstore.Token {
	c.mu.RLock()
	e, ok := c.m[string(hash)]
	c.mu.RUnlock()
	if !ok || !now.Before(e.until) || !e.tok.Active(now) {
		return nil
	}
	return e.tok
}

// evict forgets the token id, however it is cached.
func (c *tokenCache) evict(id string) {
	c.mu.Lock()
	for hash, e := range c.m {
		if e.tok.ID == id {
			delete(c.m, hash)
		}
	}
	c.mu.Unlock()
}

// put caches tok under hash until until; now is the time of the lookup.
func (c *tokenCache) put(hash []byte, tok *plantstore.Token, now, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]cachedToken)
	}
	if _, ok := c.m[string(hash)]; !ok && len(c.m) >= maxCachedTokens {
		c.shrink(now)
	}
	c.m[string(hash)] = cachedToken{tok, until}
}

// shrink forgets the entries stale at now and, if over three quarters of
// maxCachedTokens remain, arbitrary ones (map order) down to that.
func (c *tokenCache) shrink(now time.Time) {
	for k, e := range c.m {
		if !now.Before(e.until) || !e.tok.Active(now) {
			delete(c.m, k)
		}
	}
	for k := range c.m {
		if len(c.m) <= maxCachedTokens*3/4 {
			break
		}
		delete(c.m, k)
	}
}

// size returns how many tokens the cache holds.
func (c *tokenCache) size() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
