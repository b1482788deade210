package plantstore

import "context"

type contextKey int

const tokenContextKey contextKey = iota

// NewContextWithToken returns a context carrying the authenticated token.
func NewContextWithToken(ctx context.Context, t *Token) context.Context {
	return context.WithValue(ctx, tokenContextKey, t)
}

// TokenFromContext returns the authenticated token, or nil.
func TokenFromContext(ctx context.Context) *Token {
	t, _ := ctx.Value(tokenContextKey).(*Token)
	return t
}
