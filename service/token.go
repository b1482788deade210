package service

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/plantstore/plantstore"
)

// TokenService implements plantstore.TokenService over a TokenStore.
type TokenService struct {
	store   plantstore.TokenStore
	now     func() time.Time
	ttl     time.Duration
	onCache func(hit bool)
	cache   tokenCache
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

// Authenticate returns the active token whose secret this is. A secret that
// cannot be one of ours (plantstore.PlausibleToken) is refused without a
// lookup. A token found active is remembered for the cache TTL, so most
// requests cost no lookup; revocation therefore takes effect within that
// TTL, expiry on every request.
func (s *TokenService) Authenticate(ctx context.Context, secret string) (*plantstore.Token, error) {
	if !plantstore.PlausibleToken(secret) {
		return nil, plantstore.Errorf(plantstore.CodeTokenInvalid, "the bearer token is not valid")
	}
	sum := plantstore.TokenHash(secret) // an array: no allocation on a cache hit
	now := s.now()
	if s.ttl > 0 {
		tok := s.cache.get(sum[:], now)
		if s.onCache != nil {
			s.onCache(tok != nil)
		}
		if tok != nil {
			return tok, nil
		}
	}
	hash := append([]byte(nil), sum[:]...)
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
		s.cache.put(hash, tok, now.Add(s.ttl))
	}
	return tok, nil
}

// maxCachedTokens bounds the token cache; when it is full it starts over.
const maxCachedTokens = 10000

// tokenCache remembers recently verified tokens by the hash of their secret.
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

func (c *tokenCache) put(hash []byte, tok *plantstore.Token, until time.Time) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedTokens {
		c.m = make(map[string]cachedToken)
	}
	c.m[string(hash)] = cachedToken{tok, until}
	c.mu.Unlock()
}
