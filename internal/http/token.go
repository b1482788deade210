package http

import (
	"context"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/http/oapi"
)

// The token API: the caller's owner's opaque tokens (scope tokens:manage),
// and GET /me. The rules (what a caller may mint, whose tokens it reaches)
// are the TokenService's; the transport only says who the caller is.

// caller returns the authenticated token as the token rules see it. A
// JWT's ExpiresAt, as the verifier makes it, is its exp plus
// plantstore.JWTLeeway (the clock skew it tolerates); here it is the exp
// itself, so that a token minted by a JWT does not outlive the JWT and
// GET /me answers the JWT's own exp.
func caller(ctx context.Context) *plantstore.Token {
	tok := plantstore.TokenFromContext(ctx)
	if tok == nil || !tok.IsJWT() || tok.ExpiresAt == nil {
		return tok
	}
	c := *tok
	exp := tok.ExpiresAt.Add(-plantstore.JWTLeeway)
	c.ExpiresAt = &exp
	return &c
}

// ListTokens handles the "GET /tokens" route: one keyset page of the
// owner's tokens, oldest first, with a Link header to the next page when
// more follow.
func (h *handler) ListTokens(ctx context.Context, params oapi.ListTokensParams) (oapi.ListTokensRes, error) {
	f := plantstore.TokenFilter{
		Owner: plantstore.TokenFromContext(ctx).Owner,
		Limit: int(params.Limit.Or(plantstore.DefaultPageSize)),
	}
	if after, ok := params.After.Get(); ok {
		f.After = &after
	}
	tokens, more, err := h.s.TokenService.FindOwnerTokens(ctx, f)
	if err != nil {
		return nil, err
	}
	now := h.s.Now()
	res := &oapi.ListTokensOKHeaders{Response: make([]oapi.Token, len(tokens))}
	for i, t := range tokens {
		res.Response[i] = toAPIToken(t, now)
	}
	if more && len(tokens) > 0 {
		res.Link = oapi.NewOptString(pageLink("/tokens", nil, tokens[len(tokens)-1].ID, f.Limit))
	}
	return res, nil
}

// HeadTokens handles the "HEAD /tokens" route: the headers of "GET /tokens"
// (the Link to the next page), without a body.
func (h *handler) HeadTokens(ctx context.Context, params oapi.HeadTokensParams) (oapi.HeadTokensRes, error) {
	res, err := h.ListTokens(ctx, oapi.ListTokensParams(params))
	if err != nil {
		return nil, err
	}
	return &oapi.HeadTokensOK{Link: res.(*oapi.ListTokensOKHeaders).Link}, nil
}

// CreateToken handles the "POST /tokens" route: a new token of the caller's
// owner, within the caller's scopes and expiry, with its secret shown this
// once.
func (h *handler) CreateToken(ctx context.Context, req *oapi.NewToken) (oapi.CreateTokenRes, error) {
	scopes := make([]string, len(req.Scopes))
	for i, s := range req.Scopes {
		scopes[i] = string(s)
	}
	var ttl time.Duration
	if secs, ok := req.TTL.Get(); ok {
		ttl = time.Duration(secs) * time.Second // 1..3155760000 (the contract): no overflow
	}
	tok, secret, err := h.s.TokenService.MintToken(ctx, caller(ctx), scopes, ttl)
	if err != nil {
		return nil, err
	}
	t := toAPIToken(tok, h.s.Now())
	return &oapi.TokenWithSecretHeaders{Response: oapi.TokenWithSecret{
		ID: t.ID, Scopes: t.Scopes, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt, RevokedAt: t.RevokedAt,
		Last4: t.Last4, Status: oapi.TokenWithSecretStatus(t.Status), Secret: secret,
	}}, nil
}

// GetToken handles the "GET /tokens/{id}" route.
func (h *handler) GetToken(ctx context.Context, params oapi.GetTokenParams) (oapi.GetTokenRes, error) {
	tok, err := h.s.TokenService.FindOwnerToken(ctx, plantstore.TokenFromContext(ctx).Owner, params.ID)
	if err != nil {
		return nil, err
	}
	return &oapi.TokenHeaders{Response: toAPIToken(tok, h.s.Now())}, nil
}

// HeadToken handles the "HEAD /tokens/{id}" route.
func (h *handler) HeadToken(ctx context.Context, params oapi.HeadTokenParams) (oapi.HeadTokenRes, error) {
	if _, err := h.s.TokenService.FindOwnerToken(ctx, plantstore.TokenFromContext(ctx).Owner, params.ID); err != nil {
		return nil, err
	}
	return &oapi.HeadTokenOK{}, nil
}

// RevokeToken handles the "DELETE /tokens/{id}" route: the token revoked
// (or as it was, when it already was), answered as it is now.
func (h *handler) RevokeToken(ctx context.Context, params oapi.RevokeTokenParams) (oapi.RevokeTokenRes, error) {
	tok, err := h.s.TokenService.RevokeOwnerToken(ctx, plantstore.TokenFromContext(ctx).Owner, params.ID)
	if err != nil {
		return nil, err
	}
	return &oapi.TokenHeaders{Response: toAPIToken(tok, h.s.Now())}, nil
}

// GetMe handles the "GET /me" route: who the caller is, for any valid token.
func (h *handler) GetMe(ctx context.Context) (oapi.GetMeRes, error) {
	tok := caller(ctx)
	me := oapi.Me{Owner: tok.Owner, Kind: oapi.MeKindToken, Scopes: append([]string{}, tok.Scopes...), ExpiresAt: nilTime(tok.ExpiresAt)}
	if tok.IsJWT() {
		me.Kind = oapi.MeKindJwt
		me.TokenID.SetToNull()
	} else {
		me.TokenID.SetTo(tok.ID)
	}
	return &oapi.MeHeaders{Response: me}, nil
}

// HeadMe handles the "HEAD /me" route.
func (h *handler) HeadMe(ctx context.Context) (oapi.HeadMeRes, error) {
	return &oapi.HeadMeOK{}, nil
}

// toAPIToken maps a token to the contract's Token: never its hash, and
// every member present (null where it does not apply).
func toAPIToken(t *plantstore.Token, now time.Time) oapi.Token {
	out := oapi.Token{
		ID:        t.ID,
		Scopes:    append([]string{}, t.Scopes...),
		CreatedAt: t.CreatedAt.UTC().Truncate(time.Microsecond),
		ExpiresAt: nilTime(t.ExpiresAt),
		RevokedAt: nilTime(t.RevokedAt),
		Status:    oapi.TokenStatus(t.Status(now)),
	}
	if t.Last4 != "" {
		out.Last4.SetTo(t.Last4)
	} else {
		out.Last4.SetToNull()
	}
	return out
}

// nilTime is t as a nullable date-time (to the microsecond, like every time
// the API answers).
func nilTime(t *time.Time) oapi.NilDateTime {
	var out oapi.NilDateTime
	if t == nil {
		out.SetToNull()
	} else {
		out.SetTo(t.UTC().Truncate(time.Microsecond))
	}
	return out
}
