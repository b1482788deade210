package http

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/http/oapi"
)

// operationScopes is the scope each operation of the contract needs.
// TestOperationScopes checks that every operation has one.
var operationScopes = map[string]string{
	oapi.AddPlantOperation:    plantstore.ScopePlantsWrite,
	oapi.DeletePlantOperation: plantstore.ScopePlantsWrite,
	oapi.GetPlantOperation:    plantstore.ScopePlantsRead,
	oapi.ListPlantsOperation:  plantstore.ScopePlantsRead,

	oapi.CreateWebhookOperation:         plantstore.ScopeWebhooksManage,
	oapi.ListWebhooksOperation:          plantstore.ScopeWebhooksManage,
	oapi.GetWebhookOperation:            plantstore.ScopeWebhooksManage,
	oapi.DeleteWebhookOperation:         plantstore.ScopeWebhooksManage,
	oapi.RotateWebhookSecretOperation:   plantstore.ScopeWebhooksManage,
	oapi.ListWebhookDeliveriesOperation: plantstore.ScopeWebhooksManage,
}

// HandleBearerAuth implements oapi.SecurityHandler: it resolves the bearer
// token (the generated code has already matched the scheme name,
// case-insensitively), checks the operation's scope and the token's rate
// limit, and attaches the token to the context.
func (h *handler) HandleBearerAuth(ctx context.Context, op oapi.OperationName, t oapi.BearerAuth) (context.Context, error) {
	s := h.s
	secret := strings.TrimSpace(t.Token)
	if secret == "" {
		return nil, plantstore.Errorf(plantstore.CodeTokenMissing, "the bearer token is empty")
	}
	tok, err := s.authenticate(ctx, secret)
	if err != nil {
		return nil, err
	}
	scope, ok := operationScopes[op]
	if !ok {
		return nil, plantstore.Errorf(plantstore.CodeInternal, "Internal error.")
	}
	if !tok.HasScope(scope) {
		return nil, plantstore.Errorf(plantstore.CodeInsufficientScope, "this token lacks the %s scope", scope)
	}
	if err := s.allow(tok); err != nil {
		return nil, err
	}
	setOwner(ctx, tok.Owner)
	return plantstore.NewContextWithToken(ctx, tok), nil
}

// authenticate returns the active token whose secret this is. A token
// found active is remembered for TokenCacheTTL, so most requests cost no
// database lookup; revocation therefore takes effect within that TTL.
func (s *Server) authenticate(ctx context.Context, secret string) (*plantstore.Token, error) {
	if s.JWT != nil && LooksLikeJWT(secret) {
		return s.authenticateJWT(ctx, secret)
	}
	if !plantstore.PlausibleToken(secret) {
		return nil, plantstore.Errorf(plantstore.CodeTokenInvalid, "the bearer token is not valid")
	}
	hash := plantstore.HashToken(secret)
	now := s.Now()
	if tok := s.tokens.get(hash, now); tok != nil {
		s.metrics.tokenCache.WithLabelValues("hit").Inc()
		return tok, nil
	}
	tok, err := s.TokenService.FindTokenByHash(ctx, hash)
	if plantstore.ErrorCode(err) == plantstore.CodeTokenInvalid {
		return nil, plantstore.Errorf(plantstore.CodeTokenInvalid, "the bearer token is not valid")
	} else if err != nil {
		return nil, err
	}
	if s.TokenCacheTTL > 0 {
		s.metrics.tokenCache.WithLabelValues("miss").Inc()
		if tok.Active(now) {
			s.tokens.put(hash, tok, now.Add(s.TokenCacheTTL))
		}
	}
	switch tok.Status(now) {
	case "revoked":
		return nil, plantstore.Errorf(plantstore.CodeTokenInvalid, "the bearer token has been revoked")
	case "expired":
		return nil, plantstore.Errorf(plantstore.CodeTokenInvalid, "the bearer token has expired")
	}
	return tok, nil
}

// authenticateJWT verifies a JWT bearer token with s.JWT. A refusal is
// logged at debug level with its detail (never the token) and answered
// 401 with CodeTokenInvalid.
func (s *Server) authenticateJWT(ctx context.Context, raw string) (*plantstore.Token, error) {
	tok, err := s.JWT.Verify(ctx, raw)
	if err == nil {
		return tok, nil
	}
	var je *jwtError
	if errors.As(err, &je) {
		s.logger().LogAttrs(ctx, slog.LevelDebug, "jwt refused", slog.String("reason", je.detail.Error()))
		return nil, je.public
	}
	return nil, plantstore.Errorf(plantstore.CodeTokenInvalid, "the bearer token is not valid")
}

// allow spends one request from the token's bucket.
func (s *Server) allow(tok *plantstore.Token) error {
	if s.RateLimit <= 0 {
		return nil
	}
	s.limitersMu.Lock()
	l, ok := s.limiters[tok.ID]
	if !ok {
		l = rate.NewLimiter(s.RateLimit, max(1, s.RateBurst))
		s.limiters[tok.ID] = l
	}
	s.limitersMu.Unlock()
	now := s.Now()
	r := l.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		s.metrics.rateLimited.Inc()
		return &rateLimitedError{
			err:        plantstore.Errorf(plantstore.CodeRateLimited, "too many requests for this token: retry later"),
			retryAfter: d,
		}
	}
	return nil
}

// scopeFor returns the scope the request's operation needs, or "".
func (s *Server) scopeFor(r *http.Request) string {
	if s.api == nil {
		return ""
	}
	route, ok := s.api.FindRoute(r.Method, r.URL.Path)
	if !ok {
		return ""
	}
	return operationScopes[route.Name()]
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
