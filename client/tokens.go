package client

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/plantstore/plantstore/client/oapi"
)

// Token is an opaque bearer token of the caller's owner, as the API
// answers it: never its hash, and its secret only from CreateToken.
type Token struct {
	ID        string     `json:"id"` // tok_ and 16 hex digits; not secret
	Scopes    []string   `json:"scopes"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"` // nil: it never expires
	RevokedAt *time.Time `json:"revoked_at"` // nil: not revoked
	// Last4 is the last four characters of the secret, to tell tokens
	// apart; nil for tokens made before the server kept them, and for
	// operator-supplied secrets.
	Last4 *string `json:"last4"`
	// Status is "active", "revoked" or "expired" (as of the answer).
	Status string `json:"status"`
	// Secret is the bearer token itself (pst_...), set only by CreateToken:
	// the server shows it nowhere else.
	Secret string `json:"secret,omitempty"`
}

// NewToken is a token to create.
type NewToken struct {
	// Scopes of the new token (at least one), each one the calling token
	// holds: "plants:read", "plants:write", "webhooks:manage",
	// "tokens:manage".
	Scopes []string
	// TTL is its lifetime, in whole seconds, at most 100 years; 0: it
	// never expires (only a calling token that never expires may ask
	// that). It must end by the calling token's own expiry.
	TTL time.Duration
}

// ListTokensOptions selects a page of tokens. The zero value asks for the
// first page at the server's default page size.
type ListTokensOptions struct {
	Limit int    // page size, 1..1000; 0 for the server's default (100)
	After string // only tokens listed after this one, a token id of the owner (the cursor)
}

// TokenPage is one page of tokens. Next is the query of the following page,
// taken from the answer's Link header; nil on the last page.
type TokenPage struct {
	Tokens []Token
	Next   *ListTokensOptions
}

// Me is the calling token as the server sees it (GET /me).
type Me struct {
	Owner string `json:"owner"`
	// Kind is "token" for an opaque token, "jwt" for a JWT.
	Kind    string   `json:"kind"`
	TokenID string   `json:"token_id,omitempty"` // the opaque token's id; "" for a JWT
	Scopes  []string `json:"scopes"`
	// ExpiresAt is when the token stops working (a JWT's exp); nil: never.
	ExpiresAt *time.Time `json:"expires_at"`
}

// CreateToken creates a token of the calling token's owner and returns it
// with its secret, shown only now. The calling token needs tokens:manage;
// asking for a scope it lacks, or an expiry later than its own, is an
// *Error with Status 403 and Code 40301.
func (c *Client) CreateToken(ctx context.Context, t NewToken) (*Token, error) {
	if t.TTL < 0 || t.TTL%time.Second != 0 {
		return nil, fmt.Errorf("client: create token: TTL %v: want whole seconds, 0 or more", t.TTL)
	}
	req := &oapi.NewToken{Scopes: make([]oapi.Scope, len(t.Scopes))}
	for i, s := range t.Scopes {
		req.Scopes[i] = oapi.Scope(s)
	}
	if t.TTL > 0 {
		req.TTL = oapi.NewOptInt64(int64(t.TTL / time.Second))
	}
	ctx, x := withExchange(ctx)
	res, err := c.api.CreateToken(ctx, req)
	if err != nil {
		return nil, callError("create token", x, err)
	}
	if r, ok := res.(*oapi.TokenWithSecretHeaders); ok {
		w := &r.Response
		out := fromAPIToken(&oapi.Token{ID: w.ID, Scopes: w.Scopes, CreatedAt: w.CreatedAt, ExpiresAt: w.ExpiresAt,
			RevokedAt: w.RevokedAt, Last4: w.Last4, Status: oapi.TokenStatus(w.Status)})
		out.Secret = w.Secret
		return out, nil
	}
	return nil, answerError(x, res)
}

// GetToken returns the token id of the calling token's owner; another
// owner's or an unknown id is an *Error with Code 40405.
func (c *Client) GetToken(ctx context.Context, id string) (*Token, error) {
	ctx, x := withExchange(ctx)
	res, err := c.api.GetToken(ctx, oapi.GetTokenParams{ID: id})
	if err != nil {
		return nil, callError("get token", x, err)
	}
	if r, ok := res.(*oapi.TokenHeaders); ok {
		return fromAPIToken(&r.Response), nil
	}
	return nil, answerError(x, res)
}

// RevokeToken revokes the token id and returns it as revoked; revoking a
// revoked token returns it unchanged. Another owner's or an unknown id is
// an *Error with Code 40405.
func (c *Client) RevokeToken(ctx context.Context, id string) (*Token, error) {
	ctx, x := withExchange(ctx)
	res, err := c.api.RevokeToken(ctx, oapi.RevokeTokenParams{ID: id})
	if err != nil {
		return nil, callError("revoke token", x, err)
	}
	if r, ok := res.(*oapi.TokenHeaders); ok {
		return fromAPIToken(&r.Response), nil
	}
	return nil, answerError(x, res)
}

// ListTokens returns one page of the owner's tokens, oldest first, and the
// query of the next page from the Link header.
func (c *Client) ListTokens(ctx context.Context, opts ListTokensOptions) (*TokenPage, error) {
	ctx, x := withExchange(ctx)
	res, err := c.api.ListTokens(ctx, opts.params())
	if err != nil {
		return nil, callError("list tokens", x, err)
	}
	r, ok := res.(*oapi.ListTokensOKHeaders)
	if !ok {
		return nil, answerError(x, res)
	}
	page := &TokenPage{Tokens: make([]Token, len(r.Response))}
	for i := range r.Response {
		page.Tokens[i] = *fromAPIToken(&r.Response[i])
	}
	if link, has := r.Link.Get(); has {
		q, err := nextQuery(x.url, link)
		if err != nil {
			return nil, fmt.Errorf("client: list tokens: %w", err)
		}
		if q != nil {
			next := &ListTokensOptions{After: q.Get("after")}
			if next.Limit, err = limitParam(q); err != nil {
				return nil, fmt.Errorf("client: list tokens: %w", err)
			}
			page.Next = next
		}
	}
	return page, nil
}

// params are the query parameters of opts (HEAD /tokens takes the same).
func (opts ListTokensOptions) params() oapi.ListTokensParams {
	var params oapi.ListTokensParams
	if opts.Limit != 0 {
		params.Limit = oapi.NewOptInt32(int32(opts.Limit))
	}
	if opts.After != "" {
		params.After = oapi.NewOptString(opts.After)
	}
	return params
}

// Tokens iterates over the owner's tokens from opts.After on, oldest
// first, requesting page after page by following each answer's Link
// rel="next" until there is none; breaking out of the loop stops the
// requests. An error ends the iteration after it is yielded.
func (c *Client) Tokens(ctx context.Context, opts ListTokensOptions) iter.Seq2[Token, error] {
	return paginate(opts, func(o ListTokensOptions) ([]Token, *ListTokensOptions, error) {
		page, err := c.ListTokens(ctx, o)
		if err != nil {
			return nil, nil, err
		}
		// Token ids do not sort by creation: a cursor only has to move.
		if n := page.Next; n != nil && (n.After == "" || n.After == o.After) {
			return nil, nil, errors.New("client: list tokens: next link does not advance past after=" + o.After)
		}
		return page.Tokens, page.Next, nil
	})
}

// Me returns who the calling token is: its owner, scopes, kind, id and
// expiry. Any valid token may ask (no scope is needed).
func (c *Client) Me(ctx context.Context) (*Me, error) {
	ctx, x := withExchange(ctx)
	res, err := c.api.GetMe(ctx)
	if err != nil {
		return nil, callError("get me", x, err)
	}
	r, ok := res.(*oapi.MeHeaders)
	if !ok {
		return nil, answerError(x, res)
	}
	me := &Me{Owner: r.Response.Owner, Kind: string(r.Response.Kind), TokenID: r.Response.TokenID.Or(""),
		Scopes: r.Response.Scopes, ExpiresAt: nilTime(r.Response.ExpiresAt)}
	if me.Scopes == nil {
		me.Scopes = []string{}
	}
	return me, nil
}

// HeadTokens asks for the headers of GET /tokens with opts: the Link to the
// next page, if any, and the rate limit.
func (c *Client) HeadTokens(ctx context.Context, opts ListTokensOptions) (*Head, error) {
	ctx, x := withExchange(ctx)
	res, err := c.api.HeadTokens(ctx, oapi.HeadTokensParams(opts.params()))
	if err != nil {
		return nil, callError("head tokens", x, err)
	}
	if r, ok := res.(*oapi.HeadTokensOK); ok {
		return &Head{Link: r.Link.Or(""), RateLimit: r.RateLimit.Or(""), RateLimitPolicy: r.RateLimitPolicy.Or("")}, nil
	}
	return nil, headError("head tokens", x)
}

// HeadToken asks for the headers of GET /tokens/{id}: whether the owner
// has that token.
func (c *Client) HeadToken(ctx context.Context, id string) (*Head, error) {
	ctx, x := withExchange(ctx)
	res, err := c.api.HeadToken(ctx, oapi.HeadTokenParams{ID: id})
	if err != nil {
		return nil, callError("head token", x, err)
	}
	if r, ok := res.(*oapi.HeadTokenOK); ok {
		return &Head{RateLimit: r.RateLimit.Or(""), RateLimitPolicy: r.RateLimitPolicy.Or("")}, nil
	}
	return nil, headError("head token", x)
}

// HeadMe asks for the headers of GET /me: whether the token is valid, and
// its rate limit.
func (c *Client) HeadMe(ctx context.Context) (*Head, error) {
	ctx, x := withExchange(ctx)
	res, err := c.api.HeadMe(ctx)
	if err != nil {
		return nil, callError("head me", x, err)
	}
	if r, ok := res.(*oapi.HeadMeOK); ok {
		return &Head{RateLimit: r.RateLimit.Or(""), RateLimitPolicy: r.RateLimitPolicy.Or("")}, nil
	}
	return nil, headError("head me", x)
}

func fromAPIToken(t *oapi.Token) *Token {
	out := &Token{
		ID:        t.ID,
		Scopes:    t.Scopes,
		CreatedAt: t.CreatedAt,
		ExpiresAt: nilTime(t.ExpiresAt),
		RevokedAt: nilTime(t.RevokedAt),
		Status:    string(t.Status),
	}
	if out.Scopes == nil {
		out.Scopes = []string{}
	}
	if v, ok := t.Last4.Get(); ok {
		out.Last4 = &v
	}
	return out
}

// nilTime is a nullable date-time as a pointer (nil for null).
func nilTime(t oapi.NilDateTime) *time.Time {
	if v, ok := t.Get(); ok {
		return &v
	}
	return nil
}
